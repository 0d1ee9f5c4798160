/**
 * Session rows a node keeps in memory on PostgreSQL (issue 18, item 6): a tool's read of its
 * session (`sessions.get`, once a step in the agent-loop bench) was a round trip for a row this
 * process had written a moment before (the step's message append answers it). Migration 43 puts
 * the sessions table under the change notifications of ../store/postgres/table-changes.ts; a row is
 * kept with the table's generation and the row's write counter in this process
 * (`sessionRowVersion`), and answered while both hold:
 *
 * - **Another node's write** moves the generation once its notification arrived: an answer from
 *   memory is at most one notification delay behind it (docs/cluster.md), as the other kept reads.
 *   No LISTEN, no memory; a pool connection that goes away moves it too (a write of this process
 *   in flight on it may have committed unheard).
 * - **This process's own writes** do not move the generation (their notifications are not
 *   counted: the table is `SELF_MARKED`); every one of them moves the row's counter when it
 *   answers (`wroteSession`, on error too), so a read after it never answers the row as before it.
 *   A row a write answered (`RETURNING *`) is kept in its place when that write alone moved the
 *   counter since it was sent and no change was notified meanwhile, outside a transaction.
 * - Nothing read or written inside a transaction is kept (its rows are not committed yet).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { tableChanges } from '../store/postgres/table-changes';
import { sessionRowVersion } from './session-row-version';
import type { SessionRow } from './types';

/** Most rows kept; past it the oldest go. */
const MAX_KEPT = 10_000;

interface Kept {
  row: SessionRow;
  generation: number;
  version: number;
}

/** What an own write is judged by when it answers: the marks taken before it was sent. */
export interface WriteMark {
  id: string;
  generation: number | undefined;
  version: number;
}

export interface KeptSessions {
  /** The row: from memory while it is kept (see the module's rules), else `load()` (kept if it may be). */
  read(id: string, load: () => Promise<SessionRow | undefined>): Promise<SessionRow | undefined>;
  /** Take right before sending an own write of the row. */
  mark(id: string): WriteMark;
  /** After the write's `wroteSession`: keep the row it answered, when it may be (see the module's rules). */
  wrote(mark: WriteMark, row: SessionRow | undefined): void;
}

const perClient = new WeakMap<SqlClient, KeptSessions>();

/** The kept session rows of `sql` in this process (one per client, as its `tableChanges`). */
export function keptSessions(sql: SqlClient): KeptSessions {
  let kept = perClient.get(sql);
  if (!kept) {
    kept = createKeptSessions(sql);
    perClient.set(sql, kept);
  }
  return kept;
}

function createKeptSessions(sql: SqlClient): KeptSessions {
  const changes = tableChanges(sql);
  const held = new Map<string, Kept>();
  const keep = (id: string, row: SessionRow, generation: number) => {
    held.delete(id);
    if (held.size >= MAX_KEPT) held.delete(held.keys().next().value as string);
    held.set(id, { row, generation, version: sessionRowVersion(id) });
  };
  return {
    read(id, load) {
      const generation = changes.generation('sessions');
      const kept = held.get(id);
      if (kept) {
        if (
          generation !== undefined &&
          kept.generation === generation &&
          kept.version === sessionRowVersion(id)
        )
          return Promise.resolve(kept.row);
        held.delete(id);
      }
      if (generation === undefined || sql.inTransaction()) return load();
      const version = sessionRowVersion(id);
      return load().then((row) => {
        if (row && changes.generation('sessions') === generation && sessionRowVersion(id) === version)
          keep(id, row, generation);
        return row;
      });
    },
    mark(id) {
      held.delete(id);
      // A write in a transaction (or waiting for its end) is committed only at that end.
      const inTransaction = sql.transactionNow() !== undefined;
      return {
        id,
        generation: inTransaction ? undefined : changes.generation('sessions'),
        version: sessionRowVersion(id),
      };
    },
    wrote({ id, generation, version }, row) {
      // Its own `wroteSession` moved the counter by one; more: another write answered meanwhile.
      if (
        row &&
        generation !== undefined &&
        changes.generation('sessions') === generation &&
        sessionRowVersion(id) === (version + 1) >>> 0
      )
        keep(id, row, generation);
    },
  };
}
