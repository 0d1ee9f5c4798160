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
  // Per session, its rows by id in the order written (a rewrite keeps its place): O(1) a write, so
  // a compat request importing thousands of messages in one transaction is not quadratic.
  const lists = () => transactionMemo<Map<string, MessageRow>>(db(), listsOwner);
  return {
    /** A session created in this transaction: no message yet. */
    sessionCreated(id: string): void {
      lists()?.set(id, new Map());
    },
    /** Sessions deleted, their messages with them. */
    sessionsDeleted(): void {
      rows()?.clear();
      lists()?.clear();
    },
    /** A row as the store's insert or update returned it. */
    wrote(row: MessageRow): void {
      rows()?.set(row.id, row);
      lists()?.get(row.session_id)?.set(row.id, row);
    },
    deleted(id: string): void {
      rows()?.delete(id);
      for (const list of lists()?.values() ?? []) list.delete(id);
    },
    row: (id: string): MessageRow | undefined => rows()?.get(id),
    /**
     * The session's messages in the order of `ORDER BY created_at, rowid` (appended in rowid
     * order; the sort is stable), or undefined when not known.
     */
    list(sessionId: string): MessageRow[] | undefined {
      const list = lists()?.get(sessionId);
      return list && [...list.values()].sort((a, b) => a.created_at - b.created_at);
    },
  };
}
