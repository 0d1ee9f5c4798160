/**
 * The messages of sessions in svc.db: append, update, read, delete. Part of the session store
 * (./session-store.ts), which owns the sessions table and hands this its statement cache.
 * @module
 */
import { SvcError } from '../errors';
import { type Db, groupCommit } from '../store/db';
import { catchUpSoon } from '../store/message-search-log';
import type { statementCache } from '../store/statement-cache';
import type { Clock, Ids } from '../util/ids';
import type { Message, MessagePart, MessagePatch, MessageRow, SessionStore } from './types';
import type { WrittenMessages } from './written-messages';

export type MessageStore = Pick<
  SessionStore,
  'appendMessage' | 'updateMessage' | 'getMessage' | 'messages' | 'deleteMessage' | 'messageCount'
> & {
  /**
   * The same UPDATE for a caller that needs no row back (the session store's `closeStep`): no
   * `RETURNING *`, which about doubled the statement's time (the row's parts read back and a row
   * built, issue 17 item 3); the row this transaction wrote, when it did, patched as the statement
   * patched the stored one.
   */
  patchMessageRow(id: string, patch: MessagePatch): void;
};

export const toMessage = (row: MessageRow): Message => ({
  ...row,
  parts: JSON.parse(row.parts),
  usage: row.usage ? JSON.parse(row.usage) : null,
});

/**
 * `messages()`'s options over a session's messages in read order: those after the message `after`
 * (all when it is not among them), then the last `limit`.
 */
export function messagePage(list: Message[], options: { limit?: number; after?: string } = {}): Message[] {
  let out = list;
  if (options.after) {
    const index = out.findIndex((m) => m.id === options.after);
    out = index === -1 ? out : out.slice(index + 1);
  }
  return options.limit ? out.slice(-options.limit) : out;
}

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
  /** The session store's memo of the rows it wrote in the current transaction. */
  sessionRows?: {
    /** This store set the session's `updated_at` (the memo's row follows). */
    touch(id: string, now: number): void;
    /** The session's `updated_at` as this transaction wrote it; undefined when it did not write the row. */
    updatedAt(id: string): number | undefined;
  };
  /** The messages written in the current transaction (./written-messages.ts). */
  written?: WrittenMessages;
}): MessageStore {
  const { db, sql, written } = deps;
  const getMessage = (id: string) => {
    const row =
      written?.row(id) ?? (sql('SELECT * FROM messages WHERE id = ?').get(id) as MessageRow | undefined);
    return row ? toMessage(row) : undefined;
  };
  const updateMessageRow = (id: string, patch: MessagePatch): MessageRow => {
    const handle = db();
    groupCommit(handle);
    if (patch.parts) catchUpSoon(handle);
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
    return row;
  };
  const patchMessageRow = (id: string, patch: MessagePatch): void => {
    const handle = db();
    groupCommit(handle);
    if (patch.parts) catchUpSoon(handle);
    const now = deps.clock.now();
    const parts = patch.parts ? JSON.stringify(patch.parts) : null;
    const usage = patch.usage ? JSON.stringify(patch.usage) : null;
    const { changes } = sql(
      `UPDATE messages SET parts = coalesce(?, parts), usage = CASE WHEN ? THEN ? ELSE usage END,
         cost = coalesce(?, cost), updated_at = ?, finished_at = CASE WHEN ? THEN ? ELSE finished_at END
       WHERE id = ?`,
    ).run(
      parts,
      patch.usage === undefined ? 0 : 1,
      usage,
      patch.cost ?? null,
      now,
      patch.finished ? 1 : 0,
      now,
      id,
    );
    if (changes === 0) throw new SvcError('not_found', `message_id: no message "${id}"`);
    const stored = written?.row(id);
    if (stored) written?.wrote(patchedRow(stored, patch, parts, usage, now));
  };
  return {
    async appendMessage(input) {
      const handle = db();
      groupCommit(handle);
      // The search index is written from the log this INSERT appends to (../store/message-search-log.ts).
      catchUpSoon(handle);
      const now = deps.clock.now();
      // The session must exist; checked by the UPDATE below (one statement instead of a read). A
      // row this transaction wrote with this very `updated_at` (a new session and its first
      // message in one millisecond: a compat request's start) exists and would not change: no
      // UPDATE (p-sqlcpu3).
      if (deps.sessionRows?.updatedAt(input.session_id) !== now) {
        if (sql('UPDATE sessions SET updated_at = ? WHERE id = ?').run(now, input.session_id).changes === 0) {
          deps.requireSession(input.session_id);
        }
        deps.sessionRows?.touch(input.session_id, now);
      }
      const id = deps.ids.next('msg');
      const partsJson = JSON.stringify(input.parts);
      // The row as a read gives it (its columns in table order, every one bound below).
      const row = newMessageRow(input, id, partsJson, now);
      sql(
        `INSERT INTO messages (id, session_id, role, parts, model, provider, usage, cost, run_id, created_at, updated_at, finished_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        row.id,
        row.session_id,
        row.role,
        row.parts,
        row.model,
        row.provider,
        row.usage,
        row.cost,
        row.run_id,
        row.created_at,
        row.updated_at,
        row.finished_at,
      );
      written?.wrote(row);
      return appendedMessage(input, id, partsJson, now, row.finished_at);
    },
    updateMessage: async (id, patch) => toMessage(updateMessageRow(id, patch)),
    patchMessageRow,
    getMessage: async (id) => getMessage(id),
    async messages(sessionId, options = {}) {
      const rows =
        written?.list(sessionId) ??
        (sql('SELECT * FROM messages WHERE session_id = ? ORDER BY created_at, rowid').all(
          sessionId,
        ) as MessageRow[]);
      return messagePage(rows.map(toMessage), options);
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

/**
 * A new message's row as its INSERT stores it (`parts`: the input's parts as JSON, made once by
 * the caller, which binds it too), on both backends.
 */
export function newMessageRow(input: AppendInput, id: string, parts: string, now: number): MessageRow {
  return {
    id,
    session_id: input.session_id,
    role: input.role,
    parts,
    model: input.model ?? null,
    provider: input.provider ?? null,
    usage: input.usage ? JSON.stringify(input.usage) : null,
    cost: input.cost ?? 0,
    run_id: input.run_id ?? null,
    created_at: now,
    updated_at: now,
    finished_at: input.finished === false ? null : now,
  };
}

/** `row` as the UPDATE of `patchMessageRow` leaves it (the columns in table order, as a read's). */
function patchedRow(
  row: MessageRow,
  patch: MessagePatch,
  parts: string | null,
  usage: string | null,
  now: number,
): MessageRow {
  return {
    id: row.id,
    session_id: row.session_id,
    role: row.role,
    parts: parts ?? row.parts,
    model: row.model,
    provider: row.provider,
    usage: patch.usage === undefined ? row.usage : usage,
    cost: patch.cost ?? row.cost,
    run_id: row.run_id,
    created_at: row.created_at,
    updated_at: now,
    finished_at: patch.finished ? now : row.finished_at,
  };
}
