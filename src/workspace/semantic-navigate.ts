/**
 * Find references and go to definition (`search` modes symbol-references and symbol-definition):
 * the file's language server answers when one handles the file (semantic-lsp.ts); otherwise
 * tree-sitter answers by name and the result says so (`engine: "tree-sitter"`, a `note` on what
 * it may get wrong). Also the helpers a language-server rename shares with them.
 * @module
 */
import { SvcError } from '../errors';
import type { OpContext } from './context';
import type { LanguageServers } from './lsp';
import type { PathResolver } from './paths';
import { type FoundSymbol, type SymbolFinder, strip } from './semantic-find';
import {
  type CodeLocation,
  lspDefinition,
  lspReferences,
  type RelatedFiles,
  type SemanticEngine,
} from './semantic-lsp';
import { breathe, identifierRanges, type SkippedFile, type SymbolInfo, skippedBy } from './symbols';

export interface NavigateDeps {
  paths: PathResolver;
  /** The language servers; without them (or without one for the file) tree-sitter answers. */
  lsp?: LanguageServers;
}

export interface ReferencesInput {
  name_path?: string;
  symbol_key?: string;
  path?: string;
  /** tree-sitter fallback: directory or file searched. Default: the whole workspace. */
  scope?: string;
  limit?: number;
}

export interface ReferencesResult {
  symbol: SymbolInfo;
  engine: SemanticEngine;
  server?: string;
  /** Every use, the declaration included. */
  references: CodeLocation[];
  truncated: boolean;
  note?: string;
  /** tree-sitter: files mentioning the name that were not parsed (too large…), and why. */
  skipped?: SkippedFile[];
}

export interface DefinitionInput {
  path: string;
  /** 1-based line of the use. */
  line: number;
  /** 1-based column within the name; default the first identifier on the line. */
  column?: number;
}

export interface DefinitionResult {
  path: string;
  line: number;
  column: number;
  /** The identifier asked about. */
  name: string;
  engine: SemanticEngine;
  server?: string;
  definitions: CodeLocation[];
  note?: string;
  /** tree-sitter: files that were not parsed (too large…), and why. */
  skipped?: SkippedFile[];
}

/** What a by-name tree-sitter answer may get wrong, said in every result that used it. */
export const TREE_SITTER_NOTE =
  'tree-sitter matches identifiers by name: a same-named identifier in another scope is included, and uses reached only through re-exports, dynamic access or strings are missed';

/** Most files shown to a language server before a rename or reference search. */
const RELATED_MAX = 200;

/**
 * The files mentioning a name, with their text, for the file's language server to see before it
 * answers: a server without a project file (no tsconfig.json) knows only the files it was shown.
 */
export async function relatedFiles(
  deps: NavigateDeps,
  finder: SymbolFinder,
  abs: string,
  name: string,
  ctx: OpContext,
): Promise<RelatedFiles> {
  if (!deps.lsp?.serverFor(abs)) return [];
  const { files } = await finder.candidates('.', name, ctx);
  const out: RelatedFiles = [];
  for (const file of files.slice(0, RELATED_MAX)) {
    const text = finder.readText(file);
    if (text !== undefined) out.push({ target: deps.paths.resolve(file), text });
  }
  return out;
}

/** Where the symbol's own name starts in its file (what the language server is asked about). */
export async function nameOffset(symbol: FoundSymbol): Promise<number> {
  const ranges = await identifierRanges(symbol.path, symbol.text, symbol.name);
  const own = ranges.find(([start]) => start >= symbol.start && start < symbol.end);
  return own ? own[0] : symbol.start;
}

function locationIn(path: string, text: string, start: number, end: number): CodeLocation {
  const lineStart = text.lastIndexOf('\n', start - 1) + 1;
  const lineEnd = text.indexOf('\n', start);
  const line = text.slice(0, start).split('\n').length;
  const endBefore = text.slice(0, end);
  return {
    path,
    line,
    column: start - lineStart + 1,
    end_line: endBefore.split('\n').length,
    end_column: end - (endBefore.lastIndexOf('\n') + 1) + 1,
    text: text.slice(lineStart, lineEnd === -1 ? text.length : lineEnd).trim(),
  };
}

export async function references(
  deps: NavigateDeps,
  finder: SymbolFinder,
  input: ReferencesInput,
  ctx: OpContext,
): Promise<ReferencesResult> {
  const symbol = await finder.one(input, ctx);
  const limit = input.limit ?? 100;
  const target = deps.paths.resolve(symbol.path);
  const related = await relatedFiles(deps, finder, target.abs, symbol.name, ctx);
  const answer = await lspReferences(
    deps,
    target,
    symbol.text,
    await nameOffset(symbol),
    related,
    ctx.signal,
  );
  if (answer.ok && answer.value.length > 0) {
    return {
      symbol: strip(symbol),
      engine: 'lsp',
      server: answer.server,
      references: answer.value.slice(0, limit),
      truncated: answer.value.length > limit,
    };
  }
  const why = !answer.ok ? answer.reason : `language server ${answer.server} found no reference`;
  const found = await finder.candidates(input.scope ?? '.', symbol.name, ctx);
  const out: CodeLocation[] = [];
  const skipped: SkippedFile[] = [];
  for (const file of [...new Set([symbol.path, ...found.files])]) {
    await breathe();
    ctx.signal?.throwIfAborted();
    const source = file === symbol.path ? { text: symbol.text } : finder.readSource(file);
    if (source === undefined) continue;
    if ('skipped' in source) {
      skipped.push({ path: file, reason: source.skipped });
      continue;
    }
    const content = source.text;
    try {
      for (const [start, end] of await identifierRanges(file, content, symbol.name))
        out.push(locationIn(file, content, start, end));
    } catch (error) {
      const skip = skippedBy(error);
      if (!skip) throw error;
      skipped.push(skip);
    }
  }
  return {
    symbol: strip(symbol),
    engine: 'tree-sitter',
    references: out.slice(0, limit),
    truncated: found.truncated || out.length > limit,
    note: `${TREE_SITTER_NOTE} (${why})`,
    ...(skipped.length ? { skipped } : {}),
  };
}

export async function definition(
  deps: NavigateDeps,
  finder: SymbolFinder,
  input: DefinitionInput,
  ctx: OpContext,
): Promise<DefinitionResult> {
  const target = deps.paths.resolve(input.path);
  const source = finder.readSource(target.rel);
  if (source && 'skipped' in source)
    throw new SvcError(
      'invalid_input',
      `path: ${input.path} is not parsed for symbols (${source.skipped}); search it with search mode text`,
    );
  const text = source?.text;
  if (text === undefined) throw new SvcError('not_found', `path: ${input.path} is not a readable text file`);
  const lines = text.split('\n');
  const lineText = lines[input.line - 1];
  if (lineText === undefined)
    throw new SvcError('invalid_input', `line: ${input.path} has ${lines.length} lines, not ${input.line}`);
  const column = Math.min(Math.max(input.column ?? 1, 1), lineText.length + 1);
  const word = wordAt(lineText, column - 1);
  if (!word) {
    throw new SvcError(
      'invalid_input',
      `column: no identifier at ${input.path}:${input.line}:${column} ("${lineText.trim()}"); give the column of the name`,
    );
  }
  const offset = lines.slice(0, input.line - 1).join('\n').length + (input.line > 1 ? 1 : 0) + word.start;
  const base = { path: target.rel, line: input.line, column: word.start + 1, name: word.name };
  const related = await relatedFiles(deps, finder, target.abs, word.name, ctx);
  const answer = await lspDefinition(deps, target, text, offset, related, ctx.signal);
  if (answer.ok && answer.value.length > 0)
    return { ...base, engine: 'lsp', server: answer.server, definitions: answer.value };
  const why = !answer.ok ? answer.reason : `language server ${answer.server} found no definition`;
  const { matches, skipped } = await finder.find({ name_path: word.name }, ctx);
  return {
    ...base,
    engine: 'tree-sitter',
    definitions: matches.slice(0, 20).map((m) => locationIn(m.path, m.text, m.start, m.end)),
    note: `tree-sitter lists every symbol named ${word.name}, not the one this use refers to (${why})`,
    ...(skipped.length ? { skipped } : {}),
  };
}

function wordAt(line: string, index: number): { name: string; start: number } | undefined {
  const pattern = /[A-Za-z_$][A-Za-z0-9_$]*/g;
  for (let match = pattern.exec(line); match; match = pattern.exec(line)) {
    if (index >= match.index && index <= match.index + match[0].length)
      return { name: match[0], start: match.index };
  }
  return undefined;
}
