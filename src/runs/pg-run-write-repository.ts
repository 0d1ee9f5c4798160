/**
 * The run ledger's writes (`agent_runs`, `agent_run_events`) on PostgreSQL (issue 18): the
 * `RunWrites` of ./run-repository.ts, every method async, same semantics. An event's sequence
 * number is the run's next one: the run's row is locked (FOR UPDATE) for the insert, in one
 * statement (the function `svc_append_run_event`, PostgreSQL migration 30), so two
 * nodes appending to one run never take the same seq. A claim is one conditional UPDATE under an
 * advisory lock on the session. The reads are ./pg-run-queries.ts, the ledger over both is
 * ./pg-run-ledger.ts.
 * @module
 */
import type { AsyncOf } from '../store/async-of';
import type { SqlClient } from '../store/postgres/client';
import type { PrecedingWrite, RidingInsert, TrailingInsert } from '../store/preceding-write';
import {
  type ClaimStarted,
  claimIfFreeStarted,
  claimStartedAlongside,
  type PgRunRowWithEvent,
  splitEvent,
} from './pg-run-claim-repository';
import { fromPg, type PgRunRow } from './pg-run-queries';
import {
  type AppendedRow,
  appendedJson,
  appendedRows,
  type FollowingCall,
  type NewSessionCall,
  type RunEventWrite,
  updateRunWithEvent,
  updateStatement,
} from './pg-run-update-event-repository';
import { type RunWrites, runInsertValues, runPatchColumns } from './run-repository';
import type { AgentRun, AlongsideWrite, GatedInsert } from './types';

export type { RunEventWrite };

export {
  type AppendedRow,
  appendedJson,
  appendedRows,
  type FollowingCall,
  type NewSessionCall,
  type PgRunRowWithEvent,
  splitEvent,
};

export interface PostgresRunWrites extends AsyncOf<RunWrites> {
  /**
   * Queued → running for this owner, decided by the database (`WHERE status = 'queued'`): of
   * several nodes claiming one run exactly one gets true.
   */
  claimQueued(
    id: string,
    now: number,
    owner: { pid: number; host: string; runner: string },
  ): Promise<boolean>;
  /** `claimQueued` in one statement answering the claimed run (undefined: not claimed). */
  claimQueuedRun(
    id: string,
    now: number,
    owner: { pid: number; host: string; runner: string },
  ): Promise<AgentRun | undefined>;
  /**
   * The claim in one statement when nothing stands in its way (migration 32, `svc_claim_run`):
   * under the session's claim lock, the queued run moved to running for this owner unless another
   * run of the session is running. Undefined: nothing written (another run running, the run not
   * queued, or not of this session or not there).
   */
  claimIfFree(
    id: string,
    sessionId: string,
    now: number,
    owner: { pid: number; host: string; runner: string },
  ): Promise<AgentRun | undefined>;
  /**
   * `claimIfFree` and the run's `run.started` event in one statement (migration 33,
   * `svc_claim_run_started`): the event's payload is `{ agent, origin, pid, options }` of the
   * claimed run, its time the claim's. `next`: an event appended right after it in the same
   * statement (migration 30's append, after the claim's: the next seq), at the claim's time.
   * Undefined: nothing written.
   */
  claimIfFreeStarted: ClaimStarted;
  /** `insertRun` answering the run as inserted. */
  insertRunRow(row: Parameters<RunWrites['insertRun']>[0]): Promise<AgentRun>;
  /** `updateRun` in one statement answering the run as updated (undefined: no such run). */
  updateRunRow(
    id: string,
    patch: Parameters<RunWrites['updateRun']>[1],
    now: number,
  ): Promise<AgentRun | undefined>;
  /**
   * `updateRunRow` and then `insertEvent` for the same run in one statement (the update's row
   * lock, then migration 30's function: its lock is the one already held, its seq read after it),
   * so both are written or neither. Undefined: no such run (nothing written).
   */
  updateRunWithEvent(
    id: string,
    patch: Parameters<RunWrites['updateRun']>[1],
    now: number,
    event: RunEventWrite,
    queueOf?: string,
    /**
     * Another domain's write, made only with the run's row, and its event appended right after
     * `event` only when it answered a row (`also`).
     */
    alongside?: { write: GatedInsert; event: RunEventWrite },
    /** A call appending session events, made last and only when the run's row was written. */
    after?: FollowingCall,
    /**
     * The run's last step end first (p-pglast): `before`'s writes gate the whole statement (its
     * rows missing: undefined, nothing written), its event appended before `event`, `riding` made
     * whatever the gate decides. `first` in the answer: `before`'s answer and the event's ids.
     */
    first?: { before: PrecedingWrite<unknown>; event: RunEventWrite; riding?: TrailingInsert },
  ): Promise<
    | {
        run: AgentRun;
        event: { id: number; seq: number };
        queued?: boolean;
        also?: { id: number; seq: number };
        /** `after`'s rows (undefined: not made). */
        appended?: AppendedRow[];
        first?: { answer: unknown; event: { id: number; seq: number } };
      }
    | undefined
  >;
  /**
   * `before`'s writes, then `updateRunWithEvent`, in one statement (the run's UPDATE reads
   * `before.last`, so its row is locked after `before`'s); nothing is written unless `before.ready`
   * holds and the run exists. `written` undefined: nothing was (`answer` tells `before` why).
   */
  updateRunWithEventAfter(
    id: string,
    patch: Parameters<RunWrites['updateRun']>[1],
    now: number,
    event: RunEventWrite,
    before: PrecedingWrite<unknown>,
    /** A call appending session events, made last and only when the run's row was written. */
    after?: FollowingCall,
    /** Another domain's insert (a step's `model_calls` row), made whatever `go` decides. */
    riding?: TrailingInsert,
  ): Promise<{
    written?: { run: AgentRun; event: { id: number; seq: number } };
    answer: unknown;
    /** `after`'s rows (undefined: not made). */
    appended?: AppendedRow[];
  }>;
  /**
   * The run's event (`insertEvent`, when the run exists) and then `after`, made whether or not it
   * does, in one statement: the run's row lock first, then whatever `after` locks. `event`
   * undefined: no such run (only `after` made).
   */
  insertEventWith(
    runId: string,
    event: RunEventWrite,
    after: FollowingCall,
    /** Another domain's insert (a step's `model_calls` row), made whether or not the run exists. */
    riding?: TrailingInsert,
  ): Promise<{ event?: { id: number; seq: number; session_id: string }; appended: AppendedRow[] }>;
  /**
   * `alongside` (a data-modifying WITH, run whether or not the run exists) and then, when the
   * run exists, migration 30's append to it, in one statement: both or neither. Undefined: no such
   * run (only `alongside` written), or a gating write that skipped (nothing written).
   */
  insertEventAlongside(
    runId: string,
    event: RunEventWrite,
    alongside: AlongsideWrite,
  ): Promise<{ id: number; seq: number; session_id: string } | undefined>;
  /**
   * `riding` (another domain's insert, when given), then `events` appended to the run in their
   * order (migration 39, `svc_append_run_event_list`: consecutive seqs, as one `insertEvent` after
   * another), in one statement: all or nothing. Answers each event's id and seq in order, and the
   * riding insert's id.
   */
  insertEventList(
    runId: string,
    sessionId: string,
    events: readonly RunEventWrite[],
    riding?: RidingInsert,
  ): Promise<{ events: { id: number; seq: number }[]; ridingId?: number }>;
  /** Serializes the claims of one session until the surrounding transaction ends. */
  lockSession(sessionId: string): Promise<void>;
  /**
   * A running run owned by `from` becomes `owner`'s (its node died; issue 19), decided by the
   * database: of several nodes taking it over exactly one gets true.
   */
  takeOverRunning(
    id: string,
    from: string | null,
    now: number,
    owner: { pid: number; host: string; runner: string },
  ): Promise<boolean>;
}

export function createPostgresRunWrites(deps: { sql: SqlClient }): PostgresRunWrites {
  const { sql } = deps;
  return {
    async insertRun(row) {
      await sql.run(...insertStatement(row));
    },
    async insertRunRow(row) {
      const [text, params] = insertStatement(row);
      const inserted = await sql.one<PgRunRow>(`${text} RETURNING *`, params);
      if (!inserted) throw new Error(`agent_runs: no row returned for run ${row.id}`);
      return fromPg(inserted);
    },
    updateRunWithEvent: (id, patch, now, event, queueOf, alongside, after, first) =>
      updateRunWithEvent(sql, id, patch, now, event, queueOf, alongside, after, first),
    updateRunWithEventAfter: (id, patch, now, event, before, after, riding) =>
      updateRunWithEventAfter(sql, id, patch, now, event, before, after, riding),
    insertEventWith: (runId, event, after, riding) => insertEventWith(sql, runId, event, after, riding),
    async interruptIfRunning(id, reason, now) {
      // The run's workspace leases (held as `run:<id>`, run_id the run) go in the same statement:
      // its node is gone, so nothing renews or releases them, and every writer would wait for
      // their expiry.
      const row = await sql.one<{ n: number }>(
        `WITH interrupted AS (
           UPDATE agent_runs SET status = 'interrupted', reason = $1, finished_at = $2, updated_at = $2
            WHERE id = $3 AND status = 'running' RETURNING id
         ), released AS (
           DELETE FROM workspace_leases WHERE run_id IN (SELECT id FROM interrupted) RETURNING 1
         )
         SELECT count(*)::int AS n FROM interrupted`,
        [reason, now, id],
      );
      return (row?.n ?? 0) > 0;
    },
    async interrupt(id, reason, now) {
      // A claim's, of a dead process's run in its way: its leases go with it, as above.
      await sql.run(
        `WITH interrupted AS (
           UPDATE agent_runs SET status = 'interrupted', reason = $1, finished_at = $2, updated_at = $2
            WHERE id = $3 RETURNING id
         )
         DELETE FROM workspace_leases WHERE run_id IN (SELECT id FROM interrupted)`,
        [reason, now, id],
      );
    },
    async markRunning(id, now, owner) {
      await sql.run(
        "UPDATE agent_runs SET status = 'running', started_at = $1, updated_at = $1, pid = $2, host = $3, runner = $4 WHERE id = $5",
        [now, owner.pid, owner.host, owner.runner, id],
      );
    },
    async updateRun(id, patch, now) {
      const [text, params] = updateStatement(id, patch, now);
      return (await sql.run(text, params)) > 0;
    },
    async updateRunRow(id, patch, now) {
      const [text, params] = updateStatement(id, patch, now);
      const row = await sql.one<PgRunRow>(`${text} RETURNING *`, params);
      return row ? fromPg(row) : undefined;
    },
    async claimQueued(id, now, owner) {
      return (await sql.run(CLAIM, [now, owner.pid, owner.host, owner.runner, id])) > 0;
    },
    async claimQueuedRun(id, now, owner) {
      const row = await sql.one<PgRunRow>(`${CLAIM} RETURNING *`, [
        now,
        owner.pid,
        owner.host,
        owner.runner,
        id,
      ]);
      return row ? fromPg(row) : undefined;
    },
    async claimIfFree(id, sessionId, now, owner) {
      const row = await sql.one<PgRunRow>('SELECT * FROM svc_claim_run($1, $2, $3, $4, $5, $6)', [
        id,
        sessionId,
        now,
        owner.pid,
        owner.host,
        owner.runner,
      ]);
      return row ? fromPg(row) : undefined;
    },
    claimIfFreeStarted: (id, sessionId, now, owner, next, alongside) =>
      alongside
        ? claimStartedAlongside(sql, id, sessionId, now, owner, next, alongside)
        : claimIfFreeStarted(sql, id, sessionId, now, owner, next),
    async takeOverRunning(id, from, now, owner) {
      return (
        (await sql.run(
          `UPDATE agent_runs SET updated_at = $1, pid = $2, host = $3, runner = $4
             WHERE id = $5 AND status = 'running' AND runner IS NOT DISTINCT FROM $6`,
          [now, owner.pid, owner.host, owner.runner, id, from],
        )) > 0
      );
    },
    async lockSession(sessionId) {
      await sql.query("SELECT pg_advisory_xact_lock(hashtext('svc.runs.claim:' || $1))", [sessionId]);
    },
    async requestCancel(id, now) {
      await sql.run('UPDATE agent_runs SET cancel_requested = 1, updated_at = $1 WHERE id = $2', [now, id]);
    },
    async deleteRuns(ids) {
      if (ids.length === 0) return;
      await sql.run('DELETE FROM agent_runs WHERE id = ANY($1::text[])', [[...ids]]);
    },
    async insertEventAlongside(runId, event, alongside) {
      const n = alongside.values.length;
      // LATERAL on the run's row: the append runs once for the run, never when it is missing. A
      // gating write's skip (no row) is a one-time filter: the append is not run either.
      const gate = alongside.gates ? ' AND EXISTS (SELECT 1 FROM alongside)' : '';
      const row = await sql.one<{ event_id: number; event_seq: number; session_id: string }>(
        `WITH alongside AS (${alongside.text})
         SELECT a.event_id, a.event_seq, r.session_id
           FROM agent_runs r, LATERAL svc_append_run_event(r.id, r.session_id, $${n + 2}, $${n + 3}, $${n + 4}) a
          WHERE r.id = $${n + 1}${gate}`,
        [...alongside.values, runId, event.type, event.payload, event.created_at],
      );
      return row
        ? { id: Number(row.event_id), seq: Number(row.event_seq), session_id: row.session_id }
        : undefined;
    },
    insertEventList: (runId, sessionId, events, riding) =>
      insertEventList(sql, runId, sessionId, events, riding),
    // One statement (migration 30, src/store/postgres/migrations/append-functions.ts): the run's
    // row lock, its next seq, the insert.
    async insertEvent(event) {
      const row = await sql.one<{ event_id: number; event_seq: number }>(
        'SELECT event_id, event_seq FROM svc_append_run_event($1, $2, $3, $4, $5)',
        [event.run_id, event.session_id, event.type, event.payload, event.created_at],
      );
      if (!row) throw new Error(`agent_run_events: no row returned for run ${event.run_id}`);
      return { id: Number(row.event_id), seq: Number(row.event_seq) };
    },
  };
}

const CLAIM = `UPDATE agent_runs SET status = 'running', started_at = $1, updated_at = $1, pid = $2, host = $3, runner = $4
  WHERE id = $5 AND status = 'queued'`;

/** `PostgresRunWrites.insertEventWith` (see there). */
async function insertEventWith(
  sql: SqlClient,
  ...[runId, event, after, riding]: Parameters<PostgresRunWrites['insertEventWith']>
): ReturnType<PostgresRunWrites['insertEventWith']> {
  const call = after(5);
  // The riding insert's parameters last; its WITH runs whether or not the run exists.
  const ridingWith = riding ? `svc_riding AS (${riding.sql(4 + call.values.length)}),\n         ` : '';
  // `a` first (the run's row lock, its event); `e` waits for it (a one-time filter on `a`), so
  // the locks are taken in the order of the step end's statement: run row, then the session's.
  const row = await sql.one<{
    event_id: number | null;
    event_seq: number | null;
    session_id: string | null;
    svc_appended: unknown;
  }>(
    `WITH ${ridingWith}a AS (SELECT a.event_id, a.event_seq, r.session_id
                    FROM agent_runs r, LATERAL svc_append_run_event(r.id, r.session_id, $2, $3, $4) a
                   WHERE r.id = $1),
         e AS (SELECT event_id, previous_id FROM ${call.text} WHERE (SELECT count(*) FROM a) >= 0)
       SELECT a.event_id, a.event_seq, a.session_id, (SELECT ${appendedJson} FROM e) AS svc_appended
         FROM (SELECT 1) AS one LEFT JOIN a ON true`,
    [runId, event.type, event.payload, event.created_at, ...call.values, ...(riding?.values ?? [])],
  );
  const appended = appendedRows(row?.svc_appended);
  if (!row || row.event_id === null || row.session_id === null) return { appended };
  return {
    event: { id: Number(row.event_id), seq: Number(row.event_seq), session_id: row.session_id },
    appended,
  };
}

/** `PostgresRunWrites.updateRunWithEventAfter` (see there). */
async function updateRunWithEventAfter(
  sql: SqlClient,
  ...[id, patch, now, event, before, after, riding]: Parameters<PostgresRunWrites['updateRunWithEventAfter']>
): ReturnType<PostgresRunWrites['updateRunWithEventAfter']> {
  const n = before.values.length;
  const columns = runPatchColumns(patch, now);
  const sets = columns.map(([column], i) => `${column} = $${n + i + 1}`).join(', ');
  const k = n + columns.length;
  // `after` last, per answered row (`x`: only when the run's row and event were written), so its
  // locks follow every other (messages, session, run).
  const call = after?.(k + 5);
  const following = call
    ? `, (SELECT ${appendedJson} FROM ${call.text} e WHERE x.svc_event_id IS NOT NULL) AS svc_appended`
    : '';
  // The riding insert's parameters last (after `after`'s); its WITH runs whatever `go` is.
  const ridingAt = k + 4 + (call?.values.length ?? 0);
  const ridingWith = riding ? `svc_riding AS (${riding.sql(ridingAt)}),\n       ` : '';
  // g: read once, before any write (one snapshot); the run's UPDATE follows before's last WITH.
  const row = await sql.one<PgRunRowWithEvent & { svc_before: unknown; svc_appended?: unknown }>(
    `WITH ${ridingWith}g AS (SELECT (${before.ready}) AND EXISTS (SELECT 1 FROM agent_runs WHERE id = $${k + 1}) AS go),
       ${before.ctes('(SELECT go FROM g)')},
       r AS (UPDATE agent_runs SET ${sets} WHERE id = $${k + 1} AND (SELECT go FROM g)
               AND (SELECT count(*) FROM ${before.last}) >= 0 RETURNING *)
       SELECT x.*, (${before.answer('(SELECT go FROM g)')}) AS svc_before${following} FROM (SELECT 1) AS one
         LEFT JOIN LATERAL (SELECT r.*, a.event_id AS svc_event_id, a.event_seq AS svc_event_seq
           FROM r, LATERAL svc_append_run_event(r.id, r.session_id, $${k + 2}, $${k + 3}, $${k + 4}) a) x ON true`,
    [
      ...before.values,
      ...columns.map(([, value]) => value),
      ...[id, event.type, event.payload, event.created_at],
      ...(call?.values ?? []),
      ...(riding?.values ?? []),
    ],
  );
  if (!row) throw new Error(`agent_runs: no row answered for run ${id}`);
  const { svc_before: answer, svc_appended, ...rest } = row;
  if (rest.id === null || rest.id === undefined) return { answer };
  return { written: splitEvent(rest), answer, ...(call ? { appended: appendedRows(svc_appended) } : {}) };
}

/** `PostgresRunWrites.insertEventList` (see there). */
async function insertEventList(
  sql: SqlClient,
  ...[runId, sessionId, events, riding]: Parameters<PostgresRunWrites['insertEventList']>
): ReturnType<PostgresRunWrites['insertEventList']> {
  const n = riding?.values.length ?? 0;
  const list = `svc_append_run_event_list($${n + 1}, $${n + 2}, $${n + 3}::text[], $${n + 4}::text[], $${n + 5}::bigint[])`;
  const rows = await sql.query<{
    event_id: number | string;
    event_seq: number | string;
    riding_id?: unknown;
  }>(
    riding
      ? `WITH riding AS (${riding.text})
         SELECT a.event_id, a.event_seq, (SELECT id FROM riding) AS riding_id FROM ${list} a ORDER BY a.ord`
      : `SELECT a.event_id, a.event_seq FROM ${list} a ORDER BY a.ord`,
    [
      ...(riding?.values ?? []),
      runId,
      sessionId,
      events.map((e) => e.type),
      events.map((e) => e.payload),
      events.map((e) => e.created_at),
    ],
  );
  const ridingId = rows[0]?.riding_id;
  return {
    events: rows.map((r) => ({ id: Number(r.event_id), seq: Number(r.event_seq) })),
    ...(ridingId === undefined || ridingId === null ? {} : { ridingId: Number(ridingId) }),
  };
}

/** The run's value of each column of its INSERT (`created_at` and `updated_at` share one). */
const INSERT_VALUE_OF_COLUMN = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 11, 12, 13, 14, 15];

/**
 * The INSERT of a run and its parameters, numbered after `offset` others (a statement that sends
 * another insert's parameters first, ./pg-run-create-repository.ts).
 */
export function insertStatement(row: Parameters<RunWrites['insertRun']>[0], offset = 0): [string, unknown[]] {
  return [insertRunText(offset), runInsertValues(row)];
}

/** `insertStatement`'s text, its parameters from `$offset+1`. */
export function insertRunText(offset = 0): string {
  const values = INSERT_VALUE_OF_COLUMN.map((i) => `$${i + offset}`).join(', ');
  return `INSERT INTO agent_runs (id, session_id, parent_run_id, family_session_id, status, agent, model, origin,
             prompt, options, created_at, updated_at, started_at, pid, host, runner)
           VALUES (${values})`;
}
