/**
 * The bus's queued events written in one call (./bus-writes.ts): `storeAcross`, for any sessions
 * (migration 34). The per-session `appendMany` (migration 31) it replaced is gone: no log needs it
 * (the PostgreSQL log has `appendAcross`; SQLite's answers at once and is not shared).
 * @module
 */
import type { AsyncResource } from 'node:async_hooks';
import type { AppendedEvent, EventStore, StoredEventRow } from './event-store';
import { eventOf, type Ring, type RingCache, type SessionEvent, seen } from './ring';

export interface Queued {
  kind?: undefined;
  sessionId: string;
  type: string;
  payload: Record<string, unknown>;
  created_at: number;
  stored?: (event: SessionEvent) => void;
  failed?: (error: unknown) => void;
  /**
   * The publisher's async context, when the event is delivered after an await (a log that does
   * not answer at once): its listeners run in it (`runInAsyncScope`), as they would have
   * synchronously.
   */
  context?: AsyncResource;
  /**
   * Appended by another statement (a message's INSERT, `EventBus.join`; a group of events,
   * `joinAll`), sent when the queue was idle: the group's ids and previous ids once it answered
   * (this event's at `index`), undefined when it wrote nothing (then the events are neither
   * delivered nor an error). The ring the session had in memory then, if any. A group's events
   * are written (delivered) together, never with others (`group`: its identity).
   */
  joined?: {
    appended: Promise<readonly AppendedEvent[] | undefined>;
    ring: Ring | undefined;
    group: object;
    index: number;
    /**
     * Joined behind a busy queue (`joinAll`'s `next`): called when the queue reaches the group
     * (every earlier write answered and delivered, the session's ring taken), and only then is the
     * statement sent, so its ids follow theirs.
     */
    reached?: () => void;
  };
  /**
   * Reserved (`EventBus.reserve`): enqueued at the call, written by the queue once the caller's
   * statement answered, when it says so (`written` true; false: neither written nor delivered).
   * A group's events are written together, never with others (`group`: its identity).
   */
  gated?: { written: Promise<boolean>; group: object };
}

export function batchWrites(deps: {
  rings: Pick<RingCache, 'get' | 'unknown' | 'start'>;
  sharedLog: () => EventStore | undefined;
  /** Rings and delivers this node's event, then tells its publisher. */
  stored: (item: Queued, ring: Ring, id: number) => void;
  /** Rings and delivers an event. */
  admit: (ring: Ring, event: SessionEvent, local: boolean) => void;
  localEvent: (item: Queued, id: number) => SessionEvent;
}): {
  storeAcross(items: Queued[]): Promise<void>;
  storeJoined(items: Queued[]): Promise<void>;
  storeGated(items: Queued[]): Promise<void>;
} {
  const { rings, sharedLog, stored, admit, localEvent } = deps;

  /**
   * Queued events of any sessions in one `appendAcross` call (one statement): a session with a ring
   * here whose previous id is past the ring reads the events that came between and delivers them
   * first; a session unknown here starts its ring at its previous id (nothing
   * read: the load's `maxId` was that id, read before the lock). Delivered in queue order.
   */
  const storeAcross = async (items: Queued[]): Promise<void> => {
    const current = sharedLog() as EventStore & Required<Pick<EventStore, 'appendAcross'>>;
    const known = new Map<string, Ring>();
    for (const { sessionId } of items)
      if (!known.has(sessionId) && !rings.unknown(sessionId))
        known.set(sessionId, await rings.get(sessionId));
    const appended = await current.appendAcross(
      items.map((item) => ({
        sessionId: item.sessionId,
        type: item.type,
        payload: JSON.stringify(item.payload),
        createdAt: item.created_at,
      })),
    );
    await deliverAppended(current, items, appended, known);
  };

  /**
   * Events another statement appended (`joined`, of one group), delivered as `storeAcross`
   * delivers its own: the ring taken before that statement was sent (or started at its previous
   * id), others' events that came between read first.
   */
  const storeJoined = async (items: Queued[]): Promise<void> => {
    const joined = items[0].joined as NonNullable<Queued['joined']>;
    let ring = joined.ring;
    if (joined.reached) {
      // Its turn: the ring as `storeAcross` takes it, before the statement appends (a load's
      // `maxId` read before the session's lock); then the statement goes.
      // Sent whatever happens here: its caller waits for the turn, and settles after it.
      const { sessionId } = items[0];
      try {
        ring = rings.unknown(sessionId) ? undefined : await rings.get(sessionId);
      } finally {
        joined.reached();
      }
    }
    const all = await joined.appended;
    if (!all) return;
    const appended = items.map((item) => all[(item.joined as NonNullable<Queued['joined']>).index]);
    if (appended.some((one) => !one)) throw new Error('session_events: a joined append answered no id');
    const current = sharedLog() as EventStore;
    const known = new Map<string, Ring>(ring ? [[items[0].sessionId, ring]] : []);
    await deliverAppended(current, items, appended, known);
  };

  /** A reserved group (`gated`): appended as `storeAcross` appends, once its statement said to. */
  const storeGated = async (items: Queued[]): Promise<void> => {
    if (await (items[0].gated as NonNullable<Queued['gated']>).written) await storeAcross(items);
  };

  /**
   * Appended events delivered in queue order: a session with a ring here whose previous id is past
   * the ring reads the events that came between and delivers them first; a session unknown here
   * starts its ring at its previous id.
   */
  const deliverAppended = async (
    current: EventStore,
    items: Queued[],
    appended: AppendedEvent[],
    known: Map<string, Ring>,
  ): Promise<void> => {
    const ringOf = new Map<string, Ring>();
    const between = new Map<string, Promise<StoredEventRow[]>>();
    items.forEach(({ sessionId }, i) => {
      if (ringOf.has(sessionId)) return;
      const ring = known.get(sessionId) ?? rings.start(sessionId, appended[i].previous);
      ringOf.set(sessionId, ring);
      if (appended[i].previous > seen(ring)) between.set(sessionId, current.after(sessionId, seen(ring)));
    });
    const rows = new Map<string, StoredEventRow[]>();
    for (const [sessionId, read] of between) rows.set(sessionId, await read);
    items.forEach((item, i) => {
      const ring = ringOf.get(item.sessionId) as Ring;
      const id = appended[i].id;
      const others = rows.get(item.sessionId);
      while (others?.length && others[0].id <= id) {
        const row = others.shift() as StoredEventRow;
        if (row.id !== id && row.id > seen(ring)) admit(ring, eventOf(row), false);
      }
      // Committed, so a read found it; should it not have, deliver it as on one node.
      if (id > seen(ring)) stored(item, ring, id);
      else item.stored?.(localEvent(item, id));
    });
    for (const [sessionId, others] of rows)
      for (const row of others) {
        const ring = ringOf.get(sessionId) as Ring;
        if (row.id > seen(ring)) admit(ring, eventOf(row), false);
      }
  };

  return { storeAcross, storeJoined, storeGated };
}
