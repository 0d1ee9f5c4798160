/**
 * The SQL of session search (issue 22 item 3): the FTS5 index `message_search` over
 * `message_search_docs` (written from a log of message writes, brought up to date by `catchUp`
 * before each search: src/store/message-search-log.ts) and the session titles. Snippets are cut from the indexed text in ./session-search.ts (one read
 * for all hits: FTS5's snippet() seeks the whole doclist of a common term once per row). Filters are structured, never SQL fragments; the MATCH expression is
 * built from quoted phrases by ./session-search.ts.
 * @module
 */
import type { Db } from '../store/db';
import { catchUpMessageSearch } from '../store/message-search-log';
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

/** A range of index rowids (message_search_docs.id, in write order), both ends included. */
export interface DocRange {
  lo: number;
  hi: number;
}

export const ALL_DOCS: DocRange = { lo: 0, hi: Number.MAX_SAFE_INTEGER };

export interface SessionSearchRepository {
  /**
   * Bring the index up to date before it is read, where it is written behind the messages
   * (SQLite: from the log of message writes, ../store/message-search-log.ts).
   */
  catchUp?(): void;
  /**
   * Sessions with a message matching `match` within `range`, best bm25 first, each with its
   * best message.
   */
  messageHits(match: string, filter: MessageHitFilter, range: DocRange, limit: number): MessageHitRow[];
  /** The rowids the session and date filters can match (empty: lo > hi). */
  docRange(filter: MessageHitFilter): DocRange;
  /** The rowid of the (skip+1)-th newest message matching `match` in `range`; undefined when fewer. */
  newestMatch(match: string, range: DocRange, skip: number): number | undefined;
  /** The indexed text of these messages (by rowid). */
  bodies(docs: number[]): Map<number, string>;
  /** Sessions whose title contains the text (LIKE, case-insensitive for ASCII), newest first. */
  titleHits(text: string, sessionId: string | undefined, limit: number): Session[];
}

export function createSessionSearchRepository(db: () => Db): SessionSearchRepository {
  const sql = statementCache(db);
  return {
    catchUp: () => catchUpMessageSearch(db()),
    messageHits(match, filter, range, limit) {
      return sql(
        `WITH f AS MATERIALIZED (
           SELECT rowid, bm25(message_search) AS score FROM message_search
            WHERE message_search MATCH @match AND rowid >= @lo AND rowid <= @hi)
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
        lo: range.lo,
        hi: range.hi,
        limit,
      }) as MessageHitRow[];
    },
    docRange(filter) {
      const row = sql(
        `SELECT min(id) AS lo, max(id) AS hi FROM message_search_docs
          WHERE (@session_id IS NULL OR session_id = @session_id)
            AND (@since IS NULL OR created_at >= @since)
            AND (@until IS NULL OR created_at <= @until)`,
      ).get({
        session_id: filter.session_id ?? null,
        since: filter.since ?? null,
        until: filter.until ?? null,
      }) as { lo: number | null; hi: number | null };
      return row.lo === null || row.hi === null ? { lo: 1, hi: 0 } : { lo: row.lo, hi: row.hi };
    },
    newestMatch(match, range, skip) {
      const row = sql(
        range === ALL_DOCS
          ? 'SELECT rowid AS id FROM message_search WHERE message_search MATCH @match ORDER BY rowid DESC LIMIT 1 OFFSET @skip'
          : `SELECT rowid AS id FROM message_search WHERE message_search MATCH @match AND rowid >= @lo AND rowid <= @hi
              ORDER BY rowid DESC LIMIT 1 OFFSET @skip`,
      ).get(range === ALL_DOCS ? { match, skip } : { match, lo: range.lo, hi: range.hi, skip }) as
        | { id: number }
        | undefined;
      return row?.id;
    },
    bodies(docs) {
      const rows = sql(
        'SELECT id, body FROM message_search_docs WHERE id IN (SELECT value FROM json_each(?))',
      ).all(JSON.stringify(docs)) as { id: number; body: string }[];
      return new Map(rows.map((row) => [row.id, row.body]));
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
