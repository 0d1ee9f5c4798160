/**
 * The bus's events written by another statement (./bus.ts): `join`, `joinAll` and `reserve`, and
 * `adopt` for a joined group whose statement's answer was lost.
 * @module
 */
import type { AsyncResource } from 'node:async_hooks';
import type { Clock } from '../util/ids';
import type { Queued, Task } from './bus-writes';
import type { AppendedEvent, EventStore } from './event-store';
import type { RingCache } from './ring';

/** An event as a caller gives it to be joined or reserved. */
type SessionEventInput = { type: string; payload: Record<string, unknown> };

/** An event another statement appends (`EventBus.join`). */
export interface JoinedEvent {
  /** The event's time, as `publish` would have stamped it. */
  readonly createdAt: number;
  /** The statement answered: the event's id and its session's previous id, or undefined (not written). */
  settle(appended: AppendedEvent | undefined): void;
}

/** Events of one session another statement appends with one call (`EventBus.joinAll`). */
export interface JoinedEvents {
  /** The events' time, as `publish` would have stamped it. */
  readonly createdAt: number;
  /**
   * The append as a function call for the caller's statement, its parameters numbered from
   * `first` (the log's `appendCall`): it answers one row (`event_id`, `previous_id`) per event, in
   * the events' order.
   */
  call(first: number): { text: string; values: unknown[] };
  /**
   * `call` for a statement that inserts the session itself (the log's `appendNewCall`, p-pglone: a
   * new session's start): `WITH`s of its own and a `FROM` item of the same rows. Absent: `call`.
   */
  newSession?(first: number, go: string): { ctes: string; rows: string; values: unknown[] };
  /** The statement answered: each event's id and previous id, in order; undefined: not written. */
  settle(appended: readonly AppendedEvent[] | undefined): void;
  /**
   * Joined behind a busy queue (`joinAll`'s `next`): the statement is sent only once this resolves
   * (every event queued before these is stored and delivered), and `settle`d after it, whatever
   * happens. Absent: send it now.
   */
  readonly turn?: Promise<void>;
}

/** `EventBus.adopt`: a catch-up step of the queue that finds the group (./bus-writes.ts `CatchUp.adopt`). */
export function adopter(deps: {
  sharedLog: () => EventStore | undefined;
  publisherContext: () => AsyncResource | undefined;
  enqueue: (task: Task) => void;
}): (sessionId: string, types: readonly string[], createdAt: number) => Promise<boolean> {
  return (sessionId, types, createdAt) => {
    if (!deps.sharedLog() || !types.length) return Promise.resolve(false);
    const context = deps.publisherContext();
    return new Promise<boolean>((found, failed) => {
      deps.enqueue({
        kind: 'catch-up',
        sessionId,
        adopt: { types, createdAt, ...(context ? { context } : {}), found },
        done: () => {},
        failed,
      });
    });
  };
}

/** A join that takes no held event. */
const NOTHING_TAKEN: { items: Queued[]; after: (() => void)[] } = { items: [], after: [] };

/**
 * `EventBus.join` and `joinAll`: the events enqueued now, written by another statement, when the
 * queue is idle and the session's ring is in memory (taken now: their delivery needs no read) or
 * unknown here; `reserve`: enqueued now, written by the queue once the statement answered. One
 * group: written (delivered) together, never with other events.
 */
export function joiners(deps: {
  sharedLog: () => EventStore | undefined;
  /** The queue is idle and nothing of the session waits to be enqueued. */
  joinable: (sessionId: string) => boolean;
  /** The queue is idle: the session's events the caller's own transaction holds, taken (`HeldPublishes.takeOwn`). */
  takeOwn: (sessionId: string) => { items: Queued[]; after: (() => void)[] } | undefined;
  /** A group enqueued now waits for two writes at most (the one in flight, one run behind it). */
  next: (sessionId: string) => boolean;
  rings: Pick<RingCache, 'peek' | 'unknown'>;
  clock: Clock;
  publisherContext: () => AsyncResource | undefined;
  enqueue: (task: Task) => void;
}): {
  join<P extends Record<string, unknown>>(
    sessionId: string,
    type: string,
    payload: P,
  ): JoinedEvent | undefined;
  joinAll(
    sessionId: string,
    events: readonly SessionEventInput[],
    options?: { own?: boolean; next?: boolean },
  ): JoinedEvents | undefined;
  reserve(
    sessionId: string,
    events: readonly SessionEventInput[],
  ): { settle(written: boolean): void } | undefined;
} {
  const { sharedLog, joinable, rings } = deps;
  /** The events enqueued as one group, or undefined (not joinable now). */
  const enqueueGroup = (
    sessionId: string,
    events: readonly { type: string; payload: Record<string, unknown> }[],
    own = false,
    next = false,
  ) => {
    const log = sharedLog();
    if (!log?.appendAcross || !events.length) return undefined;
    const peeked = rings.peek(sessionId);
    const now = peeked !== undefined || rings.unknown(sessionId);
    // Taken last: nothing refuses the join after it.
    const taken = !now
      ? undefined
      : own
        ? deps.takeOwn(sessionId)
        : joinable(sessionId)
          ? NOTHING_TAKEN
          : undefined;
    // Else behind the write in flight: the ring taken at its turn (`reached`), the statement sent then.
    let reached: (() => void) | undefined;
    let turn: Promise<void> | undefined;
    if (!taken) {
      if (own || !next || !deps.next(sessionId)) return undefined;
      turn = new Promise<void>((resolve) => {
        reached = resolve;
      });
    }
    const ring = reached ? undefined : peeked;
    let settle!: (appended: readonly AppendedEvent[] | undefined) => void;
    const appended = new Promise<readonly AppendedEvent[] | undefined>((resolve) => {
      settle = resolve;
    });
    const createdAt = deps.clock.now();
    const group = {};
    const items: Queued[] = [...(taken?.items ?? [])];
    for (const { type, payload } of events) {
      items.push({ sessionId, type, payload, created_at: createdAt, context: deps.publisherContext() });
    }
    items.forEach((item, index) => {
      deps.enqueue({ ...item, joined: { appended, ring, group, index, ...(reached ? { reached } : {}) } });
    });
    // Their waiters (a subscriber's catch-up) behind them, as at the transaction's end.
    for (const fn of taken?.after ?? []) fn();
    return { log, createdAt, settle, items, turn };
  };
  return {
    reserve(sessionId, events) {
      if (!sharedLog()?.appendAcross || !events.length) return undefined;
      let settle!: (written: boolean) => void;
      const written = new Promise<boolean>((resolve) => {
        settle = resolve;
      });
      const gated = { written, group: {} };
      const created_at = deps.clock.now();
      for (const { type, payload } of events)
        deps.enqueue({ sessionId, type, payload, created_at, context: deps.publisherContext(), gated });
      return { settle };
    },
    join(sessionId, type, payload) {
      const joined = enqueueGroup(sessionId, [{ type, payload }]);
      if (!joined) return undefined;
      return {
        createdAt: joined.createdAt,
        settle: (appended) => joined.settle(appended ? [appended] : undefined),
      };
    },
    joinAll(sessionId, events, options) {
      if (!sharedLog()?.appendCall) return undefined;
      const joined = enqueueGroup(sessionId, events, options?.own, options?.next);
      const appendCall = joined?.log.appendCall;
      if (!joined || !appendCall) return undefined;
      const texts = joined.items.map(({ type, payload, created_at }) => ({
        sessionId,
        type,
        payload: JSON.stringify(payload),
        createdAt: created_at,
      }));
      const appendNew = joined.log.appendNewCall;
      return {
        createdAt: joined.createdAt,
        call: (first) => appendCall(first, texts),
        ...(appendNew ? { newSession: (first: number, go: string) => appendNew(first, texts, go) } : {}),
        settle: joined.settle,
        ...(joined.turn ? { turn: joined.turn } : {}),
      };
    },
  };
}
