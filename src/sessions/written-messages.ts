/**
 * The messages the SQLite session store wrote in the current write transaction, as their
 * statements returned them (issue 17 item 3): a compat request creates its session, appends the
 * prompt and reads the history back, and the answer's text is read after the run's last write.
 * No other connection writes until the transaction ends (then the memo is dropped,
 * ../store/transaction-memo.ts), and the store is the only writer of `messages` in this process:
 * each of its writes sets or drops an entry. A session's list is known only for a session created
 * in the transaction (it had no message then).
 * @module
 */
import type { Db } from '../store/db';
import { transactionMemo } from '../store/transaction-memo';
import type { MessageRow } from './types';

export type WrittenMessages = ReturnType<typeof writtenMessages>;

export function writtenMessages(db: () => Db) {
  const rowsOwner = {};
  const listsOwner = {};
  const rows = () => transactionMemo<MessageRow>(db(), rowsOwner);
  const lists = () => transactionMemo<MessageRow[]>(db(), listsOwner);
  return {
    /** A session created in this transaction: no message yet. */
    sessionCreated(id: string): void {
      lists()?.set(id, []);
    },
    /** Sessions deleted, their messages with them. */
    sessionsDeleted(): void {
      rows()?.clear();
      lists()?.clear();
    },
    /** A row as the store's insert or update returned it. */
    wrote(row: MessageRow): void {
      rows()?.set(row.id, row);
      const list = lists()?.get(row.session_id);
      if (!list) return;
      const at = list.findIndex((m) => m.id === row.id);
      if (at === -1) list.push(row);
      else list[at] = row;
    },
    deleted(id: string): void {
      rows()?.delete(id);
      for (const list of lists()?.values() ?? []) {
        const at = list.findIndex((m) => m.id === id);
        if (at !== -1) list.splice(at, 1);
      }
    },
    row: (id: string): MessageRow | undefined => rows()?.get(id),
    /**
     * The session's messages in the order of `ORDER BY created_at, rowid` (appended in rowid
     * order; the sort is stable), or undefined when not known.
     */
    list(sessionId: string): MessageRow[] | undefined {
      const list = lists()?.get(sessionId);
      return list && [...list].sort((a, b) => a.created_at - b.created_at);
    },
  };
}
