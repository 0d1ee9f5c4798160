/**
 * What the search index holds for one message, computed in TypeScript for the PostgreSQL store
 * (SQLite's triggers compute the same in SQL, src/store/migrations/session-search.ts): the tools
 * it calls or answers (`,bash,read,`), its searchable text (text, tool input and output, error
 * messages, one line each) and, for PostgreSQL, that text as a tsvector literal of folded tokens
 * (no accents, lower case: as FTS5's unicode61 with remove_diacritics compares them).
 * @module
 */
import type { MessagePart } from './types';

/** Letters, digits and marks: the characters FTS5's unicode61 tokenizer keeps in a token. */
export const SEARCH_TOKEN = /[\p{L}\p{N}\p{M}\p{Co}]+/gu;
/** Tokens indexed per message at most (a tsvector is limited to 1 MB). */
const MAX_TOKENS = 50_000;
/** PostgreSQL keeps positions up to this value. */
const MAX_POSITION = 16_383;

export const foldToken = (token: string) => token.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();

export interface SearchDoc {
  tools: string;
  body: string;
}

export function searchDocOf(parts: readonly MessagePart[]): SearchDoc {
  const tools = new Set<string>();
  const lines: string[] = [];
  for (const part of parts) {
    if (typeof part !== 'object' || part === null) continue;
    if ((part.type === 'tool-call' || part.type === 'tool-result') && typeof part.tool === 'string')
      tools.add(part.tool);
    const value =
      part.type === 'text'
        ? part.text
        : part.type === 'tool-call'
          ? part.input
          : part.type === 'tool-result'
            ? part.output
            : part.type === 'error'
              ? part.message
              : undefined;
    const line = asText(value);
    if (line !== undefined) lines.push(line);
  }
  // NUL cannot be stored in PostgreSQL text; it is no token either.
  const body = lines.join('\n').replaceAll('\u0000', '');
  return { tools: tools.size > 0 ? `,${[...tools].join(',')},` : '', body };
}

/** As SQLite's json_extract gives it: strings as they are, objects as JSON, null as nothing. */
function asText(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? '1' : '0';
  if (typeof value === 'number') return String(value);
  return JSON.stringify(value);
}

/** The body as a PostgreSQL tsvector literal: `'kraken':1 'appears':2`, folded tokens. */
export function tsvectorOf(body: string): string {
  const positions = new Map<string, number[]>();
  let index = 0;
  for (const match of body.matchAll(SEARCH_TOKEN)) {
    if (index >= MAX_TOKENS) break;
    index++;
    const token = foldToken(match[0]);
    if (!token) continue;
    const list = positions.get(token);
    const position = Math.min(index, MAX_POSITION);
    if (!list) positions.set(token, [position]);
    else if (list.length < 256 && list[list.length - 1] !== position) list.push(position);
  }
  return [...positions].map(([token, at]) => `${quoteLexeme(token)}:${at.join(',')}`).join(' ');
}

/**
 * The tsquery for a user's query, the same shape as the FTS5 expression (./session-search.ts
 * ftsMatch): every word a phrase of its folded tokens, the last one a prefix, all required.
 * Undefined when the query has no letter or digit.
 */
export function tsqueryOf(query: string): string | undefined {
  const phrases = query
    .split(/\s+/u)
    .map((word) => (word.match(SEARCH_TOKEN) ?? []).map(foldToken).filter(Boolean))
    .filter((tokens) => tokens.length > 0)
    .map((tokens) =>
      tokens.map((token, i) => `${quoteLexeme(token)}${i === tokens.length - 1 ? ':*' : ''}`).join(' <-> '),
    );
  return phrases.length > 0 ? phrases.map((p) => `(${p})`).join(' & ') : undefined;
}

const quoteLexeme = (token: string) => `'${token.replace(/['\\]/g, (c) => c + c)}'`;
