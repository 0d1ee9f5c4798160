/**
 * Finding symbols for the semantic operations: the candidate files of a name (ripgrep narrows a
 * directory to the files mentioning it), the tree-sitter symbols of a file, and the selection of
 * symbols by `name_path` or `symbol_key`.
 * @module
 */
import { statSync } from 'node:fs';
import { SvcError } from '../errors';
import type { OpContext } from './context';
import { looksBinary } from './file-io';
import { readTarget } from './file-load';
import type { PathResolver } from './paths';
import type { SearchOps } from './search';
import {
  breathe,
  fileSymbols,
  type LocatedSymbol,
  matchesNamePath,
  type SkippedFile,
  SYMBOL_EXTENSIONS,
  type SymbolInfo,
  sizeSkip,
  skippedBy,
} from './symbols';

export const SEMANTIC_LIMITS = { maxFiles: 500, maxSymbols: 2000, maxRenameFiles: 500 } as const;

export type SymbolSelector = { name_path?: string; symbol_key?: string; path?: string };
export type FoundSymbol = LocatedSymbol & { text: string };

export type FileSymbols = { text: string; symbols: LocatedSymbol[]; skipped?: SkippedFile };

export interface SymbolFinder {
  /** The file's text, undefined when it is missing, binary or too large to parse (symbols.ts). */
  readText(rel: string): string | undefined;
  /** The text, or why it is not read (too large to parse); undefined when missing or binary. */
  readSource(rel: string): { text: string } | { skipped: string } | undefined;
  /** Its symbols; `skipped` (and none) when it is too large or long-lined to parse. */
  symbolsOf(rel: string): Promise<FileSymbols>;
  candidates(
    path: string | undefined,
    name: string | undefined,
    ctx: OpContext,
  ): Promise<{ files: string[]; truncated: boolean }>;
  find(
    input: SymbolSelector,
    ctx: OpContext,
  ): Promise<{ matches: FoundSymbol[]; truncated: boolean; skipped: SkippedFile[] }>;
  /** Exactly one symbol, or an error that says how to pick one. */
  one(input: SymbolSelector, ctx: OpContext): Promise<FoundSymbol>;
}

export function createSymbolFinder(deps: { paths: PathResolver; search: SearchOps }): SymbolFinder {
  const symbolGlobs = [`*.{${SYMBOL_EXTENSIONS.join(',')}}`];

  /** The text, or why it is not read: a file too large to parse is never read into memory. */
  const readSource = (rel: string): { text: string } | { skipped: string } | undefined => {
    const target = deps.paths.resolve(rel);
    try {
      const skipped = sizeSkip(statSync(target.abs).size);
      if (skipped) return { skipped };
      const buffer = readTarget(target, 'path');
      return looksBinary(buffer) ? undefined : { text: buffer.toString('utf8') };
    } catch {
      return undefined;
    }
  };

  const readText = (rel: string): string | undefined => {
    const source = readSource(rel);
    return source && 'text' in source ? source.text : undefined;
  };

  const symbolsOf = async (rel: string): Promise<FileSymbols> => {
    const source = readSource(rel);
    if (!source) return { text: '', symbols: [] };
    if ('skipped' in source) return { text: '', symbols: [], skipped: { path: rel, reason: source.skipped } };
    try {
      return { text: source.text, symbols: await fileSymbols(rel, source.text) };
    } catch (error) {
      const skipped = skippedBy(error);
      if (!skipped) throw error;
      return { text: source.text, symbols: [], skipped };
    }
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
      const { text, symbols, skipped } = await symbolsOf(file);
      const hit = symbols.filter((s) => s.symbol_key === input.symbol_key);
      return {
        matches: hit.map((s) => ({ ...s, text })),
        truncated: false,
        skipped: skipped ? [skipped] : [],
      };
    }
    if (!input.name_path)
      throw new SvcError('invalid_input', 'name_path: give name_path or symbol_key to select a symbol');
    const last = input.name_path.split(/[./]/).filter(Boolean).pop();
    const { files, truncated } = await candidates(input.path, last, ctx);
    const matches: FoundSymbol[] = [];
    const skippedFiles: SkippedFile[] = [];
    for (const file of files) {
      await breathe();
      ctx.signal?.throwIfAborted();
      const { text, symbols, skipped } = await symbolsOf(file);
      if (skipped) skippedFiles.push(skipped);
      for (const s of symbols) if (matchesNamePath(s, input.name_path)) matches.push({ ...s, text });
    }
    return { matches, truncated, skipped: skippedFiles };
  };

  const one: SymbolFinder['one'] = async (input, ctx) => {
    const { matches, skipped } = await find(input, ctx);
    const what = input.symbol_key ? `symbol_key ${input.symbol_key}` : `name_path ${input.name_path}`;
    if (matches.length === 0) {
      const unparsed = skipped.length
        ? ` (not parsed: ${skipped
            .slice(0, 3)
            .map((s) => `${s.path}, ${s.reason}`)
            .join('; ')})`
        : '';
      throw new SvcError(
        'not_found',
        `${input.symbol_key ? 'symbol_key' : 'name_path'}: no symbol matches ${what}${input.path ? ` under ${input.path}` : ''}${unparsed}; list symbols with search mode symbol-overview`,
        skipped.length ? { details: { skipped } } : undefined,
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

  return { readText, readSource, symbolsOf, candidates, find, one };
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
