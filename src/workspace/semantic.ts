/**
 * Semantic code operations on tree-sitter symbols: `search` modes symbol-overview and
 * symbol-lookup, and the structural `edit` modes (rename a symbol across files, replace its
 * definition, insert before or after it). Every change goes through the change committer: one
 * approval with the diff of every file, then history and file.changed for each.
 * @module
 */
import { readFileSync } from 'node:fs';
import { SvcError } from '../errors';
import type { OpContext } from './context';
import type { ChangeCommitter, PendingChange } from './file-changes';
import { looksBinary } from './file-io';
import type { PathResolver } from './paths';
import type { SearchOps } from './search';
import {
  fileSymbols,
  identifierRanges,
  type LocatedSymbol,
  languageFor,
  matchesNamePath,
  SYMBOL_EXTENSIONS,
  type SymbolInfo,
} from './symbols';

export const SEMANTIC_LIMITS = { maxFiles: 500, maxSymbols: 2000, maxRenameFiles: 500 } as const;

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
}

export interface LookupResult {
  symbols: (SymbolInfo & { body?: string })[];
  truncated: boolean;
}

export interface StructuralEditResult {
  mode: StructuralMode;
  symbol: SymbolInfo;
  files: { path: string; additions: number; deletions: number; history_id: number }[];
  /** Identifiers renamed (rename_symbol). */
  replacements?: number;
  diff: string;
}

export interface SemanticOps {
  overview(input: { path?: string; depth?: number }, ctx: OpContext): Promise<OverviewResult>;
  lookup(
    input: { name_path?: string; symbol_key?: string; path?: string; include_body?: boolean; limit?: number },
    ctx: OpContext,
  ): Promise<LookupResult>;
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

export function createSemanticOps(deps: {
  paths: PathResolver;
  search: SearchOps;
  changes: ChangeCommitter;
}): SemanticOps {
  const symbolGlobs = [`*.{${SYMBOL_EXTENSIONS.join(',')}}`];

  const readText = (rel: string): string | undefined => {
    const target = deps.paths.resolve(rel);
    try {
      const buffer = readFileSync(target.abs);
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

  /** Candidate files for a name: ripgrep narrows a directory to files mentioning it. */
  const candidates = async (path: string | undefined, name: string | undefined, ctx: OpContext) => {
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

  const find = async (
    input: { name_path?: string; symbol_key?: string; path?: string },
    ctx: OpContext,
  ): Promise<{ matches: (LocatedSymbol & { text: string })[]; truncated: boolean }> => {
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
    const matches: (LocatedSymbol & { text: string })[] = [];
    for (const file of files) {
      ctx.signal?.throwIfAborted();
      const { text, symbols } = await symbolsOf(file);
      for (const s of symbols) if (matchesNamePath(s, input.name_path)) matches.push({ ...s, text });
    }
    return { matches, truncated };
  };

  const one = async (input: { name_path?: string; symbol_key?: string; path?: string }, ctx: OpContext) => {
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

  return {
    async overview(input, ctx) {
      const { files, truncated } = await candidates(input.path, undefined, ctx);
      const depth = input.depth ?? (files.length === 1 ? 5 : 1);
      const out: OverviewResult['files'] = [];
      let total = 0;
      let cut = truncated;
      for (const file of files) {
        ctx.signal?.throwIfAborted();
        if (!languageFor(file)) continue;
        const { symbols } = await symbolsOf(file);
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
      return { path: deps.paths.resolve(input.path ?? '.').rel, files: out, symbols: total, truncated: cut };
    },

    async lookup(input, ctx) {
      const { matches, truncated } = await find(input, ctx);
      const limit = input.limit ?? 50;
      return {
        symbols: matches.slice(0, limit).map((m) => ({
          ...strip(m),
          ...(input.include_body ? { body: m.text.slice(m.outerStart, m.outerEnd) } : {}),
        })),
        truncated: truncated || matches.length > limit,
      };
    },

    async structuralEdit(input, ctx) {
      const symbol = await one(input, ctx);
      const target = deps.paths.resolve(symbol.path);
      const text = symbol.text;
      const before = Buffer.from(text);
      const pending: PendingChange[] = [];
      let replacements: number | undefined;

      if (input.mode === 'rename_symbol') {
        const newName = input.new_name ?? '';
        if (!IDENTIFIER.test(newName)) {
          throw new SvcError(
            'invalid_input',
            `new_name: "${newName}" is not a valid identifier; give the new name only`,
          );
        }
        if (newName === symbol.name)
          throw new SvcError('invalid_input', 'new_name: it is the current name already');
        const scope = await candidates(input.scope ?? '.', symbol.name, ctx);
        if (scope.truncated) {
          throw new SvcError(
            'invalid_input',
            `scope: more than ${SEMANTIC_LIMITS.maxRenameFiles} files mention ${symbol.name}; narrow scope`,
          );
        }
        const files = [...new Set([symbol.path, ...scope.files])];
        replacements = 0;
        for (const file of files) {
          const content = file === symbol.path ? text : readText(file);
          if (content === undefined) continue;
          const ranges = await identifierRanges(file, content, symbol.name);
          if (ranges.length === 0) continue;
          let next = content;
          for (const [start, end] of [...ranges].sort((a, b) => b[0] - a[0])) {
            next = next.slice(0, start) + newName + next.slice(end);
          }
          replacements += ranges.length;
          pending.push({ target: deps.paths.resolve(file), before: Buffer.from(content), after: next });
        }
      } else {
        if (input.new_string === undefined) {
          throw new SvcError(
            'invalid_input',
            `new_string: ${input.mode} needs the code to ${input.mode === 'replace_symbol_body' ? 'put in place of the definition' : 'insert'}`,
          );
        }
        pending.push({ target, before, after: applyAround(text, symbol, input.mode, input.new_string) });
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
      return {
        mode: input.mode,
        symbol: strip(symbol),
        files: applied.map((a) => ({
          path: a.path,
          additions: a.additions,
          deletions: a.deletions,
          history_id: a.history_id,
        })),
        ...(replacements === undefined ? {} : { replacements }),
        diff: applied.map((a) => a.diff).join(''),
      };
    },
  };
}

function strip(s: LocatedSymbol & { text?: string }): SymbolInfo {
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
