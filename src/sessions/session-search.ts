/**
 * Session search (issue 22 item 3): ranked full-text search over message text and tool output
 * through the FTS5 index (./session-search-repository.ts), plus the session titles. A session is
 * found by its best-ranked message (bm25), with a snippet of it; sessions found only by their
 * title follow, newest first. The user's text never reaches FTS5 syntax: each word becomes a
 * quoted prefix phrase, so quotes, `*`, `NEAR`, `-`, parentheses or any script cannot throw.
 * @module
 */
import type { SessionSearchRepository } from './session-search-repository';
import type { Session, SessionSearchHit, SessionSearchOptions } from './types';

/** Snippet markers: control characters that never occur in indexed text worth showing. */
const OPEN = '\u0002';
const CLOSE = '\u0003';

/**
 * The FTS5 MATCH expression for a user's query: every whitespace-separated word as a quoted
 * phrase of its letters and digits with a prefix star (`zebra` finds `zebras`, `needle-42` the
 * phrase `needle 42`), all required. Undefined when the query has no letter or digit at all.
 */
export function ftsMatch(query: string): string | undefined {
  const phrases = query
    .split(/\s+/u)
    .map((word) => (word.match(/[\p{L}\p{N}\p{M}\p{Co}]+/gu) ?? []).join(' '))
    .filter((tokens) => tokens.length > 0)
    .map((tokens) => `"${tokens.replaceAll('"', '""')}"*`);
  return phrases.length > 0 ? phrases.join(' AND ') : undefined;
}

export function createSessionSearch(deps: {
  repository: SessionSearchRepository;
  get: (id: string) => Session | undefined;
}): (query: string, options?: SessionSearchOptions) => SessionSearchHit[] {
  return (query, options = {}) => {
    const limit = options.limit ?? 20;
    const match = ftsMatch(query);
    const results: SessionSearchHit[] = [];
    for (const hit of match ? deps.repository.messageHits(match, options, limit) : []) {
      const session = deps.get(hit.session_id);
      if (!session || !match) continue;
      const marked = deps.repository.snippet(match, hit.doc, OPEN, CLOSE) ?? '';
      results.push({
        session,
        snippet: marked.replaceAll(OPEN, '').replaceAll(CLOSE, ''),
        highlight: marked.replaceAll(OPEN, '**').replaceAll(CLOSE, '**'),
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
    const seen = new Set(results.map((r) => r.session.id));
    for (const session of deps.repository.titleHits(query, options.session_id, limit)) {
      if (results.length >= limit) break;
      if (!seen.has(session.id)) results.push({ session, snippet: titleSnippet(session.title, query) });
    }
    return results;
  };
}

function titleSnippet(title: string, query: string): string {
  const index = title.toLowerCase().indexOf(query.toLowerCase());
  if (index === -1) return title.slice(0, 120);
  return title.slice(Math.max(0, index - 40), index + query.length + 80);
}
