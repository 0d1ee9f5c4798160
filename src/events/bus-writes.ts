/**
 * The bus's write-queue steps (./bus.ts): storing a published event, then ringing and delivering
 * it; and, on a log other nodes append to (`sharedLog`), reading their events after a ring's last
 * id (a catch-up) so each session's events are delivered once, in id order.
 * @module
 */

import { batchWrites, type Queued } from './bus-batches';
import type { AppendedEvent, EventStore, ImmediateEventStore } from './event-store';
import { eventOf, pushToRing, type Ring, type RingCache, type SessionEvent, seen } from './ring';

export type { Queued };

/** A write-queue step that reads another node's events of a session from the log (shared bus). */
export interface CatchUp {
  kind: 'catch-up';
  sessionId: string;
  /**
   * The highest event id the notices that asked for this step announced: when the ring has
   * already seen it (the node's own appends, whose notices come back to it), nothing is read.
   * Unset: read (a new subscriber, a resync, a replay).
   */
  upTo?: number;
  /**
   * Set with `upTo` when a read of everything was asked too (a new subscriber, a resync) at this
   * mark of the rings (`RingCache.mark`): a ring made after it needs no read for that (it starts
   * at what the log held then; later events' notices come to the listeners, `upTo`).
   */
  since?: number;
  done?: () => void;
  failed?: (error: unknown) => void;
  /**
   * This node's events found stored after their statement's answer was lost (`EventBus.adopt`):
   * the group's types in order and the time the bus stamped them. The rows that are they (read
   * after the ring, or taken into it meanwhile as another node's) are delivered as this node's.
   */
  adopt?: Adopted;
}

/** `CatchUp.adopt`: a lost statement's events, delivered as this node's once found in the log. */
export interface Adopted {
  types: readonly string[];
  createdAt: number;
  context?: Queued['context'];
  /** Whether they were found (all of them, in one run). */
  found: (found: boolean) => void;
}

export type Task = Queued | CatchUp;

export function createBusWrites(deps: {
  rings: Pick<RingCache, 'get' | 'unknown' | 'start' | 'since'>;
  ringSize: number;
  /** The log answering at once (SQLite), if that is the log. */
  immediate: () => ImmediateEventStore | undefined;
  /** The log; none: events live in memory only. */
  log: () => EventStore | undefined;
  /** The log when other nodes append to it too. */
  sharedLog: () => EventStore | undefined;
  /** To the session's listeners (unless `session` is false), and to '*' when `local`. */
  deliver: (event: SessionEvent, local: boolean, session?: boolean) => void;
}): {
  store1(item: Queued): void | Promise<void>;
  catchUp(task: CatchUp): Promise<void>;
  /**
   * For the write queue: events queued one behind the other are appended in one call where the
   * log has `appendAcross` (of any sessions), catch-ups moved behind them; else one at a time.
   */
  batch: {
    joins(first: Task, next: Task): boolean;
    writeAll(items: Task[]): Promise<void>;
    deferStart(): boolean;
    passes(next: Task): boolean;
  };
} {
  const { rings, ringSize, immediate, log, sharedLog, deliver } = deps;
  let memoryId = 0;

  /** Stores one queued event (at once when the store can: no promise then), then rings and delivers it. */
  const store1 = (item: Queued): void | Promise<void> => {
    if (item.joined) return storeJoined([item]);
    if (item.gated) return storeGated([item]);
    if (sharedLog()?.appendAcross) return storeAcross([item]);
    const ring = rings.get(item.sessionId);
    return ring instanceof Promise ? ring.then((loaded) => append(item, loaded)) : append(item, ring);
  };

  const append = (item: Queued, ring: Ring): void | Promise<void> => {
    const text = JSON.stringify(item.payload);
    const now = immediate();
    if (now) return stored(item, ring, now.insert(item.sessionId, item.type, text, item.created_at));
    const current = log();
    if (!current) return stored(item, ring, ++memoryId);
    const other = sharedLog();
    if (other) return appendShared(item, ring, other, text);
    return current
      .insert(item.sessionId, item.type, text, item.created_at)
      .then((id) => stored(item, ring, id));
  };

  /**
   * A local append on a log other nodes append to: when events came between the ring's last id and
   * this one (the append's previous id says so; without `append`, always read), they are read from
   * the log and delivered first, then this one, in id order.
   */
  const appendShared = async (item: Queued, ring: Ring, current: EventStore, text: string) => {
    const appended: AppendedEvent | { id: number; previous?: undefined } = current.append
      ? await current.append(item.sessionId, item.type, text, item.created_at)
      : { id: await current.insert(item.sessionId, item.type, text, item.created_at) };
    if (appended.previous !== undefined && appended.previous <= seen(ring))
      return stored(item, ring, appended.id);
    const rows = await current.after(item.sessionId, seen(ring));
    let mine: SessionEvent | undefined;
    for (const row of rows) {
      if (row.id <= seen(ring)) continue;
      if (row.id === appended.id) {
        mine = localEvent(item, row.id);
        admit(ring, mine, true, item.context);
      } else admit(ring, eventOf(row), false);
    }
    // The row is committed, so the read found it; should it not have, deliver it as on one node.
    if (!mine && appended.id > seen(ring)) return stored(item, ring, appended.id);
    item.stored?.(mine ?? localEvent(item, appended.id));
  };

  const localEvent = (item: Queued, id: number): SessionEvent => ({
    id,
    session_id: item.sessionId,
    type: item.type,
    payload: item.payload,
    created_at: item.created_at,
  });

  /** Rings and delivers one event (ids ascending per ring), in the publisher's context when given. */
  const admit = (ring: Ring, event: SessionEvent, local: boolean, context?: Queued['context']) => {
    pushToRing(ring, event, ringSize);
    if (context) context.runInAsyncScope(deliver, undefined, event, local);
    else deliver(event, local);
  };

  const stored = (item: Queued, ring: Ring, id: number) => {
    const event = localEvent(item, id);
    admit(ring, event, true, item.context);
    item.stored?.(event);
  };

  const { storeAcross, storeJoined, storeGated } = batchWrites({
    rings,
    sharedLog,
    stored,
    admit,
    localEvent,
  });

  const batch = {
    // Events another statement appended (`joined`) are in the log already, reserved ones
    // (`gated`) wait for a statement: written (delivered) with the rest of their group only.
    joins: (first: Task, next: Task) =>
      first.kind !== 'catch-up' &&
      next.kind !== 'catch-up' &&
      (groupOf(first) || groupOf(next)
        ? groupOf(first) === groupOf(next)
        : sharedLog()?.appendAcross !== undefined),
    // A catch-up reads after the ring's last id: behind events written meanwhile, it reads the same
    // others' events (each append delivers those that came before it first), in id order.
    // Not an adopting step: its events go to '*' in their place, before what follows them.
    passes: (next: Task) =>
      next.kind === 'catch-up' && !next.adopt && sharedLog()?.appendAcross !== undefined,
    writeAll: (items: Task[]) => {
      const queued = items.filter((t): t is Queued => t.kind !== 'catch-up');
      if (queued[0]?.joined) return storeJoined(queued);
      return queued[0]?.gated ? storeGated(queued) : storeAcross(queued);
    },
    // A shared (PostgreSQL) log answers asynchronously anyway: events published together go together.
    deferStart: () => sharedLog()?.appendAcross !== undefined,
  };

  const catchUp = catchUpStep({ rings, sharedLog, admit, deliver });

  return { store1, catchUp, batch };
}

/**
 * A catch-up step: the session's events after the ring's last id, from the log, delivered in order
 * (another node's), an adopted group's as this node's (`CatchUp.adopt`).
 */
function catchUpStep(deps: {
  rings: Pick<RingCache, 'get' | 'since'>;
  sharedLog: () => EventStore | undefined;
  admit: (ring: Ring, event: SessionEvent, local: boolean, context?: Queued['context']) => void;
  deliver: (event: SessionEvent, local: boolean, session?: boolean) => void;
}): (task: CatchUp) => Promise<void> {
  const { rings, sharedLog, admit, deliver } = deps;
  const catchUp = async (task: CatchUp): Promise<void> => {
    const current = sharedLog();
    if (current) {
      const ring = await rings.get(task.sessionId);
      const adopt = task.adopt;
      // Taken into the ring already (a notice's catch-up, a later append's read): they went to the
      // session's listeners as another node's; to '*' now, as this node's.
      const inRing = adopt ? groupAt(ring.events, adopt) : -1;
      if (adopt && inRing >= 0)
        for (const event of ring.events.slice(inRing, inRing + adopt.types.length))
          toEvery(event, adopt.context);
      const all =
        adopt !== undefined ||
        task.upTo === undefined ||
        (task.since !== undefined && !rings.since(ring, task.since));
      let read = -1;
      if (all || seen(ring) < (task.upTo as number)) {
        const after = seen(ring);
        const events = (await current.after(task.sessionId, after))
          .filter((row) => row.id > after)
          .map(eventOf);
        read = adopt && inRing < 0 ? groupAt(events, adopt) : -1;
        events.forEach((event, i) => {
          if (event.id <= seen(ring)) return;
          const mine = adopt !== undefined && read >= 0 && i >= read && i < read + adopt.types.length;
          if (mine) admit(ring, event, true, adopt.context);
          else admit(ring, event, false);
        });
      }
      adopt?.found(inRing >= 0 || read >= 0);
    } else task.adopt?.found(false);
    task.done?.();
  };

  /** To '*' only, in the publisher's context when given. */
  const toEvery = (event: SessionEvent, context?: Queued['context']) => {
    if (context) context.runInAsyncScope(deliver, undefined, event, true, false);
    else deliver(event, true, false);
  };
  return catchUp;
}

/**
 * Where an adopted group (`CatchUp.adopt`) is among `events` (in id order): the last run of
 * events that are its types in order, each carrying its stamp; -1 when none.
 */
function groupAt(events: readonly SessionEvent[], adopt: Adopted): number {
  const { types, createdAt } = adopt;
  for (let i = events.length - types.length; i >= 0; i--) {
    if (
      types.every((type, k) => events[i + k].type === type && Number(events[i + k].created_at) === createdAt)
    )
      return i;
  }
  return -1;
}

/** The group a queued event is written with alone (joined or reserved), if any. */
const groupOf = (task: Queued): object | undefined => task.joined?.group ?? task.gated?.group;

/**
 * The catch-ups queued and not started, per session (a second notice needs no second step), with
 * the highest event id their notices announced (none: read whatever the ring has seen). `take`
 * gives a step what was asked of it when it starts.
 */
export function catchUpRequests(
  enqueue: (task: CatchUp) => void,
  /** The rings' mark now (`RingCache.mark`); none: a read of everything is always made. */
  mark?: () => number,
): {
  request(sessionId: string, upTo?: number): void;
  take(task: CatchUp): CatchUp;
} {
  const ALL = Number.POSITIVE_INFINITY;
  /** Per session: the highest id notices announced (0: none), and the mark of the first ask for everything. */
  const queued = new Map<string, { upTo: number; since?: number }>();
  return {
    request(sessionId, upTo = ALL) {
      const before = queued.get(sessionId);
      const asked = before ?? { upTo: 0 };
      if (upTo !== ALL) asked.upTo = Math.max(asked.upTo, upTo);
      else asked.since ??= mark ? mark() : -1;
      if (!before) {
        queued.set(sessionId, asked);
        enqueue({ kind: 'catch-up', sessionId });
      }
    },
    take(task) {
      const asked = queued.get(task.sessionId);
      queued.delete(task.sessionId);
      if (!asked || asked.since === -1) return task;
      return { ...task, upTo: asked.upTo, since: asked.since };
    },
  };
}
