/**
 * The messages of sessions in svc.db: append, update, read, delete. Part of the session store
 * (./session-store.ts), which owns the sessions table and hands this its statement cache.
 * @module
 */
import { SvcError } from '../errors';
import { type Db, groupCommit } from '../store/db';
import type { statementCache } from '../store/statement-cache';
import type { Clock, Ids } from '../util/ids';
import type { Message, MessagePart, MessageRow, SessionRow, SessionStore } from './types';
import type { WrittenMessages } from './written-messages';

export type MessageStore = Pick<
  SessionStore,
  'appendMessage' | 'updateMessage' | 'getMessage' | 'messages' | 'deleteMessage' | 'messageCount'
>;

export const toMessage = (row: MessageRow): Message => ({
  ...row,
  parts: JSON.parse(row.parts),
  usage: row.usage ? JSON.parse(row.usage) : null,
});

/** The message an append returns, as a read would return it (the caller's parts stay its own). */
export function appendedMessage(
  input: AppendInput,
  id: string,
  partsJson: string,
  now: number,
  finishedAt: number | null,
): Message {
  return {
    id,
    session_id: input.session_id,
    role: input.role,
    parts: JSON.parse(partsJson) as MessagePart[],
    model: input.model ?? null,
    provider: input.provider ?? null,
    usage: input.usage ? { ...input.usage } : null,
    cost: input.cost ?? 0,
    run_id: input.run_id ?? null,
    created_at: now,
    updated_at: now,
    finished_at: finishedAt,
  };
}
type AppendInput = Parameters<SessionStore['appendMessage']>[0];

export function createMessageStore(deps: {
  db: () => Db;
  sql: ReturnType<typeof statementCache>;
  clock: Clock;
  ids: Ids;
  /** Throws not_found when the session does not exist. */
  requireSession: (id: string) => unknown;
  /** The session row as this store's write just returned it (the session store's memo). */
  sessionWritten?: (row: SessionRow | undefined, id: string) => void;
  /** The messages written in the current transaction (./written-messages.ts). */
  written?: WrittenMessages;
}): MessageStore {
  const { db, sql, written } = deps;
  const getMessage = (id: string) => {
    const row =
      written?.row(id) ?? (sql('SELECT * FROM messages WHERE id = ?').get(id) as MessageRow | undefined);
    return row ? toMessage(row) : undefined;
  };
  return {
    async appendMessage(input) {
      groupCommit(db());
      const now = deps.clock.now();
      // The session must exist; checked by the UPDATE below (one statement instead of a read),
      // which hands the row back for the session store's memo (a read after it is answered).
      const session = sql('UPDATE sessions SET updated_at = ? WHERE id = ? RETURNING *').get(
        now,
        input.session_id,
      ) as SessionRow | undefined;
      if (!session) deps.requireSession(input.session_id);
      deps.sessionWritten?.(session, input.session_id);
      const id = deps.ids.next('msg');
      const partsJson = JSON.stringify(input.parts);
      const row = sql(
        `INSERT INTO messages (id, session_id, role, parts, model, provider, usage, cost, run_id, created_at, updated_at, finished_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
      ).get(
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
        input.finished === false ? null : now,
      ) as MessageRow;
      written?.wrote(row);
      return appendedMessage(input, id, partsJson, now, input.finished === false ? null : now);
    },
    async updateMessage(id, patch) {
      groupCommit(db());
      const now = deps.clock.now();
      // One statement: fields left out of the patch keep their stored value; the row as updated
      // comes back with it (no read after the write).
      const row = sql(
        `UPDATE messages SET parts = coalesce(?, parts), usage = CASE WHEN ? THEN ? ELSE usage END,
           cost = coalesce(?, cost), updated_at = ?, finished_at = CASE WHEN ? THEN ? ELSE finished_at END
         WHERE id = ? RETURNING *`,
      ).get(
        patch.parts ? JSON.stringify(patch.parts) : null,
        patch.usage === undefined ? 0 : 1,
        patch.usage ? JSON.stringify(patch.usage) : null,
        patch.cost ?? null,
        now,
        patch.finished ? 1 : 0,
        now,
        id,
      ) as MessageRow | undefined;
      if (!row) throw new SvcError('not_found', `message_id: no message "${id}"`);
      written?.wrote(row);
      return toMessage(row);
    },
    getMessage: async (id) => getMessage(id),
    async messages(sessionId, options = {}) {
      const rows =
        written?.list(sessionId) ??
        (sql('SELECT * FROM messages WHERE session_id = ? ORDER BY created_at, rowid').all(
          sessionId,
        ) as MessageRow[]);
      let list = rows.map(toMessage);
      if (options.after) {
        const index = list.findIndex((m) => m.id === options.after);
        list = index === -1 ? list : list.slice(index + 1);
      }
      return options.limit ? list.slice(-options.limit) : list;
    },
    async deleteMessage(id) {
      written?.deleted(id);
      const result = sql('DELETE FROM messages WHERE id = ?').run(id);
      if (result.changes === 0) throw new SvcError('not_found', `message_id: no message "${id}"`);
    },
    async messageCount(sessionId) {
      return (
        sql('SELECT count(*) AS n FROM messages WHERE session_id = ?').get(sessionId) as {
          n: number;
        }
      ).n;
    },
  };
}
