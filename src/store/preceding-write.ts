/**
 * A write of one domain's PostgreSQL tables that another domain's repository makes in its own
 * statement, first (issue 18 item 6, p-pgstep2): the agent's step end writes the session's
 * messages and usage, then the run's row and its `step.finished` event; as one statement they cost
 * no BEGIN, no COMMIT and no second round trip. Each repository keeps its own SQL: the one that
 * writes first hands over its data-modifying `WITH`s as text, opaque to the caller that passes it
 * on, and reads its own answer back (`read`). Only statement text and values cross, never a table
 * name the other domain would have to know.
 * @module
 */

/** The preceding write: its `WITH`s, the gate they obey, its answer and how to read it. */
export interface PrecedingWrite<T> {
  /** The parameters of `ctes`, `ready` and `answer` ($1…$n; the statement numbers its own after). */
  readonly values: readonly unknown[];
  /**
   * A boolean SQL expression read before anything is written: false, the rows this write needs
   * are missing, and the statement writes nothing at all (neither this write nor the other's).
   */
  readonly ready: string;
  /**
   * The data-modifying `WITH`s (`name AS (…), …`, without the `WITH`), each writing only where
   * `go` (a boolean SQL expression the statement passes) holds.
   */
  ctes(go: string): string;
  /** The `WITH` the other domain's write must follow (it reads it: rows locked in this order). */
  readonly last: string;
  /** A SQL expression over the `WITH`s and `go`: what the statement answers for this write (JSON). */
  answer(go: string): string;
  /**
   * This write's result from `answer`'s value; throws when its own rows are missing (not_found).
   * When `go` was false for another reason (the other write's rows), its result is not used.
   */
  read(answer: unknown): T;
  /**
   * `build` (the statement's text: `ctes`, `answer`) made with its last `WITH`'s run events handed
   * to the statement's own run-event list (`FollowingWrite.handingOver`); absent: they stay its own.
   */
  handingOver?<R>(build: () => R): R;
  /**
   * The shape of `ready`, `last`, `ctes` and `answer` (p-pgappend): two writes with the same shape
   * give the same texts for any `go` (handed over or not alike), so the statement's text can be
   * kept per shape; absent, it is made every time.
   */
  readonly shape?: string;
}

/**
 * A number for a SQL-making function (a `FollowingWrite.sql`, a `TrailingInsert.sql`, a
 * `GatedInsert.cte`), for a text's shape key (p-pgappend): one a function for the process's life,
 * so two writes made by one function are told apart by its number alone. The functions are
 * module-level or kept per shape (`withRiding`, `followingEventsWithRowSql`).
 */
export function shapeIdOf(fn: object): number {
  let id = shapeIds.get(fn);
  if (id === undefined) {
    id = ++lastShapeId;
    shapeIds.set(fn, id);
  }
  return id;
}
const shapeIds = new WeakMap<object, number>();
let lastShapeId = 0;

/**
 * An insert of one domain's table that rides in another domain's statement as its first `WITH`
 * (p-pgprep: a run's prompt stack row with the run's preparation events). `text` is one
 * `INSERT … RETURNING id` with parameters $1…$n of `values` (the statement numbers its own after);
 * the statement answers that id.
 */
export interface RidingInsert {
  readonly text: string;
  readonly values: readonly unknown[];
  /**
   * `text` with its parameters numbered after `offset` ($offset+1…), for a statement whose own
   * come first (p-pgprep3: the prompt stack row in a following write); absent: it rides first only.
   */
  at?(offset: number): string;
}

/**
 * A write of another domain that follows a statement's own rows, in the same statement
 * (p-pgstep6: a step's `phase` run event in its assistant message's INSERT). The statement places
 * `sql(offset, go).cte` after its own data-modifying `WITH`s (its rows locked first), passes
 * `values` after its own parameters ($offset+1…), selects `answer` and hands its value to `read`
 * once it answered. `go` is the statement's own condition (its row was written): false, nothing of this
 * write is made either.
 */
export interface FollowingWrite {
  readonly values: readonly unknown[];
  /** The `WITH`'s name: a later `WITH` of the statement reads it to come after its locks. */
  readonly name: string;
  /**
   * `cte`: `svc_… AS (…)`, without the `WITH` or a comma; `answer`: a SQL expression over it, what
   * the statement answers for this write (JSON, or null).
   */
  sql(offset: number, go: string): { cte: string; answer: string };
  /** The answer's value (undefined: the statement failed or did not answer it). */
  read(answer: unknown): void;
  /**
   * Run events appended by the run ledger's list (its `svc_run_events`, p-pglone): while `build`
   * runs (the statement's text), `sql`'s `WITH` only holds their arrays, and the run statement
   * this write precedes appends them first in its own list call (one run row lock, one seq read,
   * one INSERT for both), its answer the list's rows for them. Only the run ledger's own finish
   * asks (it knows the `WITH`'s columns); outside `build` (the same write sent again in another
   * statement after a failure) the write appends them itself.
   */
  handingOver?<R>(build: () => R): R;
}

/**
 * An insert of one domain's table that rides, unconditionally, in another domain's statement
 * whose own parameters come first (p-pgfirst: a step's `model_calls` row in its step end): `sql`
 * is one `INSERT` (no `RETURNING`) with parameters `$offset+1…` of `values`. A data-modifying
 * `WITH` runs whether or not the statement reads it: the row is written when the statement ran,
 * whatever its own gate decided; a failed statement wrote nothing of it.
 */
export interface TrailingInsert {
  readonly values: readonly unknown[];
  sql(offset: number): string;
  /** Told by the statement's owner once the statement answered (the row is in). */
  wrote(): void;
}

/**
 * `write` with `riding` before it in the same statement (p-pgride: a step's `model_calls` row in
 * its assistant message's INSERT, with the first tool's `tool.started` following the message):
 * `riding`'s `INSERT` as a `WITH` of its own, unconditional, ahead of `write`'s, its parameters
 * after `write`'s; told `wrote()` once the statement answered (`read`). The SQL function is one per
 * pair of SQL functions, so a statement's text can be kept per shape (its callers key on it); a
 * following write's parameter count is fixed by its SQL function (its `$n`s are that function's).
 */
export function withRiding(write: FollowingWrite, riding: TrailingInsert): FollowingWrite {
  return {
    values: [...write.values, ...riding.values],
    name: write.name,
    sql: ridingSql(write, riding),
    read(answer) {
      riding.wrote();
      write.read(answer);
    },
  };
}

const ridingSqls = new WeakMap<
  FollowingWrite['sql'],
  WeakMap<TrailingInsert['sql'], FollowingWrite['sql']>
>();

function ridingSql(write: FollowingWrite, riding: TrailingInsert): FollowingWrite['sql'] {
  let byRiding = ridingSqls.get(write.sql);
  if (!byRiding) {
    byRiding = new WeakMap();
    ridingSqls.set(write.sql, byRiding);
  }
  let sql = byRiding.get(riding.sql);
  if (!sql) {
    const count = write.values.length;
    const own = write.sql;
    const insert = riding.sql;
    sql = (offset, go) => {
      const { cte, answer } = own(offset, go);
      return { cte: `svc_riding AS (${insert(offset + count)}), ${cte}`, answer };
    };
    byRiding.set(riding.sql, sql);
  }
  return sql;
}
