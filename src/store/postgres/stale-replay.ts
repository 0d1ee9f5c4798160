/**
 * A transaction that meets a stale plan, replayed (issue 18, item 6, p-pgprep2). A named
 * statement kept on a connection fails with "cached plan must not change result type" when
 * another node's migration changed its result columns (./prepared-names.ts); inside a transaction
 * that error aborts the transaction, so the statement cannot simply be sent again, and re-running
 * the caller's body is not safe in general (a body changes memory too: a run's runtime, a queue).
 *
 * So the body is not re-run: its statements are. Each statement of the transaction that answered
 * is kept with its answer. When one fails with a stale plan (every name is retired then, so
 * nothing is sent under a stale name again), once its statements in flight have answered:
 * ROLLBACK, then every kept statement again (BEGIN, savepoints, the body's), in one write. When
 * each answers as the body was answered (the same row count and, for every column the body got,
 * the same values: a column the migration added is not one the body saw), the transaction on the
 * server is the one the body believes it is in: the failed statement, those sent after it and
 * those asked for meanwhile are sent again, and the body never sees the failure. Otherwise the
 * body gets the failure it would have had, and its transaction answers every later statement
 * (its COMMIT too) with it, except its ROLLBACK. Once a transaction: a second stale plan fails.
 *
 * Not replayed: a transaction in which a statement failed and the body saw it (its state no longer
 * follows from its answers), and a statement sent alone (`sendAlone`, committed by itself); such a
 * statement is sent once more only when nothing was sent after it (then it is its own transaction
 * again, as the pool's are, ./pool-batches.ts `againIfStale`).
 * @module
 */
import { isDeepStrictEqual } from 'node:util';
import type { PoolClient, QueryResult } from 'pg';
import { type Statement, submitOn, writeTogether } from './pool-batches';
import { isStalePlan } from './prepared-names';
import type { StatementClass } from './row-shapes';

/** Where a transaction's statements are written (./lazy-transaction.ts). */
export interface TransactionWire {
  /**
   * `statements` in one write, in order, each answered once. `alone`: a statement outside the
   * transaction (no BEGIN sent yet), committed by itself.
   */
  write(statements: Statement[], alone?: boolean): void;
}

interface Entry {
  statement: Statement;
  alone: boolean;
  /** What the body was answered (kept once it answered without error). */
  result?: QueryResult;
  /** Sent once more already (a statement sent alone). */
  again?: boolean;
}

interface Recovery {
  failing: Entry;
  error: Error;
  /** The statements after it that were in flight, with their answers (the aborted transaction's). */
  held: { entry: Entry; error: Error | null | undefined; result?: QueryResult }[];
  /** Statements asked for since. */
  queued: Entry[];
}

/** The transaction's statements on `connection`, replayed once past a stale plan (see the module's notes). */
export function replayingWire(connection: PoolClient, Query: StatementClass): TransactionWire {
  /** The transaction's statements that answered without error, in order. */
  const log: Entry[] = [];
  const inFlight: Entry[] = [];
  let replayable = true;
  let recovery: Recovery | undefined;
  /** Set once a replay failed: every statement but a ROLLBACK is answered with it. */
  let refused: Error | undefined;

  const send = (entries: Entry[]) => {
    for (const entry of entries) inFlight.push(entry);
    if (entries.length === 1) {
      // One statement (most of a transaction's): no array, no cork.
      const [entry] = entries;
      const { text, params } = entry.statement;
      submitOn(connection, Query, text, params, (error, result) => answered(entry, error, result));
      return;
    }
    writeTogether(
      connection,
      Query,
      entries.map((entry) => ({
        text: entry.statement.text,
        params: entry.statement.params,
        answer: (error, result) => answered(entry, error, result),
      })),
    );
  };

  const answered = (entry: Entry, error: Error | null | undefined, result?: QueryResult) => {
    const at = inFlight[0] === entry ? 0 : inFlight.indexOf(entry);
    if (at >= 0) inFlight.splice(at, 1);
    if (recovery) {
      recovery.held.push({ entry, error, result });
      if (inFlight.length === 0) replay(recovery);
      return;
    }
    if (error && isStalePlan(error)) {
      if (entry.alone && !entry.again && inFlight.length === 0) {
        entry.again = true;
        send([entry]);
        return;
      }
      if (!entry.alone && replayable) {
        replayable = false;
        recovery = { failing: entry, error, held: [], queued: [] };
        if (inFlight.length === 0) replay(recovery);
        return;
      }
    }
    if (error) replayable = false;
    else if (!entry.alone) {
      entry.result = result;
      log.push(entry);
    }
    entry.statement.answer(error, result);
  };

  /** ROLLBACK and the transaction's statements again; then what was held, or the failure. */
  const replay = (r: Recovery) => {
    const again = log.splice(0);
    let failure: Error | undefined;
    let left = again.length + 1;
    const done = () => {
      if (--left > 0) return;
      recovery = undefined;
      if (failure) refuse(r);
      else send([r.failing, ...r.held.map((held) => held.entry), ...r.queued]);
    };
    const statements: Statement[] = [
      {
        text: 'ROLLBACK',
        answer: (error) => {
          failure ??= error ?? undefined;
          done();
        },
      },
    ];
    for (const entry of again) {
      statements.push({
        text: entry.statement.text,
        params: entry.statement.params,
        answer: (error, result) => {
          if (error) failure ??= error;
          else if (!sameAnswer(entry.result, result)) failure ??= r.error;
          else log.push(entry);
          done();
        },
      });
    }
    writeTogether(connection, Query, statements);
  };

  /** The replay failed: the body gets what it would have had; its transaction only ends. */
  const refuse = (r: Recovery) => {
    refused = r.error;
    r.failing.statement.answer(r.error);
    for (const held of r.held) held.entry.statement.answer(held.error ?? r.error, held.result);
    answerRefused(r.queued);
  };

  const answerRefused = (entries: Entry[]) => {
    for (const entry of entries) {
      if (entry.statement.text === 'ROLLBACK') send([entry]);
      else entry.statement.answer(refused);
    }
  };

  return {
    write(statements, alone = false) {
      const entries = statements.map((statement): Entry => ({ statement, alone }));
      if (refused) answerRefused(entries);
      else if (recovery) recovery.queued.push(...entries);
      else send(entries);
    },
  };
}

/** Whether `now` answers as `before` did: its row count, and every column of every row `before` had. */
function sameAnswer(before: QueryResult | undefined, now: QueryResult | undefined): boolean {
  if (!before || !now) return before === now;
  if (before.rowCount !== now.rowCount || before.rows.length !== now.rows.length) return false;
  for (let i = 0; i < before.rows.length; i++) {
    const was = before.rows[i] as Record<string, unknown>;
    const is = now.rows[i] as Record<string, unknown>;
    for (const key in was) if (!isDeepStrictEqual(was[key], is[key])) return false;
  }
  return true;
}
