/**
 * The session event bus. Every published session event gets a monotonically increasing id (the
 * id the event log gives it), is kept in a bounded per-session ring for replay, and is appended to
 * the log so a reconnect older than the ring can resync from it. Only the most recently used
 * rings stay in memory (`maxRings`, sessions with listeners always): a long-lived server creates a
 * session per compat request, and a ring per session would grow with every one (issue 17). A ring
 * dropped from memory is read back from the log when its session is used again, as it was.
 * Events flow one way: domain → bus → subscribers (SSE, TUI, svc run, tests).
 *
 * The log is async (issue 18: SQLite or PostgreSQL), publishing is not: `publish` queues the
 * event and returns. One ordered write queue per bus appends the events in publish order, each
 * append awaited before the next, so ids increase in publish order per session; an event reaches
 * the ring and the subscribers only once it is stored, with its id. So a subscriber never sees an
 * event a replay could not serve, and `replay`, `retained` and `lastId` wait for the queue first
 * (they see every event published before the call). A subscriber that subscribes, then replays
 * after an id, then drops the ids it has seen misses nothing and gets nothing twice. A store that
 * answers at once (SQLite: `now` of ./event-store.ts) drains the queue before `publish` returns, so
 * on SQLite an event is stored and delivered synchronously, as it always was. Where a caller
 * needs the id, `publishStored` resolves the stored event; `flush` waits for the queue.
 * Events published by a listener during a delivery join the queue behind it, so every listener
 * sees events in id order. Delivered after an await (PostgreSQL), a local event reaches its
 * listeners in the publisher's async context, captured at publish: a listener's reads see what
 * the publisher sees (the transaction it published in, src/store/postgres/client.ts).
 *
 * Several nodes on one log (issue 18, PostgreSQL; `shared`): the log is the source of truth and
 * ids are the one order. Per session the bus has delivered exactly the log's events up to the
 * ring's last id (a prefix of the log), and delivers the next ones in ascending id, each once:
 * - a local event whose append says another node's events came before it (`append`'s previous id
 *   is past the ring) is delivered after those, read from the log in the same queue step;
 * - `follow` takes a feed of "event N of session S was committed" (./pg-notify.ts): for a session
 *   with listeners here, a catch-up step in the write queue reads the log after the ring's last id
 *   and delivers what it finds; the feed's `resync` (its connection came back, notices may be lost)
 *   catches up every listened session the same way;
 * - `replay`, `retained` and `lastId` catch the session up from the log first, so a client that
 *   reconnects with a `Last-Event-ID` from another node gets exactly the events after it.
 * A listener of one session gets other nodes' events committed after the session's ring is in
 * memory here (`subscribe` loads it); subscribing, then replaying after an id (as the SSE route
 * does) misses nothing in between. Another node's events reach this node's listeners of their
 * session, not the '*' listeners:
 * those are node-local observers (hooks, findings, workspace reactions) that already ran on the
 * node that published the event.
 *
 * Inside a PostgreSQL transaction (`transaction`), `publish` holds the event until the transaction
 * has ended (./held-publishes.ts): its events are appended together, after the writes they announce.
 *
 * The write-queue steps are in ./bus-writes.ts, the joins in ./bus-joiners.ts, the rings in
 * ./ring.ts, the queue in ./write-queue.ts.
 * @module
 */
import { AsyncResource } from 'node:async_hooks';
import type { Db } from '../store/db';
import type { Clock } from '../util/ids';
import { deliverTo, type EventFeed, type EventListener, followFeed } from './bus-feed';
import { adopter, type JoinedEvent, type JoinedEvents, joiners } from './bus-joiners';
import { catchUpRequests, createBusWrites, type Task } from './bus-writes';
import { createEventStore, type EventStore, type ImmediateEventStore } from './event-store';
import { heldPublishes, type PublishTransaction } from './held-publishes';
import { eventOf, type Ring, type RingCache, type RingLog, ringCache, type SessionEvent } from './ring';
import { writeQueue } from './write-queue';

export type { EventFeed, EventListener, JoinedEvent, JoinedEvents, SessionEvent };

export interface ReplayResult {
  events: SessionEvent[];
  /** ring: served from memory; log: the id was older than the ring, served from the database. */
  source: 'ring' | 'log';
  /** With `page.upTo`: how many events the replay holds after the id up to `upTo`, all pages. */
  count?: number;
}

/** One page of a replay (`EventBus.replay`): a long log is never read, nor parsed, at once. */
export interface ReplayPage {
  /** At most this many events. */
  limit: number;
  /** Count the whole replay's events up to this id too (`ReplayResult.count`), without reading them. */
  upTo?: number;
}

export interface EventBus {
  /**
   * Queues the event: it is stored in publish order, then delivered with its id. Never throws
   * for the log (a failed append goes to `onError`, and its event is not delivered).
   */
  publish<P extends Record<string, unknown>>(sessionId: string, type: string, payload: P): void;
  /** `publish`, resolving the event once it is stored and delivered (rejects when the append fails). */
  publishStored<P extends Record<string, unknown>>(
    sessionId: string,
    type: string,
    payload: P,
  ): Promise<SessionEvent<P>>;
  /**
   * An event appended by another statement (on PostgreSQL a message's INSERT, `appendAnnounced`
   * of src/sessions/pg-message-store.ts), when that keeps publish order: the log is shared and the
   * write queue idle (every event published before is stored, none being written), and the
   * session's ring is in memory or unknown here. It takes its place in the queue now (events
   * published after it wait for it) and is delivered, with its id, once `settle` gives the
   * statement's answer; `settle(undefined)`: the statement wrote nothing, nothing is delivered.
   * Undefined: publish it instead. Absent: never joined.
   */
  join?<P extends Record<string, unknown>>(
    sessionId: string,
    type: string,
    payload: P,
  ): JoinedEvent | undefined;
  /**
   * `join` for several events of one session appended by one function call of the caller's
   * statement (`JoinedEvents.call`: on PostgreSQL a step end's completions, a tool's event with
   * its run event), under the same conditions, the log offering `appendCall`. They take their
   * places in the queue now, in order, and are delivered together once `settle` gives the
   * statement's answer. Undefined: publish them instead. Absent: never joined. `own`: the
   * session's events the caller's own transaction holds (./held-publishes.ts) are taken from it
   * and go first in the group, with their own times (p-pgstart4: a lone compat start's
   * `session.created`), where they would refuse the join; for a statement that commits by itself.
   * `next`: when the queue is busy with two writes at most (the one in flight and one run of
   * events waiting behind it), the group still takes its place now, behind them, and the caller
   * sends its statement once `turn` resolves: ids and deliveries follow the write ahead's. Where a
   * statement's sender may wait that long (a run's finish, p-finishjoin).
   */
  joinAll?(
    sessionId: string,
    events: readonly { type: string; payload: Record<string, unknown> }[],
    options?: { own?: boolean; next?: boolean },
  ): JoinedEvents | undefined;
  /**
   * Events of one session a statement of the caller's writes (a stop's held tool result), where
   * `join`/`joinAll` refused them (the queue is busy): they take their places in the queue now, as
   * if published at this call, and the queue appends them once `settle(true)` says the statement
   * wrote what they announce (`false`: dropped, never delivered). Outside a store transaction
   * (nothing held). The queue waits for the statement's answer: not for a hot path. Undefined: the
   * log has no `appendAcross` (publish them after it). Absent: never reserved.
   */
  reserve?(
    sessionId: string,
    events: readonly { type: string; payload: Record<string, unknown> }[],
  ): { settle(written: boolean): void } | undefined;
  /**
   * Events of a group joined to a statement (`joinAll`) whose answer was lost, so settled
   * `undefined` (nothing delivered), that the caller found committed since (a run's finish whose
   * retry finds the run finished by it). A step of the queue, behind what is queued now, reads the
   * session's log after its ring and finds them (`types` in order, each stamped `createdAt`:
   * `JoinedEvents.createdAt`): delivered as this node's (to '*' too, in the caller's context), with
   * their stored ids, and others' events read with them as a catch-up delivers those. Taken into
   * the ring meanwhile as another node's (a notice's catch-up, a later append's read), they reached
   * the session's listeners then, and go to '*' now. Resolves whether they were found (false:
   * nothing of them delivered; not a shared log). Once per group: a second call delivers them to
   * '*' again. Absent: never.
   */
  adopt?(sessionId: string, types: readonly string[], createdAt: number): Promise<boolean>;
  /**
   * Resolves once every event published before the call and queued is stored and delivered: not
   * those a transaction still open holds (`transaction`), the caller's own included, which are
   * enqueued at its end and never delivered before it (p-heldfix: a wait inside the transaction
   * delivered them early, before its COMMIT). A caller that must act on its own held events now
   * reads them (`heldOwn`).
   */
  flush(): Promise<void>;
  /**
   * Every event published so far that `flush()` would wait for is stored and delivered: `flush()`
   * now would wait for nothing.
   */
  drained?(): boolean;
  /**
   * The events the caller's open store transaction holds now (PostgreSQL), in publish order, left
   * held (they are stored and delivered at its end); none outside one. Not stored: no id.
   */
  heldOwn(): readonly Omit<SessionEvent, 'id'>[];
  /**
   * The session's user is done with it (a compat request's end, issue 17 item 4): its ring leaves
   * memory now, as the `maxRings` bound would drop it later, unless the session has listeners, an
   * event of it is queued or held, or there is no log or one that does not answer at once
   * (PostgreSQL: reading it back would be a query). Used again (a replay, a `Last-Event-ID`, a new
   * event), it is read back from the log as it was. Absent: rings leave by the bound only.
   */
  release?(sessionId: string): void;
  /** Listen to one session, or to every session with '*'. Returns the unsubscribe function. */
  subscribe(sessionId: string, listener: EventListener): () => void;
  /**
   * Events after `afterId` (exclusive); with `page`, the first `page.limit` of them (the caller
   * reads on after the last one), from the ring or the log as the id asks.
   */
  replay(sessionId: string, afterId: number, page?: ReplayPage): Promise<ReplayResult>;
  /** The retained ring entries that back replay (oldest first). */
  retained(sessionId: string): Promise<SessionEvent[]>;
  /** Highest event id published for the session (0 when none). */
  lastId(sessionId: string): Promise<number>;
  /**
   * Deliver other nodes' events on the same log: woken by the feed, read from the log (the bus
   * becomes `shared`). Returns the function that stops following.
   */
  follow(feed: EventFeed): () => void;
  close(): void;
}

export function createEventBus(deps: {
  /** The event log, opened on first publish/replay; without it (and `db`) events live in memory only. */
  store?: () => EventStore & { readonly now?: ImmediateEventStore };
  /** The SQLite database, for the SQLite log (./event-store.ts) when `store` is not given. */
  db?: () => Db;
  clock: Clock;
  ringSize?: number;
  /** Rings kept in memory at most, least recently used dropped first (default 128). */
  maxRings?: number;
  /**
   * Other nodes append to the same log (PostgreSQL): ids are the one order, reads catch up from
   * the log (see the module doc). `follow` sets it too.
   */
  shared?: boolean;
  /**
   * The store transaction open in the publisher's context (PostgreSQL): events published in it
   * are appended once it has ended, together (./held-publishes.ts). None: enqueued at publish.
   */
  transaction?: () => PublishTransaction | undefined;
  onError?: (e: unknown) => void;
}): EventBus {
  const ringSize = deps.ringSize ?? 1000;
  const listeners = new Map<string, Set<EventListener>>();
  let closed = false;
  let shared = deps.shared ?? false;

  const open = deps.store ?? (deps.db ? () => createEventStore(deps.db!()) : undefined);
  let store: (EventStore & { readonly now?: ImmediateEventStore }) | undefined;
  const log = () => {
    if (!open || closed) return undefined;
    store ??= open();
    return store;
  };
  const immediate = (): ImmediateEventStore | undefined => log()?.now;
  const ringLog = (): RingLog | undefined => immediate() ?? log();
  /** The log other nodes append to as well, when there is one (never SQLite's immediate one). */
  const sharedLog = (): EventStore | undefined => (shared && !immediate() ? log() : undefined);

  const rings = ringCache({
    ringSize,
    maxRings: deps.maxRings ?? 128,
    log: ringLog,
    listened: (sessionId) => (listeners.get(sessionId)?.size ?? 0) > 0,
  });

  /**
   * The publisher's async context, for a delivery after an await (not SQLite's, which delivers
   * inside `publish`): an `AsyncResource` made at publish, whose init copies the store of every
   * enabled AsyncLocalStorage (a transaction scope, a read scope, a span, anyone's), entered for
   * the delivery. `AsyncLocalStorage.snapshot()` is the same resource behind `bind`, whose
   * deprecated `asyncResource` accessors cost ≈ 13 µs a call on Node 20, against ≈ 0.3 µs.
   */
  const publisherContext = () => (immediate() || !log() ? undefined : new AsyncResource('svc.bus-publish'));
  /**
   * To the session's listeners (unless `session` is false: they had it), and to '*' for an event
   * published on this node (`local`).
   */
  const deliver = (event: SessionEvent, local = true, session = true) => {
    const own = session ? listeners.get(event.session_id) : undefined;
    if (own) deliverTo(own, event, deps.onError);
    const all = local ? listeners.get('*') : undefined;
    if (all) deliverTo(all, event, deps.onError);
  };

  const writes = createBusWrites({ rings, ringSize, immediate, log, sharedLog, deliver });
  const { enqueue, flush, idle, twoAhead } = writeQueue<Task>(
    (task) => {
      if (task.kind !== 'catch-up') return writes.store1(task);
      return writes.catchUp(task.done ? task : catchUps.take(task));
    },
    deps.onError,
    writes.batch,
  );
  const catchUps = catchUpRequests(enqueue, rings.mark);
  const requestCatchUp = catchUps.request;
  const held = heldPublishes({ transaction: deps.transaction ?? (() => undefined), enqueue });
  /** Held for the publisher's transaction when the log is shared and batches (PostgreSQL). */
  const hold = (item: Task & { kind?: undefined }) =>
    deps.transaction !== undefined && sharedLog()?.appendAcross !== undefined && held.hold(item);

  return {
    publish(sessionId, type, payload) {
      const item = { sessionId, type, payload, created_at: deps.clock.now(), context: publisherContext() };
      if (!hold(item)) enqueue(item);
    },
    publishStored<P extends Record<string, unknown>>(sessionId: string, type: string, payload: P) {
      held.releaseOwn();
      return new Promise<SessionEvent<P>>((resolve, reject) => {
        enqueue({
          sessionId,
          type,
          payload,
          created_at: deps.clock.now(),
          stored: (event) => resolve(event as SessionEvent<P>),
          failed: reject,
          context: publisherContext(),
        });
      });
    },
    ...joiners({
      sharedLog,
      // A session with events held for a transaction's end: a joined event would overtake them.
      joinable: (sessionId) => idle() && !held.holds(sessionId),
      takeOwn: (sessionId) => (idle() ? held.takeOwn(sessionId) : undefined),
      // Nothing of the session held, two writes at most ahead (one in flight, one run waiting).
      next: (sessionId) => (idle() || twoAhead()) && !held.holds(sessionId),
      rings,
      clock: deps.clock,
      publisherContext,
      enqueue,
    }),
    adopt: adopter({ sharedLog, publisherContext, enqueue }),
    flush: () => flush(),
    drained: idle,
    heldOwn: held.own,
    subscribe(sessionId, listener) {
      let set = listeners.get(sessionId);
      if (!set) {
        set = new Set();
        listeners.set(sessionId, set);
      }
      set.add(listener);
      // Shared: load the ring now; other nodes' events committed from then on are delivered live.
      // Behind the session's events held for the caller's transaction: their append starts the
      // ring (a new session's), so the catch-up then reads nothing.
      if (sessionId !== '*' && !rings.peek(sessionId) && sharedLog()) {
        const catchUp = () => requestCatchUp(sessionId);
        if (!held.afterOwn(sessionId, catchUp)) catchUp();
      }
      return () => {
        set.delete(listener);
        if (set.size === 0 && listeners.get(sessionId) === set) listeners.delete(sessionId);
      };
    },
    // SQLite's log only: a released ring read back on PostgreSQL is a query (a pool checkout).
    release: releaser({ idle, flush, holds: held.holds, rings, immediate: () => immediate() !== undefined }),
    ...ringReads({ sharedLog, log, rings, enqueue, flush, releaseOwn: held.releaseOwn }),
    follow(feed) {
      shared = true;
      return followFeed(feed, { closed: () => closed, listeners, rings, requestCatchUp });
    },
    close() {
      closed = true;
      listeners.clear();
    },
  };
}

/**
 * `release`: the ring leaves now, or, mid-delivery (a compat request ends in its run's last event's
 * delivery), once the queue has delivered what it holds.
 */
function releaser(deps: {
  idle: () => boolean;
  flush: () => Promise<void>;
  holds: (sessionId: string) => boolean;
  rings: Pick<RingCache, 'release'>;
  immediate: () => boolean;
}): (sessionId: string) => void {
  const { idle, holds, rings } = deps;
  return (sessionId) => {
    if (!deps.immediate()) return;
    const now = () => !holds(sessionId) && rings.release(sessionId);
    if (idle()) now();
    else
      void deps.flush().then(
        () => idle() && now(),
        () => {},
      );
  };
}

/**
 * `replay`, `retained` and `lastId`: a session's ring behind every queued publish (what the
 * caller's own transaction holds enqueued first), then, on a shared log, the log's events after
 * the ring (another node's too).
 */
function ringReads(deps: {
  sharedLog: () => EventStore | undefined;
  log: () => EventStore | undefined;
  rings: Pick<RingCache, 'get'>;
  enqueue: (task: Task) => void;
  flush: () => Promise<void>;
  releaseOwn: () => void;
}): Pick<EventBus, 'replay' | 'retained' | 'lastId'> {
  const { rings, enqueue } = deps;
  const ringFor = async (sessionId: string): Promise<Ring> => {
    deps.releaseOwn();
    if (deps.sharedLog()) {
      await new Promise<void>((done, failed) => enqueue({ kind: 'catch-up', sessionId, done, failed }));
    } else await deps.flush();
    return await rings.get(sessionId);
  };
  return {
    async replay(sessionId, afterId, page) {
      const ring = await ringFor(sessionId);
      const current = deps.log();
      const upTo = page?.upTo;
      if (afterId >= ring.evictedUpTo || !current) {
        const after = ring.events.filter((e) => e.id > afterId);
        const count = upTo === undefined ? undefined : after.filter((e) => e.id <= upTo).length;
        const events = page ? after.slice(0, page.limit) : after;
        return { events, source: 'ring', ...(count === undefined ? {} : { count }) };
      }
      const rows = await current.after(sessionId, afterId, page?.limit);
      const count = upTo === undefined ? undefined : await countAfter(current, sessionId, afterId, upTo);
      return { events: rows.map(eventOf), source: 'log', ...(count === undefined ? {} : { count }) };
    },
    async retained(sessionId) {
      return [...(await ringFor(sessionId)).events];
    },
    async lastId(sessionId) {
      const ring = await ringFor(sessionId);
      return ring.events.length ? ring.events[ring.events.length - 1].id : ring.evictedUpTo;
    },
  };
}

/** The log's events of a session after `afterId` up to `upTo`, counted by the log when it can. */
async function countAfter(
  log: EventStore,
  sessionId: string,
  afterId: number,
  upTo: number,
): Promise<number> {
  if (log.count) return await log.count(sessionId, afterId, upTo);
  return (await log.after(sessionId, afterId)).filter((row) => row.id <= upTo).length;
}
