/**
 * The codebase summary behind `describe_context`: languages by file count (the workspace file
 * walker, which honours .gitignore and skips .git/ and svc's data dir), the top-level layout,
 * package manifests, and the test/lint/build commands the manifests declare.
 * @module
 */
import { statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { readRegularFile } from '../workspace/file-io';
import type { SearchOps } from '../workspace/search';
import { DATA_LANGUAGES, languageCounts } from './languages';

/** Most files the walker lists; the summary says when it stopped there. */
export const MAX_WALKED_FILES = 50_000;
const MAX_TOP_LEVEL = 40;
const MAX_MANIFEST_BYTES = 256 * 1024;

export type CommandKind = 'test' | 'lint' | 'build' | 'typecheck' | 'format';

export interface DetectedCommand {
  command: string;
  /** Where it was found: `package.json scripts.test`, `Makefile target test`, `Cargo.toml`. */
  source: string;
}

export interface CodebaseSummary {
  files: { total: number; truncated: boolean };
  languages: { language: string; files: number }[];
  /** The code language with the most files (markup and data formats aside). */
  primary_language: string | null;
  top_level: { name: string; type: 'dir' | 'file'; files: number }[];
  top_level_more: number;
  manifests: { path: string; kind: string }[];
  commands: Record<CommandKind, DetectedCommand[]>;
}

const MANIFESTS: Record<string, string> = {
  'package.json': 'npm',
  'deno.json': 'deno',
  'deno.jsonc': 'deno',
  'pyproject.toml': 'python',
  'setup.py': 'python',
  'setup.cfg': 'python',
  'requirements.txt': 'python',
  Pipfile: 'python',
  'Cargo.toml': 'cargo',
  'go.mod': 'go',
  'pom.xml': 'maven',
  'build.gradle': 'gradle',
  'build.gradle.kts': 'gradle',
  Gemfile: 'bundler',
  'composer.json': 'composer',
  'mix.exs': 'mix',
  'pubspec.yaml': 'dart',
  Makefile: 'make',
  'CMakeLists.txt': 'cmake',
  justfile: 'just',
  Justfile: 'just',
};

/** The workspace walker (.gitignore honoured, .git/ and svc's data dir skipped) and its root. */
export interface WorkspaceFiles {
  readonly root: string;
  readonly search: Pick<SearchOps, 'files'>;
}

/** Walk the workspace and summarize it. */
export async function computeCodebaseSummary(
  ws: WorkspaceFiles,
  signal?: AbortSignal,
): Promise<CodebaseSummary> {
  const listing = await ws.search.files({ limit: MAX_WALKED_FILES }, { tool: 'describe_context', signal });
  return summarizeFiles(ws.root, listing.files, listing.truncated);
}

export function summarizeFiles(root: string, files: readonly string[], truncated: boolean): CodebaseSummary {
  const languages = languageCounts(files);
  const primary = languages.find((l) => l.language !== 'other' && !DATA_LANGUAGES.has(l.language));

  const top = new Map<string, { type: 'dir' | 'file'; files: number }>();
  for (const file of files) {
    const cut = file.indexOf('/');
    const name = cut === -1 ? file : file.slice(0, cut);
    const entry = top.get(name) ?? { type: cut === -1 ? 'file' : 'dir', files: 0 };
    top.set(name, entry);
    entry.files++;
  }
  const layout = [...top.entries()]
    .map(([name, e]) => ({ name: e.type === 'dir' ? `${name}/` : name, type: e.type, files: e.files }))
    .sort((a, b) =>
      a.type === b.type ? b.files - a.files || a.name.localeCompare(b.name) : a.type === 'dir' ? -1 : 1,
    );

  const manifests = files
    .filter((f) => f.split('/').length <= 3 && (MANIFESTS[basename(f)] || /\.(csproj|sln|fsproj)$/.test(f)))
    .map((f) => ({ path: f, kind: MANIFESTS[basename(f)] ?? 'dotnet' }))
    .sort((a, b) => a.path.split('/').length - b.path.split('/').length || a.path.localeCompare(b.path));

  return {
    files: { total: files.length, truncated },
    languages,
    primary_language: primary?.language ?? null,
    top_level: layout.slice(0, MAX_TOP_LEVEL),
    top_level_more: Math.max(0, layout.length - MAX_TOP_LEVEL),
    manifests,
    commands: detectCommands(root, new Set(files)),
  };
}

function readText(root: string, rel: string): string | undefined {
  try {
    const abs = join(root, rel);
    if (statSync(abs).size > MAX_MANIFEST_BYTES) return undefined;
    return readRegularFile(abs).toString('utf8');
  } catch {
    return undefined;
  }
}

/** Commands declared at the workspace root, by kind, in a fixed manifest order. */
export function detectCommands(
  root: string,
  files: ReadonlySet<string>,
): Record<CommandKind, DetectedCommand[]> {
  const out: Record<CommandKind, DetectedCommand[]> = {
    test: [],
    lint: [],
    build: [],
    typecheck: [],
    format: [],
  };
  const add = (kind: CommandKind, command: string, source: string) => {
    if (!out[kind].some((c) => c.command === command)) out[kind].push({ command, source });
  };

  if (files.has('package.json')) {
    const text = readText(root, 'package.json');
    let scripts: Record<string, unknown> = {};
    try {
      const parsed = JSON.parse(text ?? '{}') as { scripts?: unknown };
      if (parsed.scripts && typeof parsed.scripts === 'object')
        scripts = parsed.scripts as Record<string, unknown>;
    } catch {
      // a broken package.json declares nothing
    }
    const pm = files.has('pnpm-lock.yaml')
      ? 'pnpm'
      : files.has('yarn.lock')
        ? 'yarn'
        : files.has('bun.lockb') || files.has('bun.lock')
          ? 'bun'
          : 'npm';
    for (const name of Object.keys(scripts).sort()) {
      if (typeof scripts[name] !== 'string') continue;
      const kind = scriptKind(name);
      if (!kind) continue;
      const command = name === 'test' && pm !== 'bun' ? `${pm} test` : `${pm} run ${name}`;
      add(kind, command, `package.json scripts.${name}`);
    }
  }
  for (const makefile of ['Makefile', 'GNUmakefile']) {
    if (!files.has(makefile)) continue;
    const targets = new Set(
      [...(readText(root, makefile) ?? '').matchAll(/^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:(?!=)/gm)].map(
        (m) => m[1],
      ),
    );
    for (const target of [...targets].sort()) {
      const kind = scriptKind(target);
      if (kind) add(kind, `make ${target}`, `${makefile} target ${target}`);
    }
  }
  for (const justfile of ['justfile', 'Justfile']) {
    if (!files.has(justfile)) continue;
    const recipes = [
      ...(readText(root, justfile) ?? '').matchAll(/^([A-Za-z0-9][A-Za-z0-9_-]*)[^\n:=]*:(?!=)/gm),
    ].map((m) => m[1]);
    for (const recipe of [...new Set(recipes)].sort()) {
      const kind = scriptKind(recipe);
      if (kind) add(kind, `just ${recipe}`, `${justfile} recipe ${recipe}`);
    }
  }
  if (files.has('Cargo.toml')) {
    add('test', 'cargo test', 'Cargo.toml');
    add('lint', 'cargo clippy', 'Cargo.toml');
    add('build', 'cargo build', 'Cargo.toml');
    add('format', 'cargo fmt', 'Cargo.toml');
  }
  if (files.has('go.mod')) {
    add('test', 'go test ./...', 'go.mod');
    add('lint', 'go vet ./...', 'go.mod');
    add('build', 'go build ./...', 'go.mod');
    add('format', 'gofmt -l .', 'go.mod');
  }
  if (files.has('pyproject.toml')) {
    const text = readText(root, 'pyproject.toml') ?? '';
    const hasTests = [...files].some((f) => /^tests?\//.test(f) || /(^|\/)test_[^/]*\.py$/.test(f));
    if (/\[tool\.pytest|pytest/.test(text) || hasTests) add('test', 'pytest', 'pyproject.toml');
    if (/\[tool\.ruff/.test(text)) {
      add('lint', 'ruff check .', 'pyproject.toml [tool.ruff]');
      add('format', 'ruff format .', 'pyproject.toml [tool.ruff]');
    }
    if (/\[tool\.mypy/.test(text)) add('typecheck', 'mypy .', 'pyproject.toml [tool.mypy]');
    if (/\[build-system\]/.test(text)) add('build', 'python -m build', 'pyproject.toml [build-system]');
  }
  if (files.has('deno.json') || files.has('deno.jsonc')) {
    const source = files.has('deno.json') ? 'deno.json' : 'deno.jsonc';
    add('test', 'deno test', source);
    add('lint', 'deno lint', source);
    add('format', 'deno fmt', source);
  }
  return out;
}

function scriptKind(name: string): CommandKind | undefined {
  const base = name.split(/[:.]/)[0];
  if (base === 'test' || base === 'tests' || base === 'check' || base === 'e2e') return 'test';
  if (base === 'lint') return 'lint';
  if (base === 'build' || base === 'compile') return 'build';
  if (['typecheck', 'type-check', 'types', 'tsc', 'check-types'].includes(base)) return 'typecheck';
  if (base === 'format' || base === 'fmt') return 'format';
  return undefined;
}

/** A few lines for the system prompt (cheap: the cached summary, never a new walk). */
export function summaryPromptText(summary: CodebaseSummary, computedAt: number): string {
  const lines = [
    `# Codebase summary (cached ${new Date(computedAt).toISOString().slice(0, 16).replace('T', ' ')} UTC; describe_context refreshes it)`,
  ];
  const langs = summary.languages
    .filter((l) => l.language !== 'other')
    .slice(0, 6)
    .map((l) => `${l.language} ${l.files}`);
  lines.push(
    `Files: ${summary.files.total}${summary.files.truncated ? '+' : ''}${langs.length ? `; languages: ${langs.join(', ')}` : ''}`,
  );
  if (summary.top_level.length)
    lines.push(
      `Top level: ${summary.top_level
        .slice(0, 12)
        .map((t) => (t.type === 'dir' ? `${t.name} (${t.files})` : t.name))
        .join(', ')}${summary.top_level.length > 12 || summary.top_level_more ? ', …' : ''}`,
    );
  if (summary.manifests.length)
    lines.push(
      `Manifests: ${summary.manifests
        .slice(0, 8)
        .map((m) => m.path)
        .join(', ')}`,
    );
  const commands = (Object.entries(summary.commands) as [CommandKind, DetectedCommand[]][])
    .filter(([, list]) => list.length)
    .map(([kind, list]) => `${kind} \`${list[0].command}\``);
  if (commands.length) lines.push(`Commands: ${commands.join('; ')}`);
  return lines.join('\n');
}
