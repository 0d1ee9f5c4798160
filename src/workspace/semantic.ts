/**
 * Semantic code operations: `search` modes symbol-overview, symbol-lookup, symbol-references and
 * symbol-definition, and the structural `edit` modes (rename a symbol across files, replace its
 * definition, insert before or after it). Symbols are found with tree-sitter (semantic-find.ts);
 * rename, references and definition ask the file's language server when one handles it
 * (semantic-lsp.ts) and fall back to tree-sitter by name, saying so (`engine`, `note`). Every
 * change goes through the change committer: one approval with the diff of every file, then
 * history and file.changed for each.
 * @module
 */
import { SvcError } from '../errors';
import type { OpContext } from './context';
import type { ChangeCommitter, PendingChange } from './file-changes';
import type { LanguageServers } from './lsp';
import type { PathResolver } from './paths';
import type { SearchOps } from './search';
import {
  createSymbolFinder,
  type FoundSymbol,
  SEMANTIC_LIMITS,
  type SymbolFinder,
  strip,
} from './semantic-find';
import { applyTextEdits, checkRenameEdits, lspRename, type SemanticEngine } from './semantic-lsp';
import {
  type DefinitionInput,
  type DefinitionResult,
  definition,
  nameOffset,
  type ReferencesInput,
  type ReferencesResult,
  references,
  relatedFiles,
  TREE_SITTER_NOTE,
} from './semantic-navigate';
import {
  breathe,
  identifierRanges,
  type LocatedSymbol,
  languageFor,
  type SkippedFile,
  SYMBOL_EXTENSIONS,
  type SymbolInfo,
  skippedBy,
} from './symbols';

export { SEMANTIC_LIMITS } from './semantic-find';
export type { CodeLocation, SemanticEngine } from './semantic-lsp';
export type {
  DefinitionInput,
  DefinitionResult,
  ReferencesInput,
  ReferencesResult,
} from './semantic-navigate';
export { TREE_SITTER_NOTE } from './semantic-navigate';

export type StructuralMode =
  | 'rename_symbol'
  | 'replace_symbol_body'
  | 'insert_before_symbol'
  | 'insert_after_symbol';

export interface OverviewResult {
  path: string;
  files: { path: string; symbols: SymbolInfo[] }[];
  symbols: number;
  truncated: boolean;
  /** Files not parsed (too large, a line too long, over the time budget), and why. */
  skipped?: SkippedFile[];
}

export interface LookupResult {
  symbols: (SymbolInfo & { body?: string })[];
  truncated: boolean;
  /** Files not parsed (too large, a line too long, over the time budget), and why. */
  skipped?: SkippedFile[];
}

export interface StructuralEditResult {
  mode: StructuralMode;
  symbol: SymbolInfo;
  files: { path: string; additions: number; deletions: number; history_id: number }[];
  /** Identifiers renamed (rename_symbol). */
  replacements?: number;
  /** rename_symbol: "lsp" when the language server computed the edits, else "tree-sitter". */
  engine?: SemanticEngine;
  /** rename_symbol with engine lsp: the server's id. */
  server?: string;
  /** rename_symbol with engine tree-sitter: what may be wrong or missed, and why no server answered. */
  note?: string;
  diff: string;
}

export interface SemanticOps {
  overview(input: { path?: string; depth?: number }, ctx: OpContext): Promise<OverviewResult>;
  lookup(
    input: { name_path?: string; symbol_key?: string; path?: string; include_body?: boolean; limit?: number },
    ctx: OpContext,
  ): Promise<LookupResult>;
  /** Find references: the language server's, else every same-named identifier (tree-sitter). */
  references(input: ReferencesInput, ctx: OpContext): Promise<ReferencesResult>;
  /** Go to definition of the name at path:line:column. */
  definition(input: DefinitionInput, ctx: OpContext): Promise<DefinitionResult>;
  structuralEdit(
    input: {
      mode: StructuralMode;
      path?: string;
      name_path?: string;
      symbol_key?: string;
      new_string?: string;
      new_name?: string;
      scope?: string;
    },
    ctx: OpContext,
  ): Promise<StructuralEditResult>;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

type SemanticDeps = {
  paths: PathResolver;
  search: SearchOps;
  changes: ChangeCommitter;
  /** The language servers; without them (or without one for the file) tree-sitter answers. */
  lsp?: LanguageServers;
};

type RenamePlan = {
  pending: PendingChange[];
  replacements: number;
  engine: SemanticEngine;
  server?: string;
  note?: string;
};

export function createSemanticOps(deps: SemanticDeps): SemanticOps {
  const finder = createSymbolFinder(deps);

  return {
    async overview(input, ctx) {
      const { files, truncated } = await finder.candidates(input.path, undefined, ctx);
      const depth = input.depth ?? (files.length === 1 ? 5 : 1);
      const out: OverviewResult['files'] = [];
      const skippedFiles: SkippedFile[] = [];
      let total = 0;
      let cut = truncated;
      for (const file of files) {
        await breathe();
        ctx.signal?.throwIfAborted();
        if (!languageFor(file)) continue;
        const { symbols, skipped } = await finder.symbolsOf(file);
        if (skipped) skippedFiles.push(skipped);
        const kept = symbols.filter((s) => s.depth < depth).map(strip);
        if (kept.length === 0) continue;
        if (total + kept.length > SEMANTIC_LIMITS.maxSymbols) {
          cut = true;
          break;
        }
        total += kept.length;
        out.push({ path: file, symbols: kept });
      }
      if (files.length === 1 && !languageFor(files[0])) {
        throw new SvcError(
          'invalid_input',
          `path: ${files[0]} is not in a language search understands (${SYMBOL_EXTENSIONS.join(', ')})`,
        );
      }
      return {
        path: deps.paths.resolve(input.path ?? '.').rel,
        files: out,
        symbols: total,
        truncated: cut,
        ...(skippedFiles.length ? { skipped: skippedFiles } : {}),
      };
    },

    async lookup(input, ctx) {
      const { matches, truncated, skipped } = await finder.find(input, ctx);
      const limit = input.limit ?? 50;
      return {
        symbols: matches.slice(0, limit).map((m) => ({
          ...strip(m),
          ...(input.include_body ? { body: m.text.slice(m.outerStart, m.outerEnd) } : {}),
        })),
        truncated: truncated || matches.length > limit,
        ...(skipped.length ? { skipped } : {}),
      };
    },

    references: (input, ctx) => references(deps, finder, input, ctx),
    definition: (input, ctx) => definition(deps, finder, input, ctx),

    async structuralEdit(input, ctx) {
      const symbol = await finder.one(input, ctx);
      const target = deps.paths.resolve(symbol.path);
      let plan: RenamePlan | undefined;
      let pending: PendingChange[];
      if (input.mode === 'rename_symbol') {
        plan = await planRename(deps, finder, symbol, input.new_name ?? '', input.scope, ctx);
        pending = plan.pending;
      } else {
        if (input.new_string === undefined) {
          throw new SvcError(
            'invalid_input',
            `new_string: ${input.mode} needs the code to ${input.mode === 'replace_symbol_body' ? 'put in place of the definition' : 'insert'}`,
          );
        }
        const after = applyAround(symbol.text, symbol, input.mode, input.new_string);
        pending = [{ target, before: Buffer.from(symbol.text), after }];
      }

      const title =
        input.mode === 'rename_symbol'
          ? `rename ${symbol.name_path} → ${input.new_name} (${pending.length} file${pending.length === 1 ? '' : 's'})`
          : `${input.mode.replace(/_/g, ' ')} ${symbol.name_path} in ${symbol.path}`;
      const applied = await deps.changes.commit(pending, ctx, {
        title,
        scope: input.mode === 'rename_symbol' ? `rename:${symbol.symbol_key}` : symbol.path,
        details: { mode: input.mode, symbol_key: symbol.symbol_key },
      });
      if (plan?.engine === 'lsp') await showServer(deps, pending);
      return {
        mode: input.mode,
        symbol: strip(symbol),
        files: applied.map((a) => ({
          path: a.path,
          additions: a.additions,
          deletions: a.deletions,
          history_id: a.history_id,
        })),
        ...(plan
          ? {
              replacements: plan.replacements,
              engine: plan.engine,
              ...(plan.server ? { server: plan.server } : {}),
              ...(plan.note ? { note: plan.note } : {}),
            }
          : {}),
        diff: applied.map((a) => a.diff).join(''),
      };
    },
  };
}

const underScope = (file: string, scope: string | undefined) =>
  !scope || scope === '.' || file === scope || file.startsWith(`${scope.replace(/\/+$/, '')}/`);

async function planRename(
  deps: SemanticDeps,
  finder: SymbolFinder,
  symbol: FoundSymbol,
  newName: string,
  scope: string | undefined,
  ctx: OpContext,
): Promise<RenamePlan> {
  if (!IDENTIFIER.test(newName)) {
    throw new SvcError(
      'invalid_input',
      `new_name: "${newName}" is not a valid identifier; give the new name only`,
    );
  }
  if (newName === symbol.name)
    throw new SvcError('invalid_input', 'new_name: it is the current name already');
  const target = deps.paths.resolve(symbol.path);
  const related = await relatedFiles(deps, finder, target.abs, symbol.name, ctx);
  const answer = await lspRename(
    deps,
    target,
    symbol.text,
    await nameOffset(symbol),
    newName,
    related,
    ctx.signal,
  );
  if (answer.ok) {
    const scopeRel = scope ? deps.paths.resolve(scope, 'scope').rel : undefined;
    const pending: PendingChange[] = [];
    let replacements = 0;
    // The symbol's own file first, then the others in the server's order.
    const ordered = [...answer.value].sort(
      ([a], [b]) => Number(b === symbol.path) - Number(a === symbol.path),
    );
    for (const [file, edits] of ordered) {
      if (file !== symbol.path && !underScope(file, scopeRel)) continue;
      if (edits.length === 0) continue;
      const content = file === symbol.path ? symbol.text : finder.readText(file);
      // All or nothing: every edit is checked before any file is changed.
      checkRenameEdits(file, content, edits, { from: symbol.path, oldName: symbol.name, newName });
      replacements += edits.length;
      pending.push({
        target: deps.paths.resolve(file),
        before: Buffer.from(content),
        after: applyTextEdits(content, edits),
      });
    }
    if (pending.length > 0) return { pending, replacements, engine: 'lsp', server: answer.server };
  }
  const why = !answer.ok ? answer.reason : `language server ${answer.server} found nothing to rename`;
  return {
    ...(await treeSitterRename(deps, finder, symbol, newName, scope, ctx)),
    note: `${TREE_SITTER_NOTE} (${why})`,
  };
}

/**
 * After a language-server rename, give the server the new text of every file it was shown, so its
 * open documents (and the diagnostics after the next edit) do not keep the old names.
 */
async function showServer(deps: SemanticDeps, pending: PendingChange[]): Promise<void> {
  const [first, ...rest] = pending;
  if (!first || typeof first.after !== 'string') return;
  await deps.lsp
    ?.withClient(first.target, first.after, async ({ open }) => {
      for (const change of rest) if (typeof change.after === 'string') open(change.target, change.after);
    })
    .catch(() => undefined);
}

async function treeSitterRename(
  deps: SemanticDeps,
  finder: SymbolFinder,
  symbol: FoundSymbol,
  newName: string,
  scope: string | undefined,
  ctx: OpContext,
): Promise<RenamePlan> {
  const found = await finder.candidates(scope ?? '.', symbol.name, ctx);
  if (found.truncated) {
    throw new SvcError(
      'invalid_input',
      `scope: more than ${SEMANTIC_LIMITS.maxRenameFiles} files mention ${symbol.name}; narrow scope`,
    );
  }
  const pending: PendingChange[] = [];
  let replacements = 0;
  for (const file of [...new Set([symbol.path, ...found.files])]) {
    await breathe();
    ctx.signal?.throwIfAborted();
    const content = file === symbol.path ? symbol.text : readForRename(finder, file, symbol.name);
    if (content === undefined) continue;
    const ranges = await identifierRanges(file, content, symbol.name).catch((error) => {
      const skipped = skippedBy(error);
      throw skipped ? renameSkipped(skipped, symbol.name) : error;
    });
    if (ranges.length === 0) continue;
    let next = content;
    for (const [start, end] of [...ranges].sort((a, b) => b[0] - a[0])) {
      next = next.slice(0, start) + newName + next.slice(end);
    }
    replacements += ranges.length;
    pending.push({ target: deps.paths.resolve(file), before: Buffer.from(content), after: next });
  }
  return { pending, replacements, engine: 'tree-sitter' };
}

/** A file the tree-sitter rename must edit: refused (nothing changed) when it is not parsed. */
function readForRename(finder: SymbolFinder, file: string, name: string): string | undefined {
  const source = finder.readSource(file);
  if (source && 'skipped' in source) throw renameSkipped({ path: file, reason: source.skipped }, name);
  return source?.text;
}

function renameSkipped(skipped: SkippedFile, name: string): SvcError {
  return new SvcError(
    'invalid_input',
    `rename_symbol: ${skipped.path} mentions ${name} but is not parsed for symbols (${skipped.reason}); nothing was changed. Leave it out with scope, or change it with edit mode replace`,
    { details: { skipped: [skipped] } },
  );
}

function applyAround(
  text: string,
  symbol: LocatedSymbol,
  mode: Exclude<StructuralMode, 'rename_symbol'>,
  code: string,
): string {
  const lineStart = text.lastIndexOf('\n', symbol.outerStart - 1) + 1;
  const indent = /^[ \t]*/.exec(text.slice(lineStart))?.[0] ?? '';
  const body = reindent(code.replace(/\s+$/, ''), indent);
  const gap = symbol.depth === 0 ? '\n' : '';
  switch (mode) {
    case 'replace_symbol_body': {
      // Accept a replacement that repeats `export`/decorators: replace from the outer start then.
      const prefix = text.slice(symbol.outerStart, symbol.start);
      const trimmed = code.replace(/\s+$/, '');
      const from =
        prefix.trim() && trimmed.trimStart().startsWith(prefix.trim()) ? symbol.outerStart : symbol.start;
      return text.slice(0, from) + reindent(trimmed, indent).slice(indent.length) + text.slice(symbol.end);
    }
    case 'insert_before_symbol':
      return `${text.slice(0, lineStart)}${body}\n${gap}${text.slice(lineStart)}`;
    case 'insert_after_symbol': {
      const lineEnd = text.indexOf('\n', symbol.outerEnd);
      const at = lineEnd === -1 ? text.length : lineEnd;
      return `${text.slice(0, at)}\n${gap}${body}${text.slice(at)}`;
    }
    default: {
      const never: never = mode;
      throw new Error(`unknown mode ${never}`);
    }
  }
}

/**
 * Put code at the symbol's indentation. Code given dedented (or at its original indentation) is
 * shifted as a block; a first line given flush-left with the rest at file indentation is kept.
 */
function reindent(code: string, indent: string): string {
  const lines = code.replace(/^\n+/, '').split('\n');
  const width = (l: string) => /^[ \t]*/.exec(l)?.[0].length ?? 0;
  const rest = lines.slice(1).filter((l) => l.trim());
  if (indent && width(lines[0]) === 0 && rest.length > 0 && Math.min(...rest.map(width)) > indent.length) {
    return [indent + lines[0], ...lines.slice(1)].join('\n');
  }
  const min = Math.min(...lines.filter((l) => l.trim()).map(width));
  return lines.map((l) => (l.trim() ? indent + l.slice(min) : l)).join('\n');
}
