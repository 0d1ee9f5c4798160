/**
 * A new session's first run inserted already claimed on PostgreSQL (issue 18 item 6, p-pgclaimed):
 * a compat start's session, run, claim and ledger row in one statement; since p-pgstart2 its
 * prompt message too (`ClaimedCreate.trailing`).
 * @module
 */
import type { EventBus, JoinedEvents } from '../events/bus';
import type { SqlClient } from '../store/postgres/client';
import { firstRunEvent, newRunRow } from './new-run';
import { insertClaimedRun } from './pg-run-create-repository';
import type { ClaimedCreate, RunLedger, RunLedgerDeps } from './run-ledger';
import type { RunRowInsert } from './run-repository';
import { runStartedPayload, runStartedText } from './run-started';
import type { AgentRun, RunEvent, RunOptions } from './types';

/**
 * The run as `row` (a new run's values) writes it, before the answer (`ClaimedCreate.sent`): the
 * columns the INSERT leaves to their defaults at them; the answer's row replaces them.
 */
function sentRun(row: RunRowInsert, options: RunOptions, now: number): AgentRun {
  return {
    id: row.id,
    session_id: row.session_id,
    parent_run_id: row.parent_run_id,
    family_session_id: row.family_session_id,
    status: row.status,
    agent: row.agent,
    model: row.model,
    origin: row.origin,
    prompt: row.prompt,
    options,
    reason: null,
    error: null,
    failure: null,
    steps: 0,
    usage: { input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cached_input_tokens: 0 },
    cost: 0,
    result_message_id: null,
    pid: row.pid,
    host: row.host,
    runner: row.runner,
    cancel_requested: false,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: null,
    updated_at: now,
  };
}

/**
 * `RunLedger.createClaimed` on PostgreSQL (p-pgclaimed): a new session's first run inserted
 * running with its events, the sender's insert and (p-pgstart2) its `trailing` inserts (the
 * prompt message) in one statement
 * (./pg-run-create-repository.ts `insertClaimedRun`); the run's session known and its events
 * announced in seq order, as `create` then the claim leave them.
 */
export function postgresCreateClaimed(ctx: {
  sql: SqlClient;
  clock: RunLedgerDeps['clock'];
  ids: RunLedgerDeps['ids'];
  owner: RunLedger['owner'];
  /** The ledger's in-memory events: the run's session, and its events to listeners. */
  events: { known(runId: string, sessionId: string): void; announce(event: RunEvent): void };
  /** The session event bus the start's session events join (`ClaimedCreate.announce`); none: never. */
  bus?: Pick<EventBus, 'joinAll'>;
}): NonNullable<RunLedger['createClaimed']> {
  const { sql, clock, ids, owner, events } = ctx;
  /**
   * The start's session events joined to its statement (p-pgstart4), asked only when that
   * statement goes alone (committed at its answer, so they are delivered and notified once it is),
   * the session's held `session.created` first (`own`); undefined: the caller publishes them.
   */
  const join = (sessionId: string, announce: ReturnType<NonNullable<ClaimedCreate['announce']>>) =>
    announce?.length ? ctx.bus?.joinAll?.(sessionId, announce, { own: true }) : undefined;
  return async (input, riding, claimWith) => {
    const now = clock.now();
    const row = newRunRow({ ...input, status: 'running' }, ids.next('run'), now, owner);
    const id = row.id;
    const sessionId = input.session_id;
    const first = firstRunEvent({ ...row, status: 'queued' });
    // The run's events seq 1.. in order: run.queued, run.started (its text as migration 33 writes
    // it), the prompt phase.
    const staged = [
      { type: first.type, text: JSON.stringify(first.payload) },
      { type: 'run.started', text: runStartedText(row) },
      { type: claimWith.next.type, text: JSON.stringify(claimWith.next.payload) },
    ];
    const trailing = claimWith.trailing?.(id) ?? [];
    const along = claimWith.alongside?.(id);
    const alongside = along?.runId === id ? along : undefined;
    // Last before the statement, nothing awaited between: it is sent as the join found it (alone).
    const alone = sql.aloneNow?.() === true;
    const joined: JoinedEvents | undefined = alone ? join(sessionId, claimWith.announce?.(row)) : undefined;
    let inserted: Awaited<ReturnType<typeof insertClaimedRun>> | undefined;
    try {
      const writing = insertClaimedRun(
        sql,
        row,
        staged.map(({ type, text }) => ({ type, payload: text })),
        now,
        riding,
        alongside && {
          write: alongside.write,
          type: alongside.event.type,
          payload: JSON.stringify(alongside.event.payload),
        },
        trailing,
        joined?.call,
        // The session is inserted by this very statement (`riding`): its events inline (p-pglone).
        joined?.newSession,
      );
      // Sent (p-pgoverlap): the caller may launch the run during the round trip.
      if (joined) claimWith.sent?.(sentRun(row, input.options ?? {}, now));
      inserted = await writing;
    } finally {
      // Nothing written (a failed statement): nothing delivered; the start fails whole.
      joined?.settle(inserted?.appended?.length ? inserted.appended : undefined);
    }
    const { run } = inserted;
    // The in-memory state as create then claim leave it: the run's session known, each event
    // announced in its seq's order.
    events.known(id, sessionId);
    const payloads = [first.payload, runStartedPayload(run), claimWith.next.payload];
    const written: RunEvent[] = inserted.events.map((ids, i) => ({
      ...ids,
      run_id: id,
      session_id: sessionId,
      type: staged[i]!.type,
      payload: payloads[i]!,
      created_at: now,
    }));
    for (const event of written) events.announce(event);
    let also: RunEvent | undefined;
    if (alongside && inserted.alongside) {
      also = {
        ...inserted.alongside,
        run_id: id,
        session_id: sessionId,
        type: alongside.event.type,
        payload: alongside.event.payload,
        created_at: now,
      };
      events.announce(also);
      alongside.written(also);
    }
    return {
      ok: true as const,
      run,
      started: written[1]!,
      next: written[2]!,
      ...(also ? { alongside: also } : {}),
      ...(joined ? { announced: true } : {}),
      alone,
    };
  };
}
