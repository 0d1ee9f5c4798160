/**
 * The messages of sessions on PostgreSQL (issue 18): the async twin of ./message-store.ts, with
 * the search index row (./search-doc.ts) written in the same transaction as the message.
 * @module
 */
import { SvcError } from '../errors';
import type { SqlClient, SqlExecutor } from '../store/postgres/client';
import type { Clock, Ids } from '../util/ids';
import type { AsyncOf } from './async-of';
import { appendedMessage, toMessage } from './message-store';
import { searchDocOf, tsvectorOf } from './search-doc';
import type { Message, MessagePart, MessageRow, SessionStore } from './types';

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
      const found = await sql.transaction(async (tx) => {
        if (
          (await tx.run('UPDATE sessions SET updated_at = $1 WHERE id = $2', [now, input.session_id])) === 0
        )
          return false;
        await tx.run(
          `INSERT INTO messages (${MESSAGE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
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
            now,
            finishedAt,
          ],
        );
        await writeSearchDoc(
          tx,
          { id, session_id: input.session_id, role: input.role, created_at: now },
          input.parts,
        );
        return true;
      });
      if (!found) await deps.requireSession(input.session_id);
      return appendedMessage(input, id, partsJson, now, finishedAt);
    },
    async updateMessage(id, patch) {
      const now = deps.clock.now();
      const row = await sql.transaction(async (tx) => {
        // One statement: fields left out of the patch keep their stored value.
        const updated = await tx.one<MessageRow>(
          `UPDATE messages SET parts = coalesce($1, parts), usage = CASE WHEN $2 THEN $3 ELSE usage END,
             cost = coalesce($4, cost), updated_at = $5, finished_at = CASE WHEN $6 THEN $5 ELSE finished_at END
           WHERE id = $7 RETURNING ${MESSAGE_COLUMNS}`,
          [
            patch.parts ? JSON.stringify(patch.parts) : null,
            patch.usage !== undefined,
            patch.usage ? JSON.stringify(patch.usage) : null,
            patch.cost ?? null,
            now,
            patch.finished === true,
            id,
          ],
        );
        if (updated && patch.parts) await updateSearchDoc(tx, id, patch.parts);
        return updated;
      });
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

async function writeSearchDoc(
  tx: SqlExecutor,
  message: { id: string; session_id: string; role: string; created_at: number },
  parts: readonly MessagePart[],
): Promise<void> {
  const doc = searchDocOf(parts);
  await tx.run(
    `INSERT INTO message_search_docs (message_id, session_id, role, tools, created_at, body, terms)
       VALUES ($1, $2, $3, $4, $5, $6, $7::tsvector)`,
    [
      message.id,
      message.session_id,
      message.role,
      doc.tools,
      message.created_at,
      doc.body,
      tsvectorOf(doc.body),
    ],
  );
}

async function updateSearchDoc(
  tx: SqlExecutor,
  messageId: string,
  parts: readonly MessagePart[],
): Promise<void> {
  const doc = searchDocOf(parts);
  await tx.run(
    'UPDATE message_search_docs SET tools = $1, body = $2, terms = $3::tsvector WHERE message_id = $4',
    [doc.tools, doc.body, tsvectorOf(doc.body), messageId],
  );
}
