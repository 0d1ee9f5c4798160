/**
 * analyze_ripple_impact: what depends on a change. Given changed files (or, by default, the
 * working tree's changes from git) and symbols, it finds the files that import the changed files
 * (resolved import specifiers for TypeScript/JavaScript and Python, transitively up to `depth`),
 * the references of the symbols (ripgrep narrows, tree-sitter confirms identifiers, so strings and
 * comments do not count), the tests that cover them (importers that are tests, tests named after
 * a changed file, tests referencing a symbol), and risk notes computed from those facts.
 * @module
 */
import { existsSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, posix } from 'node:path';
import type { Config } from '../config/schema';
import { readRegularFile } from '../workspace/file-io';
import { configuredGitLimit, createGitRunner } from '../workspace/git';
import {
  breathe,
  fileSymbols,
  identifierRanges,
  languageFor,
  type SkippedFile,
  skippedBy,
} from '../workspace/symbols';
import type { Workspace } from '../workspace/workspace';

const CODE_GLOB = '*.{ts,tsx,mts,cts,js,jsx,mjs,cjs,py,go,rs,java,rb,php,cs,cpp,cc,h,hpp}';
const JS_EXT = ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'];
const MAX_READ_BYTES = 1024 * 1024;
const FAN_IN_HIGH = 5;
const REFERENCES_HIGH = 10;

/** What the analysis reads: the workspace (paths, search), its git repository and data dir. */
export interface RippleDeps {
  readonly workspace: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The current config: git's memory limit (options.git.memory_limit_mb). */
  readonly config: Pick<Config, 'options'>;
  readonly dataDir: string;
  readonly ws: Pick<Workspace, 'paths' | 'search'>;
}

export interface RippleInput {
  files?: string[];
  symbols?: string[];
  depth: number;
  max_results: number;
}

interface Dependent {
  path: string;
  depth: number;
  /** The changed file it leads to. */
  changed: string;
  /** The file it imports on the way (the changed file itself at depth 1). */
  imports: string;
  specifier: string;
  is_test: boolean;
}

interface Note {
  severity: 'high' | 'medium' | 'low';
  message: string;
}

/** `skipped`: files the symbol parser left out (too large, minified), listed in the result. */
type Op = { tool: string; signal: AbortSignal; skipped: SkippedFile[] };
type SymbolHits = { symbol: string; name: string } & Awaited<ReturnType<typeof references>>;
type ChangedFile = Awaited<ReturnType<typeof describeChanged>>[number];

export async function analyzeRipple(deps: RippleDeps, input: RippleInput, signal: AbortSignal) {
  const op: Op = { tool: 'analyze_ripple_impact', signal, skipped: [] };
  let source: 'input' | 'git' = 'input';
  let changedPaths = (input.files ?? []).map((f) => deps.ws.paths.resolve(f, 'files').rel);
  if (!input.files?.length && !input.symbols?.length) {
    source = 'git';
    changedPaths = await gitChanges(deps);
  }
  const found = await findDependents(deps, changedPaths, input, op);
  const dependents = found.dependents;
  let truncated = found.truncated;

  // Symbols: the given ones, plus what the changed files export (looked up in their importers).
  const symbols: SymbolHits[] = [];
  for (const symbol of input.symbols ?? []) {
    const name = symbolName(symbol);
    const hits = await references(deps, name, undefined, op);
    if (hits.truncated) truncated = true;
    symbols.push({ symbol, name, ...hits });
  }
  const changed = await describeChanged(deps, changedPaths, dependents, op);
  const tests = await coveringTests(deps, changedPaths, dependents, symbols, op);
  const notes = riskNotes(deps, changed, tests, symbols, dependents);
  const weight = { high: 3, medium: 2, low: 1 } as const;
  const score = notes.reduce((n, note) => n + weight[note.severity], 0);
  const testPaths = [...tests.keys()].sort();
  return {
    source,
    changed,
    dependents: [...dependents.values()].sort((a, b) => a.depth - b.depth || a.path.localeCompare(b.path)),
    symbols,
    tests: testPaths.map((path) => ({ path, reasons: [...tests.get(path)!] })),
    risk: {
      level: notes.some((n) => n.severity === 'high') || score >= 6 ? 'high' : score >= 3 ? 'medium' : 'low',
      score,
      notes,
    },
    test_commands: testCommands(deps, testPaths),
    truncated,
    ...(op.skipped.length ? { skipped: op.skipped } : {}),
  };
}

/** Importers, breadth-first from the changed files, up to `depth` and `max_results`. */
async function findDependents(deps: RippleDeps, changedPaths: string[], input: RippleInput, op: Op) {
  let truncated = false;
  const dependents = new Map<string, Dependent>();
  const changedSet = new Set(changedPaths);
  let frontier = changedPaths.map((path) => ({ path, changed: path }));
  for (let depth = 1; depth <= input.depth && frontier.length; depth++) {
    const next: typeof frontier = [];
    for (const target of frontier) {
      for (const hit of await importersOf(deps, target.path, op)) {
        if (changedSet.has(hit.path) || dependents.has(hit.path)) continue;
        if (dependents.size >= input.max_results) {
          truncated = true;
          break;
        }
        dependents.set(hit.path, {
          path: hit.path,
          depth,
          changed: target.changed,
          imports: target.path,
          specifier: hit.specifier,
          is_test: isTest(hit.path),
        });
        next.push({ path: hit.path, changed: target.changed });
      }
    }
    frontier = next;
  }
  return { dependents, truncated };
}

/** Each changed file: whether it exists, what it exports, which direct importers use what. */
async function describeChanged(
  deps: RippleDeps,
  changedPaths: string[],
  dependents: Map<string, Dependent>,
  op: Op,
) {
  const changed = [];
  for (const path of changedPaths) {
    const abs = join(deps.ws.paths.root, path);
    const exists = existsSync(abs) && statSync(abs).isFile();
    const text = exists ? readText(abs) : undefined;
    const exported =
      text !== undefined && languageFor(path)
        ? (await bounded(op, [], () => fileSymbols(path, text))).filter((s) => s.depth === 0).slice(0, 30)
        : [];
    const importers = [...dependents.values()].filter((d) => d.depth === 1 && d.imports === path);
    const used = [];
    for (const importer of importers) {
      const importerText = readText(join(deps.ws.paths.root, importer.path));
      if (importerText === undefined) continue;
      const names = [];
      for (const symbol of exported) {
        if ((await bounded(op, [], () => identifierRanges(importer.path, importerText, symbol.name))).length)
          names.push(symbol.name);
      }
      used.push({ path: importer.path, symbols: names });
    }
    changed.push({
      path,
      exists,
      language: languageFor(path) ?? null,
      is_test: isTest(path),
      exported_symbols: exported.map((s) => ({ name: s.name, kind: s.kind, line: s.start_line })),
      importers: importers.length,
      used_by: used,
    });
  }
  return changed;
}

/** Tests: importers that are tests, tests named after a changed file, tests using a symbol. */
async function coveringTests(
  deps: RippleDeps,
  changedPaths: string[],
  dependents: Map<string, Dependent>,
  symbols: SymbolHits[],
  op: Op,
) {
  const tests = new Map<string, Set<string>>();
  const addTest = (path: string, reason: string) =>
    tests.set(path, (tests.get(path) ?? new Set()).add(reason));
  for (const dependent of dependents.values()) {
    if (dependent.is_test)
      addTest(
        dependent.path,
        `imports ${dependent.imports}${dependent.depth > 1 ? ` (reaches ${dependent.changed})` : ''}`,
      );
  }
  const stems = new Map(changedPaths.filter((p) => !isTest(p)).map((p) => [stemOf(p), p]));
  if (stems.size) {
    const all = await deps.ws.search.files({ globs: [CODE_GLOB], limit: 20_000 }, op);
    for (const file of all.files.filter(isTest)) {
      const stem = testStem(file);
      if (stem && stems.has(stem)) addTest(file, `named after ${stems.get(stem)}`);
    }
  }
  for (const symbol of symbols) {
    for (const ref of symbol.references) if (isTest(ref.path)) addTest(ref.path, `references ${symbol.name}`);
  }
  return tests;
}

/** Risk notes from the facts gathered. */
function riskNotes(
  deps: RippleDeps,
  changed: ChangedFile[],
  tests: Map<string, Set<string>>,
  symbols: SymbolHits[],
  dependents: Map<string, Dependent>,
): Note[] {
  const notes: Note[] = [];
  for (const item of changed) {
    const covering = [...tests.entries()].filter(([, reasons]) =>
      [...reasons].some((r) => r.includes(item.path)),
    );
    if (!item.exists) {
      if (item.importers > 0)
        notes.push({
          severity: 'high',
          message: `${item.path} is deleted but ${item.importers} file(s) still import it`,
        });
      continue;
    }
    if (item.is_test)
      notes.push({
        severity: 'low',
        message: `${item.path} is a test: check it still asserts the behaviour it did`,
      });
    else if (covering.length === 0)
      notes.push({
        severity: 'medium',
        message: `no test covers ${item.path} (none imports it or is named after it)`,
      });
    if (item.importers >= FAN_IN_HIGH)
      notes.push({
        severity: 'high',
        message: `${item.path} has high fan-in: ${item.importers} files import it`,
      });
    if (/(^|\/)(migrations?|schema)(\/|\.|$)|(^|\/)schema\.[a-z]+$/i.test(item.path)) {
      notes.push({
        severity: 'high',
        message: `${item.path} is a schema or migration: check compatibility with existing data`,
      });
    }
    if (
      /(^|\/)(package\.json|tsconfig[^/]*\.json|pyproject\.toml|go\.mod|Cargo\.toml|svc\.toml)$/.test(
        item.path,
      )
    ) {
      notes.push({
        severity: 'medium',
        message: `${item.path} is project configuration: it affects every build and test`,
      });
    }
    if (isEntryPoint(deps, item.path))
      notes.push({
        severity: 'medium',
        message: `${item.path} is a package entry point: changes reach outside consumers`,
      });
  }
  for (const symbol of symbols) {
    if (symbol.files >= REFERENCES_HIGH) {
      notes.push({ severity: 'high', message: `${symbol.name} is referenced in ${symbol.files} files` });
    }
    if (symbol.definitions.length === 0)
      notes.push({
        severity: 'low',
        message: `no definition of ${symbol.name} found (tree-sitter languages only)`,
      });
  }
  const transitive = [...dependents.values()].filter((d) => d.depth > 1).length;
  if (transitive > 0)
    notes.push({
      severity: 'low',
      message: `${transitive} file(s) depend on the change indirectly (depth 2+)`,
    });
  return notes;
}

async function gitChanges(deps: RippleDeps): Promise<string[]> {
  const git = createGitRunner(
    deps.workspace,
    deps.env,
    configuredGitLimit(() => deps.config),
  );
  const head = await git.run(['rev-parse', '--verify', '--quiet', 'HEAD'], { allowFail: true });
  const tracked =
    head.code === 0
      ? await git.run(['diff', '--name-only', '--relative', 'HEAD'], { allowFail: true })
      : { stdout: '', code: 1 };
  const untracked = await git.run(['ls-files', '--others', '--exclude-standard'], { allowFail: true });
  const data = posix.normalize(deps.ws.paths.display(deps.dataDir));
  return [
    ...new Set(
      [...tracked.stdout.split('\n'), ...untracked.stdout.split('\n')].map((l) => l.trim()).filter(Boolean),
    ),
  ]
    .filter((p) => !(data && !data.startsWith('/') && (p === data || p.startsWith(`${data}/`))))
    .sort();
}

/** Files whose import statements resolve to `target`. */
async function importersOf(deps: RippleDeps, target: string, op: { tool: string; signal: AbortSignal }) {
  const stem = stemOf(target);
  if (!stem) return [];
  // An index file is imported by its directory or as `./dir/index`.
  const file = basename(target, extname(target));
  const name = [...new Set([stem, file])].map(escapeRegex).join('|');
  const pattern = `(from|import|require|export)[^\\n]*['"][^'"]*\\b(${name})(\\.[A-Za-z]+)?['"]|^\\s*(from|import)\\s+[^\\n]*\\b(${name})\\b`;
  const result = await deps.ws.search.grep(
    { pattern, glob: CODE_GLOB, output_mode: 'files', limit: 2000 },
    op,
  );
  const out: { path: string; specifier: string }[] = [];
  for (const path of result.files ?? []) {
    if (path === target) continue;
    const text = readText(join(deps.ws.paths.root, path));
    if (text === undefined) continue;
    const specifier = specifiersOf(path, text).find((spec) => resolvesTo(path, spec, target));
    if (specifier) out.push({ path, specifier });
  }
  return out;
}

function specifiersOf(path: string, text: string): string[] {
  if (path.endsWith('.py')) {
    const specs: string[] = [];
    for (const m of text.matchAll(/^\s*from\s+([.\w]+)\s+import\s+([\w*, ()]+)/gm)) {
      specs.push(m[1]);
      for (const name of m[2].replace(/[()]/g, '').split(','))
        specs.push(`${m[1]}${m[1].endsWith('.') ? '' : '.'}${name.trim().split(/\s+/)[0]}`);
    }
    for (const m of text.matchAll(/^\s*import\s+([\w.]+)/gm)) specs.push(m[1]);
    return specs;
  }
  return [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"]([^'"\n]+)['"]/g)].map(
    (m) => m[1],
  );
}

function resolvesTo(importer: string, specifier: string, target: string): boolean {
  if (importer.endsWith('.py')) {
    const leading = /^\.+/.exec(specifier)?.[0].length ?? 0;
    const rest = specifier.slice(leading).replace(/\./g, '/');
    const base = leading ? posix.join(posix.dirname(importer), ...Array(leading - 1).fill('..'), rest) : rest;
    const module = target.replace(/\.py$/, '').replace(/\/__init__$/, '');
    return leading ? posix.normalize(base) === module : module === base || module.endsWith(`/${base}`);
  }
  if (!specifier.startsWith('.')) return false;
  const base = posix.normalize(posix.join(posix.dirname(importer), specifier));
  const candidates = [base, ...JS_EXT.map((e) => base + e), ...JS_EXT.map((e) => `${base}/index${e}`)];
  // ESM TypeScript imports name the emitted .js file.
  const swapped = base.replace(/\.(m|c)?js$/, (_, k = '') => `.${k}ts`);
  if (swapped !== base) candidates.push(swapped, swapped.replace(/\.ts$/, '.tsx'));
  return candidates.includes(target);
}

async function references(deps: RippleDeps, name: string, scope: string | undefined, op: Op) {
  const result = await deps.ws.search.grep(
    {
      pattern: `\\b${escapeRegex(name)}\\b`,
      glob: CODE_GLOB,
      output_mode: 'files',
      limit: 500,
      ...(scope ? { path: scope } : {}),
    },
    op,
  );
  const refs: { path: string; count: number; lines: number[] }[] = [];
  const definitions: { path: string; line: number; kind: string }[] = [];
  for (const path of result.files ?? []) {
    const text = readText(join(deps.ws.paths.root, path));
    if (text === undefined) continue;
    const ranges = await bounded(op, [], () => identifierRanges(path, text, name));
    const symbols = (await bounded(op, [], () => fileSymbols(path, text))).filter((s) => s.name === name);
    definitions.push(...symbols.map((s) => ({ path, line: s.start_line, kind: s.kind })));
    // Not a tree-sitter language: count the plain word matches.
    const count = languageFor(path)
      ? ranges.length - symbols.length
      : (text.match(new RegExp(`\\b${escapeRegex(name)}\\b`, 'g'))?.length ?? 0);
    if (count <= 0) continue;
    const lines = ranges.slice(0, 5).map(([start]) => text.slice(0, start).split('\n').length);
    refs.push({ path, count, lines });
  }
  return { definitions, references: refs, files: refs.length, truncated: result.truncated };
}

const symbolName = (symbol: string) => {
  const namePath = symbol.includes('::') ? (symbol.split('::')[1] ?? symbol) : symbol;
  return namePath.split(/[./]/).filter(Boolean).at(-1) ?? namePath;
};

function stemOf(path: string): string {
  const file = basename(path, extname(path));
  if (file === 'index' || file === '__init__') return basename(dirname(path));
  return file;
}

function testStem(path: string): string | undefined {
  const file = basename(path);
  return (
    /^(.+?)\.(test|spec)\.[cm]?[jt]sx?$/.exec(file)?.[1] ??
    /^test_(.+)\.py$/.exec(file)?.[1] ??
    /^(.+)_test\.(py|go)$/.exec(file)?.[1] ??
    /^(.+)Test\.(java|kt)$/.exec(file)?.[1]
  );
}

export function isTest(path: string): boolean {
  return testStem(path) !== undefined || /(^|\/)(test|tests|__tests__|spec)\//.test(path);
}

function isEntryPoint(deps: RippleDeps, path: string): boolean {
  if (/(^|\/)src\/index\.[cm]?[jt]sx?$|^index\.[cm]?[jt]sx?$/.test(path)) return true;
  const text = readText(join(deps.ws.paths.root, 'package.json'));
  if (!text) return false;
  try {
    const pkg = JSON.parse(text) as Record<string, unknown>;
    const named = JSON.stringify([pkg.main, pkg.module, pkg.exports, pkg.bin]);
    const bare = path.replace(/\.[cm]?tsx?$/, '');
    return (
      named.includes(`"./${path}"`) ||
      named.includes(`"${path}"`) ||
      (bare !== path && named.includes(bare.replace(/^src\//, '')))
    );
  } catch {
    return false;
  }
}

function testCommands(deps: RippleDeps, tests: string[]): string[] {
  if (tests.length === 0) return [];
  const commands: string[] = [];
  const js = tests.filter((t) => /\.[cm]?[jt]sx?$/.test(t));
  if (js.length) {
    const pkg = readText(join(deps.ws.paths.root, 'package.json')) ?? '';
    const runner = pkg.includes('"vitest"')
      ? 'npx vitest run'
      : pkg.includes('"jest"')
        ? 'npx jest'
        : pkg.includes('"mocha"')
          ? 'npx mocha'
          : 'npm test --';
    commands.push(`${runner} ${js.join(' ')}`);
  }
  const py = tests.filter((t) => t.endsWith('.py'));
  if (py.length) commands.push(`pytest ${py.join(' ')}`);
  const go = [...new Set(tests.filter((t) => t.endsWith('_test.go')).map((t) => `./${posix.dirname(t)}`))];
  if (go.length) commands.push(`go test ${go.join(' ')}`);
  return commands;
}

/** A parse within the symbol parser's bounds, after a turn of the event loop; a skip is recorded. */
async function bounded<T>(op: Op, empty: T, parse: () => Promise<T>): Promise<T> {
  await breathe();
  op.signal.throwIfAborted();
  try {
    return await parse();
  } catch (error) {
    const skip = skippedBy(error);
    if (!skip) throw error;
    if (!op.skipped.some((s) => s.path === skip.path)) op.skipped.push(skip);
    return empty;
  }
}

/**
 * A workspace file's text, undefined when it is missing, larger than `MAX_READ_BYTES` or not a
 * regular file. Checked on the opened file, not by a stat before: a command in the workspace may
 * put a FIFO (whose read waits for a writer, and the whole process with it) or a huge file in its
 * place between the two (`readRegularFile`: non-blocking open, fstat, bounded read).
 */
function readText(abs: string): string | undefined {
  try {
    const buffer = readRegularFile(abs, MAX_READ_BYTES + 1);
    return buffer.length > MAX_READ_BYTES ? undefined : buffer.toString('utf8');
  } catch {
    return undefined;
  }
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
