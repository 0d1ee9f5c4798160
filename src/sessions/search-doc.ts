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
/** Tokens indexed per message at most. */
const MAX_TOKENS = 50_000;
/** PostgreSQL keeps positions up to this value. */
const MAX_POSITION = 16_383;
/**
 * A lexeme's UTF-8 bytes at most: PostgreSQL refuses one of 2,047 or more (`word is too long`).
 * A longer token (a base64 blob, a long URL or token) is indexed as its first 1,024 bytes, cut at
 * a character, and so is a query's word: it still finds the message by a prefix or in full.
 */
export const MAX_LEXEME_BYTES = 1_024;
/**
 * What a message's tsvector holds at most, in PostgreSQL's count (each lexeme's bytes, aligned,
 * plus 2 bytes for its position count and 2 per position): it refuses one over 1,048,575 bytes
 * (`string is too long for tsvector`). Tokens past it are not indexed.
 */
export const MAX_TSVECTOR_BYTES = 1_000_000;

export const foldToken = (token: string) => token.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();

/** A folded token as PostgreSQL indexes it: at most MAX_LEXEME_BYTES of UTF-8, cut at a character. */
export function lexemeOf(token: string): string {
  const folded = foldToken(token);
  if (folded.length * 3 <= MAX_LEXEME_BYTES) return folded;
  let bytes = 0;
  let end = 0;
  for (const char of folded) {
    bytes += utf8Bytes(char);
    if (bytes > MAX_LEXEME_BYTES) break;
    end += char.length;
  }
  return folded.slice(0, end);
}

/** A string's length in UTF-8 bytes. */
function utf8Bytes(text: string): number {
  let bytes = 0;
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return bytes;
}

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

/**
 * The body as a PostgreSQL tsvector literal: `'kraken':1 'appears':2`, lexemes (lexemeOf) in
 * order, up to MAX_TOKENS tokens and MAX_TSVECTOR_BYTES: PostgreSQL accepts any body's.
 */
export function tsvectorOf(body: string): string {
  const positions = new Map<string, number[]>();
  let index = 0;
  let size = 0;
  for (const match of body.matchAll(SEARCH_TOKEN)) {
    if (index >= MAX_TOKENS) break;
    index++;
    const token = lexemeOf(match[0]);
    if (!token) continue;
    const list = positions.get(token);
    const position = Math.min(index, MAX_POSITION);
    if (list && (list.length >= 256 || list[list.length - 1] === position)) continue;
    const bytes = list ? 2 : utf8Bytes(token) + 1 + 4;
    if (size + bytes > MAX_TSVECTOR_BYTES) break;
    size += bytes;
    if (!list) positions.set(token, [position]);
    else list.push(position);
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
    .map((word) => (word.match(SEARCH_TOKEN) ?? []).map(lexemeOf).filter(Boolean))
    .filter((tokens) => tokens.length > 0)
    .map((tokens) =>
      tokens.map((token, i) => `${quoteLexeme(token)}${i === tokens.length - 1 ? ':*' : ''}`).join(' <-> '),
    );
  return phrases.length > 0 ? phrases.map((p) => `(${p})`).join(' & ') : undefined;
}

const quoteLexeme = (token: string) => `'${token.replace(/['\\]/g, (c) => c + c)}'`;
