/**
 * The messages of sessions on PostgreSQL (issue 18): the async twin of ./message-store.ts, with
 * the search index row (./search-doc.ts) written in the same statement as the message.
 * @module
 */
import { SvcError } from '../errors';
import type { SqlClient } from '../store/postgres/client';
import { remember } from '../store/read-scope';
import type { Clock, Ids } from '../util/ids';
import type { AsyncOf } from './async-of';
import { appendedMessage, toMessage } from './message-store';
import { sessionRowKey, wroteSession } from './pg-session-rows';
import { searchDocOf, tsvectorOf } from './search-doc';
import type { Message, MessageRow, SessionRow, SessionStore } from './types';

export type PostgresMessageStore = AsyncOf<
  Pick<
    SessionStore,
    'appendMessage' | 'updateMessage' | 'getMessage' | 'messages' | 'deleteMessage' | 'messageCount'
  >
>;

/** The message columns (row_seq, PostgreSQL's stand-in for SQLite's rowid, is left out). */
const MESSAGE_COLUMNS =
  'id, session_id, role, parts, model, provider, usage, cost, run_id, created_at, updated_at, finished_at';

export function createPostgresMessageStore(deps: {
  sql: SqlClient;
  clock: Clock;
  ids: Ids;
  /** Throws not_found when the session does not exist. */
  requireSession: (id: string) => Promise<unknown>;
}): PostgresMessageStore {
  const { sql } = deps;
  const getMessage = async (id: string) => {
    const row = await sql.one<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE id = $1`, [id]);
    return row ? toMessage(row) : undefined;
  };
  return {
    async appendMessage(input) {
      const now = deps.clock.now();
      const id = deps.ids.next('msg');
      const partsJson = JSON.stringify(input.parts);
      const finishedAt = input.finished === false ? null : now;
      const doc = searchDocOf(input.parts);
      // One statement: the session's updated_at, the message, its search row (none of them when
      // the session does not exist).
      // The session's row as written comes back: the read scope's copy (../store/read-scope.ts).
      const session = await sql.one<SessionRow>(
        `WITH s AS (UPDATE sessions SET updated_at = $10 WHERE id = $2 RETURNING *),
         m AS (INSERT INTO messages (${MESSAGE_COLUMNS})
                 SELECT $1, s.id, $3, $4, $5, $6, $7, $8::double precision, $9, $10::bigint, $10::bigint, $11::bigint FROM s
                 RETURNING id, session_id, role, created_at),
         d AS (INSERT INTO message_search_docs (message_id, session_id, role, tools, created_at, body, terms)
                 SELECT m.id, m.session_id, m.role, $12, m.created_at, $13, $14::tsvector FROM m)
         SELECT * FROM s`,
        [
          id,
          input.session_id,
          input.role,
          partsJson,
          input.model ?? null,
          input.provider ?? null,
          input.usage ? JSON.stringify(input.usage) : null,
          input.cost ?? 0,
          input.run_id ?? null,
          now,
          finishedAt,
          doc.tools,
          doc.body,
          tsvectorOf(doc.body),
        ],
      );
      wroteSession(sql, input.session_id); // its updated_at
      if (session) remember(sessionRowKey(session.id), session);
      else await deps.requireSession(input.session_id);
      return appendedMessage(input, id, partsJson, now, finishedAt);
    },
    async updateMessage(id, patch) {
      const now = deps.clock.now();
      const doc = patch.parts ? searchDocOf(patch.parts) : undefined;
      // One statement: fields left out of the patch keep their stored value; the search row
      // follows new parts.
      const row = await sql.one<MessageRow>(
        `WITH m AS (UPDATE messages SET parts = coalesce($1, parts), usage = CASE WHEN $2 THEN $3 ELSE usage END,
             cost = coalesce($4, cost), updated_at = $5, finished_at = CASE WHEN $6 THEN $5 ELSE finished_at END
           WHERE id = $7 RETURNING ${MESSAGE_COLUMNS}),
         d AS (UPDATE message_search_docs SET tools = $9, body = $10, terms = $11::tsvector
           WHERE $8 AND message_id = (SELECT id FROM m))
         SELECT * FROM m`,
        [
          patch.parts ? JSON.stringify(patch.parts) : null,
          patch.usage !== undefined,
          patch.usage ? JSON.stringify(patch.usage) : null,
          patch.cost ?? null,
          now,
          patch.finished === true,
          id,
          doc !== undefined,
          doc?.tools ?? '',
          doc?.body ?? '',
          doc ? tsvectorOf(doc.body) : '',
        ],
      );
      if (!row) throw new SvcError('not_found', `message_id: no message "${id}"`);
      return toMessage(row);
    },
    getMessage,
    async messages(sessionId, options = {}) {
      const rows = await sql.query<MessageRow>(
        `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE session_id = $1 ORDER BY created_at, row_seq`,
        [sessionId],
      );
      let list: Message[] = rows.map(toMessage);
      if (options.after) {
        const index = list.findIndex((m) => m.id === options.after);
        list = index === -1 ? list : list.slice(index + 1);
      }
      return options.limit ? list.slice(-options.limit) : list;
    },
    async deleteMessage(id) {
      // The search row goes with it (ON DELETE CASCADE).
      if ((await sql.run('DELETE FROM messages WHERE id = $1', [id])) === 0)
        throw new SvcError('not_found', `message_id: no message "${id}"`);
    },
    async messageCount(sessionId) {
      const row = await sql.one<{ n: number }>('SELECT count(*) AS n FROM messages WHERE session_id = $1', [
        sessionId,
      ]);
      return row?.n ?? 0;
    },
  };
}
