/**
 * The bus's listeners and another node's feed (./bus.ts): a delivery to a set of listeners, and
 * `follow`'s notices turned into catch-ups.
 * @module
 */
import type { RingCache, SessionEvent } from './ring';
import { seen } from './ring';

export type EventListener = (event: SessionEvent) => void;

/** "Event N of session S was committed" (by any node); ./pg-notify.ts's listener is one. */
export interface EventFeed {
  subscribe(subscriber: {
    event(notice: { sessionId: string; eventId: number }): void;
    /** Notices may have been lost: re-read from the last id. */
    resync(): void;
  }): () => void;
}

/** `follow`: another node's notice of a listened session asks a catch-up; a resync asks one of each. */
export function followFeed(
  feed: EventFeed,
  deps: {
    closed: () => boolean;
    listeners: Map<string, Set<EventListener>>;
    rings: Pick<RingCache, 'peek'>;
    requestCatchUp: (sessionId: string, upTo?: number) => void;
  },
): () => void {
  const { listeners, rings, requestCatchUp } = deps;
  return feed.subscribe({
    event: ({ sessionId, eventId }) => {
      if (deps.closed() || !listeners.get(sessionId)?.size) return;
      const ring = rings.peek(sessionId);
      if (ring && eventId <= seen(ring)) return;
      // A notice of this node's own append may come before the append has answered: the
      // step, queued behind it, then finds the id seen and reads nothing.
      requestCatchUp(sessionId, eventId);
    },
    resync: () => {
      if (deps.closed()) return;
      for (const [sessionId, set] of listeners) if (sessionId !== '*' && set.size) requestCatchUp(sessionId);
    },
  });
}

/** To each listener of a set; one broken subscriber must not stop the others or the publisher. */
export function deliverTo(
  set: Set<EventListener>,
  event: SessionEvent,
  onError?: (e: unknown) => void,
): void {
  for (const listener of set) {
    try {
      listener(event);
    } catch (error) {
      onError?.(error);
    }
  }
}
