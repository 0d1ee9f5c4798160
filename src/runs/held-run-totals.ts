/**
 * A run's totals held while a SQLite write transaction lasts (issue 17 item 3, p-sqlprof5): the
 * run's last step end (src/agent/end-step.ts) holds its `UPDATE agent_runs SET steps …` instead of
 * running it, since the run's finish right after writes the same totals with the status. A later
 * write of the run that carries the totals (the finish) takes the held one's place; any other
 * write of the run, a read of the run ledger (`flushHeldTotals`, ../runs/queries.ts), a COMMIT
 * (`flushHeld` 'write', ../store/transaction-memo.ts) writes it first, so what a reader or another
 * connection sees is what the step end's own UPDATE would have left (a service closed or stopped
 * between the step's end and a finish that never comes: the row keeps the step's totals). A
 * ROLLBACK drops it; a savepoint marks what is held and a ROLLBACK TO puts it back as it was at
 * the mark (a hold made inside dropped, a take inside undone). Outside a transaction, and on a
 * handle not opened by `openDb`, nothing is held: the UPDATE runs at once.
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3';
import { onHeldEvent, transactionMemo } from '../store/transaction-memo';

type Db = BetterSqlite3.Database;
/** A run row's patch (`RunRowPatch`, ./run-repository.ts), as far as this module reads it. */
export interface TotalsPatch {
  steps?: number;
  usage?: object;
  cost?: number;
}
interface Held {
  patch: TotalsPatch;
  now: number;
}
type Write = (id: string, patch: TotalsPatch, now: number) => void;

export interface HeldRunTotals {
  /** Holds the run's totals `patch` as of `now` (or writes it at once outside a transaction). */
  hold(id: string, patch: TotalsPatch, now: number): void;
  /** Before a write of the run: dropped when `patch` carries the totals, else written first. */
  settle(id: string, patch?: TotalsPatch): void;
  /** Writes what is held now. */
  flush(): void;
}

const byHandle = new WeakMap<Db, HeldRunTotals>();
const owner = {};

/** The held totals of `db`'s runs, made once per handle with the run writes' `write`. */
export function heldRunTotals(db: Db, write: Write): HeldRunTotals {
  let held = byHandle.get(db);
  if (!held) {
    held = createHeldRunTotals(db, write);
    byHandle.set(db, held);
  }
  return held;
}

/** Writes the run totals `db` holds (before a read of `agent_runs` on it). */
export function flushHeldTotals(db: Db): void {
  byHandle.get(db)?.flush();
}

/** Before a write of run `id` on `db`: what it holds of the run dropped or written (`settle`). */
export function settleHeldTotals(db: Db, id: string, patch?: TotalsPatch): void {
  byHandle.get(db)?.settle(id, patch);
}

/** Whether `patch` writes every total a step end writes (a finish's does). */
const carriesTotals = (patch: TotalsPatch | undefined) =>
  patch?.steps !== undefined && patch.usage !== undefined && patch.cost !== undefined;

function createHeldRunTotals(db: Db, write: Write): HeldRunTotals {
  const pending = new Map<string, Held>();
  const marks: Map<string, Held>[] = [];
  let listening = false;
  const flush = () => {
    if (pending.size === 0) return;
    const entries = [...pending];
    pending.clear();
    for (const [id, { patch, now }] of entries) write(id, patch, now);
  };
  const listen = () => {
    if (listening) return;
    listening = true;
    onHeldEvent(db, (event) => {
      if (event === 'write') flush();
      else if (event === 'drop') {
        pending.clear();
        marks.length = 0;
      } else if (event === 'savepoint') marks.push(new Map(pending));
      else if (event === 'release') marks.pop();
      else {
        // rollbackTo: as at the savepoint's mark (its RELEASE follows, which pops it).
        pending.clear();
        for (const [id, entry] of marks[marks.length - 1] ?? []) pending.set(id, entry);
      }
    });
  };
  return {
    hold(id, patch, now) {
      // No memo: not in a transaction, or a handle `openDb` did not open (no hooks tell of its ends).
      if (!transactionMemo(db, owner)) {
        write(id, patch, now);
        return;
      }
      listen();
      pending.set(id, { patch, now });
    },
    settle(id, patch) {
      const entry = pending.get(id);
      if (!entry) return;
      pending.delete(id);
      if (!carriesTotals(patch)) write(id, entry.patch, entry.now);
    },
    flush,
  };
}
