/**
 * Session search on PostgreSQL (issue 18): the same answer as ./session-search.ts over the
 * tsvector index (message_search_docs.terms, GIN). Sessions are ranked by their best message
 * (ts_rank; `score` is its negation so that, as with bm25, lower is better), each with a snippet
 * of that message; sessions found only by their title follow, newest first. The user's text
 * becomes a tsquery of quoted lexemes (./search-doc.ts), never tsquery syntax.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { foldToken, SEARCH_TOKEN, tsqueryOf } from './search-doc';
import { snippetOf, titleNeedle, titleSnippet } from './session-search';
import type { MessageRole, Session, SessionRow, SessionSearchHit, SessionSearchOptions } from './types';

interface HitRow {
  session_id: string;
  message_id: string;
  role: MessageRole;
  created_at: number;
  body: string;
  score: number;
}

export function createPostgresSessionSearch(deps: {
  sql: SqlClient;
  toSession: (row: SessionRow) => Session;
  /** The redactor's `string`, run over stored text before a snippet is cut (./session-search.ts). */
  redact?: (text: string) => string;
}): (query: string, options?: SessionSearchOptions) => Promise<SessionSearchHit[]> {
  const { sql } = deps;
  const sessionsById = async (ids: string[]) => {
    if (ids.length === 0) return new Map<string, Session>();
    const rows = await sql.query<SessionRow>('SELECT * FROM sessions WHERE id = ANY($1::text[])', [ids]);
    return new Map(rows.map((row) => [row.id, deps.toSession(row)]));
  };
  return async (query, options = {}) => {
    const limit = options.limit ?? 20;
    const tsquery = tsqueryOf(query);
    const hits = tsquery ? await messageHits(sql, tsquery, options, limit) : [];
    const sessions = await sessionsById(hits.map((h) => h.session_id));
    const terms = (query.match(SEARCH_TOKEN) ?? []).map(foldToken);
    const results: SessionSearchHit[] = [];
    for (const hit of hits) {
      const session = sessions.get(hit.session_id);
      if (!session) continue;
      const { snippet, highlight } = snippetOf(hit.body, terms, deps.redact);
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
    const like = `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const titled = await sql.query<SessionRow>(
      `SELECT * FROM sessions WHERE title ILIKE $1 ESCAPE '\\' AND ($2::text IS NULL OR id = $2)
         ORDER BY updated_at DESC, id DESC LIMIT $3`,
      [like, options.session_id ?? null, limit],
    );
    for (const row of titled) {
      if (results.length >= limit) break;
      if (!seen.has(row.id))
        results.push({ session: deps.toSession(row), snippet: titleSnippet(row.title, needle, deps.redact) });
    }
    return results;
  };
}

/** Each session's best matching message, best sessions first. */
function messageHits(sql: SqlClient, tsquery: string, filter: SessionSearchOptions, limit: number) {
  return sql.query<HitRow>(
    `SELECT * FROM (
       SELECT DISTINCT ON (d.session_id) d.session_id, d.message_id, d.role, d.created_at, d.body,
              -ts_rank(d.terms, q.query)::float8 AS score
         FROM message_search_docs d, (SELECT $1::tsquery AS query) q
        WHERE d.terms @@ q.query
          AND ($2::text IS NULL OR d.session_id = $2)
          AND ($3::text IS NULL OR d.role = $3)
          AND ($4::text IS NULL OR position(',' || $4 || ',' IN d.tools) > 0)
          AND ($5::bigint IS NULL OR d.created_at >= $5)
          AND ($6::bigint IS NULL OR d.created_at <= $6)
        ORDER BY d.session_id, score, d.id DESC) best
     ORDER BY score, session_id
     LIMIT $7`,
    [
      tsquery,
      filter.session_id ?? null,
      filter.role ?? null,
      filter.tool ?? null,
      filter.since ?? null,
      filter.until ?? null,
      limit,
    ],
  );
}
