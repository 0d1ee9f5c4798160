/**
 * Finding symbols for the semantic operations: the candidate files of a name (ripgrep narrows a
 * directory to the files mentioning it), the tree-sitter symbols of a file, and the selection of
 * symbols by `name_path` or `symbol_key`.
 * @module
 */
import { SvcError } from '../errors';
import type { OpContext } from './context';
import { looksBinary, readRegularFile } from './file-io';
import type { PathResolver } from './paths';
import type { SearchOps } from './search';
import {
  fileSymbols,
  type LocatedSymbol,
  matchesNamePath,
  SYMBOL_EXTENSIONS,
  type SymbolInfo,
} from './symbols';

export const SEMANTIC_LIMITS = { maxFiles: 500, maxSymbols: 2000, maxRenameFiles: 500 } as const;

export type SymbolSelector = { name_path?: string; symbol_key?: string; path?: string };
export type FoundSymbol = LocatedSymbol & { text: string };

export interface SymbolFinder {
  /** The file's text, undefined when it is missing or binary. */
  readText(rel: string): string | undefined;
  symbolsOf(rel: string): Promise<{ text: string; symbols: LocatedSymbol[] }>;
  candidates(
    path: string | undefined,
    name: string | undefined,
    ctx: OpContext,
  ): Promise<{ files: string[]; truncated: boolean }>;
  find(input: SymbolSelector, ctx: OpContext): Promise<{ matches: FoundSymbol[]; truncated: boolean }>;
  /** Exactly one symbol, or an error that says how to pick one. */
  one(input: SymbolSelector, ctx: OpContext): Promise<FoundSymbol>;
}

export function createSymbolFinder(deps: { paths: PathResolver; search: SearchOps }): SymbolFinder {
  const symbolGlobs = [`*.{${SYMBOL_EXTENSIONS.join(',')}}`];

  const readText = (rel: string): string | undefined => {
    const target = deps.paths.resolve(rel);
    try {
      const buffer = readRegularFile(target.abs);
      return looksBinary(buffer) ? undefined : buffer.toString('utf8');
    } catch {
      return undefined;
    }
  };

  const symbolsOf = async (rel: string) => {
    const text = readText(rel);
    return text === undefined
      ? { text: '', symbols: [] as LocatedSymbol[] }
      : { text, symbols: await fileSymbols(rel, text) };
  };

  const candidates: SymbolFinder['candidates'] = async (path, name, ctx) => {
    const listing = await deps.search.files(
      { path, globs: symbolGlobs, limit: SEMANTIC_LIMITS.maxFiles * 4 },
      ctx,
    );
    if (listing.isFile || !name)
      return { files: listing.files.slice(0, SEMANTIC_LIMITS.maxFiles), truncated: listing.truncated };
    const hits = await deps.search.grep(
      {
        pattern: name,
        literal: true,
        path,
        glob: symbolGlobs[0],
        output_mode: 'files',
        limit: SEMANTIC_LIMITS.maxFiles,
      },
      ctx,
    );
    return { files: hits.files ?? [], truncated: hits.truncated };
  };

  const find: SymbolFinder['find'] = async (input, ctx) => {
    if (input.symbol_key) {
      const [file] = input.symbol_key.split('::');
      if (!file || !input.symbol_key.includes('::')) {
        throw new SvcError(
          'invalid_input',
          `symbol_key: "${input.symbol_key}" is not a symbol key; use one that search returned`,
        );
      }
      deps.paths.resolve(file, 'symbol_key');
      const { text, symbols } = await symbolsOf(file);
      const hit = symbols.filter((s) => s.symbol_key === input.symbol_key);
      return { matches: hit.map((s) => ({ ...s, text })), truncated: false };
    }
    if (!input.name_path)
      throw new SvcError('invalid_input', 'name_path: give name_path or symbol_key to select a symbol');
    const last = input.name_path.split(/[./]/).filter(Boolean).pop();
    const { files, truncated } = await candidates(input.path, last, ctx);
    const matches: FoundSymbol[] = [];
    for (const file of files) {
      ctx.signal?.throwIfAborted();
      const { text, symbols } = await symbolsOf(file);
      for (const s of symbols) if (matchesNamePath(s, input.name_path)) matches.push({ ...s, text });
    }
    return { matches, truncated };
  };

  const one: SymbolFinder['one'] = async (input, ctx) => {
    const { matches } = await find(input, ctx);
    const what = input.symbol_key ? `symbol_key ${input.symbol_key}` : `name_path ${input.name_path}`;
    if (matches.length === 0) {
      throw new SvcError(
        'not_found',
        `${input.symbol_key ? 'symbol_key' : 'name_path'}: no symbol matches ${what}${input.path ? ` under ${input.path}` : ''}; list symbols with search mode symbol-overview`,
      );
    }
    if (matches.length > 1) {
      throw new SvcError(
        'invalid_input',
        `name_path: ${input.name_path} matches ${matches.length} symbols; pick one by symbol_key: ${matches
          .slice(0, 10)
          .map((m) => m.symbol_key)
          .join(', ')}`,
        { details: { candidates: matches.slice(0, 20).map(strip) } },
      );
    }
    return matches[0];
  };

  return { readText, symbolsOf, candidates, find, one };
}

export function strip(s: LocatedSymbol & { text?: string }): SymbolInfo {
  return {
    name: s.name,
    kind: s.kind,
    name_path: s.name_path,
    symbol_key: s.symbol_key,
    path: s.path,
    start_line: s.start_line,
    end_line: s.end_line,
    depth: s.depth,
  };
}
