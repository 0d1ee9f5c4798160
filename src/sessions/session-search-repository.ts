/**
 * The SQL of session search (issue 22 item 3): the FTS5 index `message_search` over
 * `message_search_docs` (kept in sync by triggers, see src/store/migrations/session-search.ts)
 * and the session titles. Filters are structured, never SQL fragments; the MATCH expression is
 * built from quoted phrases by ./session-search.ts.
 * @module
 */
import type { Db } from '../store/db';
import { statementCache } from '../store/statement-cache';
import type { MessageRole, Session, SessionRow } from './types';

export interface MessageHitFilter {
  session_id?: string;
  role?: MessageRole;
  tool?: string;
  since?: number;
  until?: number;
}

/** A session's best-ranked matching message. */
export interface MessageHitRow {
  session_id: string;
  message_id: string;
  role: MessageRole;
  created_at: number;
  doc: number;
  score: number;
}

export interface SessionSearchRepository {
  /** Sessions with a message matching `match`, best bm25 first, each with its best message. */
  messageHits(match: string, filter: MessageHitFilter, limit: number): MessageHitRow[];
  /** The snippet of one indexed message for `match`, matched terms between `open` and `close`. */
  snippet(match: string, doc: number, open: string, close: string): string | undefined;
  /** Sessions whose title contains the text (LIKE, case-insensitive for ASCII), newest first. */
  titleHits(text: string, sessionId: string | undefined, limit: number): Session[];
}

export function createSessionSearchRepository(db: () => Db): SessionSearchRepository {
  const sql = statementCache(db);
  return {
    messageHits(match, filter, limit) {
      return sql(
        `WITH f AS MATERIALIZED (
           SELECT rowid, bm25(message_search) AS score FROM message_search WHERE message_search MATCH @match)
         SELECT d.session_id, d.message_id, d.role, d.created_at, d.id AS doc, min(f.score) AS score
           FROM f JOIN message_search_docs d ON d.id = f.rowid
          WHERE (@session_id IS NULL OR d.session_id = @session_id)
            AND (@role IS NULL OR d.role = @role)
            AND (@tool IS NULL OR instr(d.tools, ',' || @tool || ',') > 0)
            AND (@since IS NULL OR d.created_at >= @since)
            AND (@until IS NULL OR d.created_at <= @until)
          GROUP BY d.session_id
          ORDER BY score, d.session_id
          LIMIT @limit`,
      ).all({
        match,
        session_id: filter.session_id ?? null,
        role: filter.role ?? null,
        tool: filter.tool ?? null,
        since: filter.since ?? null,
        until: filter.until ?? null,
        limit,
      }) as MessageHitRow[];
    },
    snippet(match, doc, open, close) {
      const row = sql(
        `SELECT snippet(message_search, 0, @open, @close, '…', 24) AS text
           FROM message_search WHERE message_search MATCH @match AND rowid = @doc`,
      ).get({ match, doc, open, close }) as { text: string } | undefined;
      return row?.text;
    },
    titleHits(text, sessionId, limit) {
      const like = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      const rows = sql(
        `SELECT * FROM sessions WHERE title LIKE @like ESCAPE '\\' AND (@session_id IS NULL OR id = @session_id)
           ORDER BY updated_at DESC, id DESC LIMIT @limit`,
      ).all({ like, session_id: sessionId ?? null, limit }) as SessionRow[];
      return rows.map((row) => ({ ...row, metadata: JSON.parse(row.metadata) }));
    },
  };
}
