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
 * - **A pending row** (p-readonly): a message append marks its write with the row it will answer
 *   (the kept row with its `updated_at`, the only column it sets). `pending` answers it while that
 *   write is in flight and the kept row held when it was sent (the same generation, no other own
 *   write meanwhile); the write's answer (or failure) moves the row's counter and ends it. It is
 *   not committed: only `SessionStore.pending`'s callers (a call run ahead of its step's first
 *   statement, whose result is recorded only if that statement succeeds) read it; `read` never does.
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
  /**
   * Take right before sending an own write of the row. `pendingOf`: the row the write will store,
   * made from the row kept now (a message append's `updated_at`), for `pending` while it is in flight.
   */
  mark(id: string, pendingOf?: (row: SessionRow) => SessionRow): WriteMark;
  /** The row an own write in flight will store (see the module's rules), else undefined. */
  pending(id: string): SessionRow | undefined;
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
  /** Rows own writes in flight will store (made on first read), with the marks they were taken at. */
  const pendings = new Map<string, Kept & { of?: (row: SessionRow) => SessionRow }>();
  /** The kept row of `id` when it still holds (the generation and this process's write counter). */
  const valid = (entry: Kept | undefined, id: string, generation: number | undefined) =>
    entry !== undefined &&
    generation !== undefined &&
    entry.generation === generation &&
    entry.version === sessionRowVersion(id);
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
    mark(id, pendingOf) {
      const kept = held.get(id);
      held.delete(id);
      pendings.delete(id);
      // A write in a transaction (or waiting for its end) is committed only at that end.
      const inTransaction = sql.transactionNow() !== undefined;
      const generation = inTransaction ? undefined : changes.generation('sessions');
      const version = sessionRowVersion(id);
      if (pendingOf && kept && valid(kept, id, generation)) {
        if (pendings.size >= MAX_KEPT) pendings.delete(pendings.keys().next().value as string);
        pendings.set(id, { row: kept.row, of: pendingOf, generation: kept.generation, version });
      }
      return { id, generation, version };
    },
    pending(id) {
      const entry = pendings.get(id);
      if (!entry) return undefined;
      if (valid(entry, id, changes.generation('sessions'))) {
        if (entry.of) {
          entry.row = entry.of(entry.row);
          entry.of = undefined;
        }
        return entry.row;
      }
      pendings.delete(id);
      return undefined;
    },
    wrote({ id, generation, version }, row) {
      if (pendings.get(id)?.version === version) pendings.delete(id);
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
