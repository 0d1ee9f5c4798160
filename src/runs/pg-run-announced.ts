/**
 * Run ledger writes on PostgreSQL that carry session events in their own statement (issue 18
 * item 6, p-pgstep4). A run event and the session event published with it (a tool's
 * `tool.started` and `tool.finished`), or a step end and the session events that follow it (the
 * step's `message.completed`s and `context.usage`), were two statements, the session event's
 * append the bus's own; each statement costs svc ≈ 150 µs of CPU all in. Here the bus's append
 * (`EventBus.joinAll`: the same function, lock, previous id and NOTIFY) is a call of the ledger's
 * statement, made after the run's row is locked (the order of every statement that takes both:
 * messages, session row, run row, then the session's event lock). The bus keeps publish order: it
 * joins only with its write queue idle (every earlier event stored, none in flight), the session's
 * ring in memory or unknown, and outside a transaction (an event is delivered once committed, and
 * the session's append lock is not held open); otherwise the event is published as before.
 * @module
 */
import { SvcError } from '../errors';
import type { EventBus, JoinedEvents } from '../events/bus';
import type { SqlClient } from '../store/postgres/client';
import type { FollowingWrite, PrecedingWrite, TrailingInsert } from '../store/preceding-write';
import {
  FOLLOWING_EVENT,
  FOLLOWING_EVENTS,
  followingEventSql,
  followingEventsSql,
  followingEventsWithRowSql,
  handedEventsSql,
} from './pg-run-following-repository';
import type { AppendedRow, FollowingCall, PostgresRunWrites } from './pg-run-write-repository';
import type { RunLedger, RunLedgerDeps, SessionAnnounce } from './run-ledger';
import type { RunPatch } from './run-writes';
import type { RunEvent } from './types';

/** The ledger's events (./pg-run-ledger.ts `postgresRunEvents`) as these writes use them. */
interface Events {
  /** Remembers a run's session. */
  known(runId: string, sessionId: string): void;
  /** Runs the ledger's listeners for an event just written. */
  announce(event: RunEvent): void;
  append(runId: string, type: string, payload: Record<string, unknown>): Promise<RunEvent>;
}

interface AnnounceDeps {
  sql: SqlClient;
  clock: RunLedgerDeps['clock'];
  bus: Pick<EventBus, 'publish' | 'joinAll' | 'reserve'> | undefined;
  writes: Pick<PostgresRunWrites, 'updateRunWithEventAfter' | 'insertEventWith'>;
  events: Events;
  ready: () => Promise<void>;
}

/**
 * The session events joined to a statement now, or undefined (published by the caller instead).
 * `next`: as the bus's next write (`EventBus.joinAll`'s `next`); by default as `announce` asks.
 */
function joinNow(
  deps: { sql: SqlClient; bus?: Pick<EventBus, 'joinAll'> },
  announce: SessionAnnounce | undefined,
  next = announce?.next === true,
): JoinedEvents | undefined {
  if (!announce?.events.length || deps.sql.inTransaction()) return undefined;
  return deps.bus?.joinAll?.(announce.sessionId, announce.events, next ? { next: true } : undefined);
}

/** The run's row and its event as one statement wrote them, announced to this ledger's listeners. */
export function announced(
  events: Pick<Events, 'known' | 'announce'>,
  id: string,
  written: Awaited<ReturnType<PostgresRunWrites['updateRunWithEvent']>>,
  type: string,
  payload: Record<string, unknown>,
  now: number,
) {
  if (!written) throw new SvcError('not_found', `run_id: no run "${id}"`);
  const { run } = written;
  events.known(id, run.session_id);
  const event = { ...written.event, run_id: id, session_id: run.session_id, type, payload, created_at: now };
  events.announce(event);
  return { run, event };
}

/**
 * `updateAndAppendAfter`: another domain's write, the run's update and one event in one statement;
 * `announce`'s session events last in it when the bus joins them (`announced`).
 */
export function updateAndAppendAfter(deps: AnnounceDeps): NonNullable<RunLedger['updateAndAppendAfter']> {
  const { clock, writes, events } = deps;
  return async <T>(
    id: string,
    patch: RunPatch,
    type: string,
    payload: Record<string, unknown>,
    before: PrecedingWrite<T>,
    announce?: SessionAnnounce,
    riding?: TrailingInsert,
  ) => {
    // Joined in this call, before any await: a caller's later publish (a stopper's `cancelling`,
    // p-pglast) follows them.
    const now = clock.now();
    const joined = joinNow(deps, announce);
    // Its answer lost, a caller that finds it committed has the bus deliver them as stored (p-lastalone).
    if (joined) announce?.joined?.(joined.createdAt);
    // Not joined, and they must keep their place: reserved in the bus's queue (`ordered`).
    const reserved =
      !joined && announce?.ordered && announce.events.length && !deps.sql.inTransaction()
        ? deps.bus?.reserve?.(announce.sessionId, announce.events)
        : undefined;
    let answered: Awaited<ReturnType<PostgresRunWrites['updateRunWithEventAfter']>> | undefined;
    try {
      await deps.ready();
      // Joined behind the bus's append in flight: sent once it answered (p-finishjoin).
      if (joined?.turn) await joined.turn;
      answered = await writes.updateRunWithEventAfter(
        id,
        patch,
        now,
        { type, payload: JSON.stringify(payload), created_at: now },
        before,
        joined?.call,
        riding,
      );
      riding?.wrote();
    } finally {
      // Nothing written (a missing message or run, a failure): nothing delivered, as before.
      joined?.settle(answered?.appended?.length ? answered.appended : undefined);
      reserved?.settle(answered?.written !== undefined);
    }
    const { written, answer } = answered;
    // `before` first: its not_found (a missing message) is the one the separate writes threw.
    const result = before.read(answer);
    return {
      ...announced(events, id, written, type, payload, now),
      before: result,
      announced: joined !== undefined || reserved !== undefined,
    };
  };
}

/** `updateAndAppend`: the run's update and one event in one statement, then the listeners. */
export function updateAndAppend(deps: {
  clock: RunLedgerDeps['clock'];
  writes: Pick<PostgresRunWrites, 'updateRunWithEvent'>;
  events: Pick<Events, 'known' | 'announce'> & { sessionOf(runId: string): string | undefined };
  sql: SqlClient;
  bus?: Pick<EventBus, 'joinAll'>;
}): NonNullable<RunLedger['updateAndAppend']> {
  const write = updateAndAppendWrite(deps.clock, deps.writes, deps.events);
  return async (id, patch, type, payload, options) => {
    // The session events as the bus's next write (p-finishjoin): the statement sent once the
    // append in flight answered, so their ids and deliveries follow its; outside a transaction.
    const announce = options?.announce;
    const joined = joinNow(deps, announce, true);
    if (!joined) return (await write(id, patch, type, payload, options)).answer;
    announce?.joined?.(joined.createdAt);
    let delivered = false;
    try {
      await joined.turn;
      const { answer, appended } = await write(id, patch, type, payload, options, joined.call);
      if (appended?.length !== announce?.events.length) return answer;
      delivered = true;
      // Delivered when the caller says (its local effects first: a listener sees the session idle).
      return { ...answer, deliver: () => joined.settle(appended) };
    } finally {
      // Nothing written (the run missing, a failure): nothing delivered; the caller publishes.
      if (!delivered) joined.settle(undefined);
    }
  };
}

/** `updateAndAppend`'s statement, then its listeners (the run's event, then the other domain's). */
function updateAndAppendWrite(
  clock: RunLedgerDeps['clock'],
  writes: Pick<PostgresRunWrites, 'updateRunWithEvent'>,
  events: Pick<Events, 'known' | 'announce'> & { sessionOf(runId: string): string | undefined },
) {
  type Update = NonNullable<RunLedger['updateAndAppend']>;
  return async (
    id: string,
    patch: Parameters<Update>[1],
    type: string,
    payload: Record<string, unknown>,
    options: Parameters<Update>[4],
    after?: FollowingCall,
  ): Promise<{ answer: Awaited<ReturnType<Update>>; appended?: AppendedRow[] }> => {
    const now = clock.now();
    const event = { type, payload: JSON.stringify(payload), created_at: now };
    // The session's queue is the run's: its id is known when this ledger created or appended to it.
    const queueOf = options?.queue ? events.sessionOf(id) : undefined;
    const along = options?.alongside;
    const alongside = along && {
      write: along.write,
      event: { type: along.event.type, payload: JSON.stringify(along.event.payload), created_at: now },
    };
    // The run's last step end first (p-pglast): its event before this one, gating the statement.
    const first = options?.first;
    const firstWrite = first && {
      before: first.before,
      event: { type: first.event.type, payload: JSON.stringify(first.event.payload), created_at: now },
      ...(first.riding ? { riding: first.riding } : {}),
    };
    const written = await writes.updateRunWithEvent(
      id,
      patch,
      now,
      event,
      queueOf,
      alongside,
      after,
      firstWrite,
    );
    // Answered: the step's model call was written whatever the gate decided.
    first?.riding?.wrote();
    if (first && written?.first) {
      const { session_id } = written.run;
      const stepEvent = { ...written.first.event, run_id: id, session_id, ...first.event, created_at: now };
      events.known(id, session_id);
      // Its writes' run events first (a held step's `phase`, p-heldstep: seqs before its end's).
      const result = first.before.read(written.first.answer);
      events.announce(stepEvent);
      first.written(result, stepEvent);
    }
    const answer = announced(events, id, written, type, payload, now);
    if (along && written?.also) {
      // The other domain's event after the run's own, announced in its seq's order.
      const also = {
        ...written.also,
        run_id: id,
        session_id: answer.run.session_id,
        type: along.event.type,
        payload: along.event.payload,
        created_at: now,
      };
      events.announce(also);
      along.written(also);
    }
    return {
      answer: written?.queued === undefined ? answer : { ...answer, queued: written.queued },
      appended: written?.appended,
    };
  };
}

/**
 * `appendAnnounced` (see `RunLedger`): joined or published at the call, in the caller's publish
 * order, before anything is awaited.
 */
export function appendAnnounced(deps: AnnounceDeps): NonNullable<RunLedger['appendAnnounced']> {
  const { clock, writes, events, bus } = deps;
  return async (runId, type, payload, announce, riding) => {
    const joined = joinNow(deps, { sessionId: announce.sessionId, events: [announce] });
    if (!joined) {
      bus?.publish(announce.sessionId, announce.type, announce.payload);
      await deps.ready();
      return await events.append(runId, type, payload);
    }
    const created_at = clock.now();
    let written: Awaited<ReturnType<PostgresRunWrites['insertEventWith']>>;
    try {
      await deps.ready();
      written = await writes.insertEventWith(
        runId,
        { type, payload: JSON.stringify(payload), created_at },
        joined.call,
        riding,
      );
      riding?.wrote();
    } catch (error) {
      // The statement wrote neither: the session event is published after it, as it was before.
      joined.settle(undefined);
      bus?.publish(announce.sessionId, announce.type, announce.payload);
      throw error;
    }
    joined.settle(written.appended.length ? written.appended : undefined);
    if (!written.event) throw new SvcError('not_found', `run_id: no run "${runId}"`);
    const { session_id, ...ids } = written.event;
    events.known(runId, session_id);
    const event = { ...ids, run_id: runId, session_id, type, payload, created_at };
    events.announce(event);
    return event;
  };
}

/** A following event's row as its `WITH` answers it. */
type StoredRow = { id: number; seq: number; session_id: string };

/** The run event as stored, from its row and what was written. */
function storedEvent(
  row: StoredRow,
  runId: string,
  e: { type: string; payload: Record<string, unknown>; created_at: number },
): RunEvent {
  return {
    id: Number(row.id),
    seq: Number(row.seq),
    run_id: runId,
    session_id: row.session_id,
    type: e.type,
    payload: e.payload,
    created_at: e.created_at,
  };
}

/**
 * `followingEvent` (see `RunLedger`): the event's `WITH` (./pg-run-following-repository.ts
 * `followingEventSql`) for another domain's statement, and the event as stored once it answered.
 */
export function followingEvent(
  events: Pick<Events, 'known' | 'announce'>,
): NonNullable<RunLedger['followingEvent']> {
  return (runId, type, payload, created_at) => {
    let stored: RunEvent | undefined;
    const write: FollowingWrite = {
      values: [runId, type, JSON.stringify(payload), created_at],
      name: FOLLOWING_EVENT,
      sql: followingEventSql,
      read(answer) {
        const row = answer as StoredRow | null | undefined;
        if (!row) return;
        stored = storedEvent(row, runId, { type, payload, created_at });
        events.known(runId, stored.session_id);
        events.announce(stored);
      },
    };
    return { write, written: () => stored };
  };
}

/**
 * `followingEvents` (see `RunLedger`): the events' `WITH` (./pg-run-following-repository.ts
 * `followingEventsSql`) for another domain's statement, and the events as stored once it answered,
 * announced in their order.
 */
export function followingEvents(
  events: Pick<Events, 'known' | 'announce'>,
): NonNullable<RunLedger['followingEvents']> {
  return (runId, list, riding) => {
    let stored: RunEvent[] | undefined;
    let ridingId: number | undefined;
    const at = riding?.at;
    const values = [
      runId,
      list.map((e) => e.type),
      list.map((e) => JSON.stringify(e.payload)),
      list.map((e) => e.created_at),
    ];
    const readEvents = (answer: unknown) => {
      const rows = answer as StoredRow[] | null | undefined;
      if (!rows || rows.length !== list.length) return;
      stored = rows.map((row, i) => storedEvent(row, runId, list[i] as (typeof list)[number]));
      for (const event of stored) {
        events.known(runId, event.session_id);
        events.announce(event);
      }
    };
    // Handed over to the finish's own list (p-pglone): its `WITH` holds the arrays from then on.
    const handed = riding && at ? followingEventsWithRowSql(at, true) : handedEventsSql;
    const write: { -readonly [K in keyof FollowingWrite]: FollowingWrite[K] } =
      riding && at
        ? {
            values: [...values, ...riding.values],
            name: FOLLOWING_EVENTS,
            sql: followingEventsWithRowSql(at),
            read(answer) {
              const both = answer as { events?: unknown; riding?: unknown } | null | undefined;
              const id = both?.riding;
              if (id !== undefined && id !== null) ridingId = Number(id);
              readEvents(both?.events);
            },
          }
        : { values, name: FOLLOWING_EVENTS, sql: followingEventsSql, read: readEvents };
    write.handingOver = (build) => {
      const own = write.sql;
      write.sql = handed;
      try {
        return build();
      } finally {
        write.sql = own;
      }
    };
    return { write, written: () => stored, ridingId: () => ridingId };
  };
}

/** `followingEvent` and `followingEvents` of the ledger (see `RunLedger`). */
export function followingWrites(events: Pick<Events, 'known' | 'announce'>) {
  return { followingEvent: followingEvent(events), followingEvents: followingEvents(events) };
}
