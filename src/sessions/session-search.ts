/**
 * Session search (issue 22 item 3): ranked full-text search over message text and tool output
 * through the FTS5 index (./session-search-repository.ts), plus the session titles. A session is
 * found by its best-ranked message (bm25), with a snippet of it; sessions found only by their
 * title follow, newest first. The user's text never reaches FTS5 syntax: each word becomes a
 * quoted prefix phrase, so quotes, `*`, `NEAR`, `-`, parentheses or any script cannot throw.
 * @module
 */
import {
  ALL_DOCS,
  type DocRange,
  type MessageHitRow,
  type SessionSearchRepository,
} from './session-search-repository';
import type { Session, SessionSearchHit, SessionSearchOptions } from './types';

/** Letters, digits and marks: the characters FTS5's unicode61 tokenizer keeps in a token. */
const TOKEN = /[\p{L}\p{N}\p{M}\p{Co}]+/gu;
/** Tokens of context a snippet shows around its first matched term. */
const SNIPPET_TOKENS = 24;

/** A token as unicode61 with remove_diacritics compares it: no accents, lower case. */
const fold = (token: string) => token.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();

/**
 * The FTS5 MATCH expression for a user's query: every whitespace-separated word as a quoted
 * phrase of its letters and digits with a prefix star (`zebra` finds `zebras`, `needle-42` the
 * phrase `needle 42`), all required. Undefined when the query has no letter or digit at all.
 */
export function ftsMatch(query: string): string | undefined {
  const phrases = query
    .split(/\s+/u)
    .map((word) => (word.match(TOKEN) ?? []).join(' '))
    .filter((tokens) => tokens.length > 0)
    .map((tokens) => `"${tokens.replaceAll('"', '""')}"*`);
  return phrases.length > 0 ? phrases.join(' AND ') : undefined;
}

export function createSessionSearch(deps: {
  repository: SessionSearchRepository;
  get: (id: string) => Promise<Session | undefined>;
  /** Matches ranked in the first window (FIRST_WINDOW; tests pass a small one). */
  firstWindow?: number;
  /** The redactor's `string`: stored text is redacted before a snippet is cut or highlighted. */
  redact?: (text: string) => string;
}): (query: string, options?: SessionSearchOptions) => Promise<SessionSearchHit[]> {
  return async (query, options = {}) => {
    const limit = options.limit ?? 20;
    const match = ftsMatch(query);
    if (match) deps.repository.catchUp?.();
    const results: SessionSearchHit[] = [];
    const hits = match
      ? rankedHits(deps.repository, match, options, limit, deps.firstWindow ?? FIRST_WINDOW)
      : [];
    const bodies =
      hits.length > 0 ? deps.repository.bodies(hits.map((h) => h.doc)) : new Map<number, string>();
    const terms = (query.match(TOKEN) ?? []).map(fold);
    for (const hit of hits) {
      const session = await deps.get(hit.session_id);
      if (!session) continue;
      const { snippet, highlight } = snippetOf(bodies.get(hit.doc) ?? '', terms, deps.redact);
      results.push({
        session,
        snippet,
        highlight,
        message_id: hit.message_id,
        role: hit.role,
        matched_at: hit.created_at,
        score: hit.score,
      });
    }
    // Role, tool and date filter messages: a title alone cannot satisfy them.
    const messageFilter =
      options.role !== undefined ||
      options.tool !== undefined ||
      options.since !== undefined ||
      options.until !== undefined;
    if (messageFilter || results.length >= limit) return results;
    const needle = titleNeedle(query);
    if (needle === undefined) return results;
    const seen = new Set(results.map((r) => r.session.id));
    for (const session of deps.repository.titleHits(needle, options.session_id, limit)) {
      if (results.length >= limit) break;
      if (!seen.has(session.id))
        results.push({ session, snippet: titleSnippet(session.title, needle, deps.redact) });
    }
    return results;
  };
}

/** Messages ranked at first: the newest this many matches; widened ×WIDEN until enough sessions. */
export const FIRST_WINDOW = 5000;
const WIDEN = 10;

/**
 * Sessions by their best message. bm25 costs time in proportion to the messages matched, so a
 * query matching more than FIRST_WINDOW messages ranks the newest FIRST_WINDOW of them, widening
 * the window (×10) until it yields `limit` sessions or covers every match. The session and date
 * filters narrow the rowid range first (rowids follow write order).
 */
function rankedHits(
  repository: SessionSearchRepository,
  match: string,
  options: SessionSearchOptions,
  limit: number,
  firstWindow: number,
): MessageHitRow[] {
  const narrowed =
    options.session_id !== undefined || options.since !== undefined || options.until !== undefined;
  const range: DocRange = narrowed ? repository.docRange(options) : ALL_DOCS;
  if (range.lo > range.hi) return [];
  for (let window = firstWindow; ; window *= WIDEN) {
    const oldest = repository.newestMatch(match, range, window - 1);
    const hits = repository.messageHits(match, options, { lo: oldest ?? range.lo, hi: range.hi }, limit);
    if (oldest === undefined || oldest === range.lo || hits.length >= limit) return hits;
  }
}

const asIs = (text: string) => text;

/**
 * The text around the first token that starts with a query term (as FTS5 matched it: prefix,
 * case- and accent-insensitive), SNIPPET_TOKENS tokens wide, `…` where it is cut; the highlight
 * wraps every matched token in `**`. The whole text is redacted first: a secret cut in two by the
 * snippet's edge, or split by the `**` markers (`**ghp**_…`), no longer has the shape the redactor
 * knows.
 */
export function snippetOf(
  stored: string,
  terms: string[],
  redact: (text: string) => string = asIs,
): { snippet: string; highlight: string } {
  const body = redact(stored);
  const tokens = [...body.matchAll(TOKEN)].map((m) => ({
    start: m.index,
    end: m.index + m[0].length,
    hit: terms.some((term) => fold(m[0]).startsWith(term)),
  }));
  if (tokens.length === 0) return { snippet: body.slice(0, 120), highlight: body.slice(0, 120) };
  const first = Math.max(
    0,
    tokens.findIndex((t) => t.hit),
  );
  const from = Math.max(0, first - Math.floor(SNIPPET_TOKENS / 4));
  const to = Math.min(tokens.length, from + SNIPPET_TOKENS);
  const start = from === 0 ? 0 : tokens[from]!.start;
  const end = to === tokens.length ? body.length : tokens[to - 1]!.end;
  const prefix = from === 0 ? '' : '…';
  const suffix = to === tokens.length ? '' : '…';
  let highlight = '';
  let at = start;
  for (const token of tokens.slice(from, to)) {
    if (!token.hit) continue;
    highlight += `${body.slice(at, token.start)}**${body.slice(token.start, token.end)}**`;
    at = token.end;
  }
  highlight += body.slice(at, end);
  const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();
  return {
    snippet: oneLine(prefix + body.slice(start, end) + suffix),
    highlight: oneLine(prefix + highlight + suffix),
  };
}

/**
 * The text a session's title is searched for: the query without NULs and the spaces around it;
 * undefined when nothing is left, which no title is matched by (a blank or NUL query matched every
 * title, found by probing: SQLite's LIKE ends its pattern at a NUL).
 */
export function titleNeedle(query: string): string | undefined {
  const needle = query.replaceAll('\u0000', '').trim();
  return needle === '' ? undefined : needle;
}

/** The (redacted) title around the first case-insensitive occurrence of the query. */
export function titleSnippet(stored: string, query: string, redact: (text: string) => string = asIs): string {
  const title = redact(stored);
  const index = title.toLowerCase().indexOf(query.toLowerCase());
  if (index === -1) return title.slice(0, 120);
  return title.slice(Math.max(0, index - 40), index + query.length + 80);
}
