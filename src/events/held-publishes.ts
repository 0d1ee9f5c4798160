/**
 * Events published inside a store transaction, held until it ends (./bus.ts, PostgreSQL; issue 18
 * item 6, p-pgbus). A compat request's start publishes `session.created`, `queue.changed`,
 * `state.changed`, `run.started` and its prompt's `message.created` / `message.completed` between
 * the awaited statements of one transaction; the bus's queue appended each as soon as the previous
 * append answered, on the pool's other connections: four statements, and other nodes were told of
 * a session, a claim and a message not yet committed. Held, they are enqueued together once the
 * transaction's COMMIT (or ROLLBACK) has answered: one append, after the writes they announce.
 *
 * Events a rolled-back transaction holds are dropped: they announced writes that never happened (a
 * run start whose statement failed told SSE clients of a run that did not exist); on SQLite too a
 * rolled-back body's events are gone. Its `afterOwn` functions still run. Only a transaction known
 * to have rolled back whole: one that rolled a savepoint back, sent a statement alone (committed)
 * or lost its COMMIT's answer with the connection may have committed what they announce, so its
 * events are kept (a finish whose answer was lost finds its writes stored, p-heldkept). A
 * caller that needs its events stored inside its transaction (`publishStored`, a replay)
 * releases what its own transaction holds first, so it never waits for its own end; `flush` does
 * not (it waits for what is queued: held events are never delivered before their transaction's
 * end for it, p-heldfix), and a caller that must act on them first reads them (`own`).
 * @module
 */
import type { Queued } from './bus-batches';
import type { SessionEvent } from './ring';

/** The end of the transaction a publish is made in (the PostgreSQL client's `transactionNow`). */
export interface PublishTransaction {
  /**
   * `fn` once the transaction has ended; the same object for the whole transaction. `rolledBack`:
   * known to have rolled back whole (not a savepoint of it, not a COMMIT whose answer was lost).
   */
  onEnd(fn: (kept: boolean, rolledBack: boolean) => void): void;
}

export interface HeldPublishes {
  /** Holds the event for the end of the caller's open transaction; false: none is open. */
  hold(item: Queued): boolean;
  /** Enqueues, in publish order, what the caller's open transaction holds now. */
  releaseOwn(): void;
  /** What the caller's open transaction holds now, in publish order, left held (no ids yet). */
  own(): readonly Omit<SessionEvent, 'id'>[];
  /** True while an open transaction holds an event of the session. */
  holds(sessionId: string): boolean;
  /**
   * When the caller's open transaction holds an event of the session: `fn` runs once they are
   * enqueued (a subscriber's catch-up, which would otherwise load the ring from the log before the
   * session's first append), and true. Else false, nothing done.
   */
  afterOwn(sessionId: string, fn: () => void): boolean;
  /**
   * The session's events the caller's open transaction holds, taken out of it, and the functions
   * `afterOwn` gave for them (to run once the caller enqueued the events: p-pgstart4, a lone compat
   * start joining its `session.created` to its statement); undefined when another open transaction
   * holds events of the session too.
   */
  takeOwn(sessionId: string): { items: Queued[]; after: (() => void)[] } | undefined;
}

export function heldPublishes(deps: {
  transaction: () => PublishTransaction | undefined;
  enqueue: (item: Queued) => void;
}): HeldPublishes {
  const held = new Map<
    PublishTransaction,
    { items: Queued[]; after: { sessionId: string; fn: () => void }[] }
  >();
  /** Events held per session, over every open transaction. */
  const perSession = new Map<string, number>();

  const release = (tx: PublishTransaction, keep = true) => {
    const own = held.get(tx);
    if (!own) return;
    held.delete(tx);
    const { items, after } = own;
    for (const item of items) {
      const left = (perSession.get(item.sessionId) ?? 1) - 1;
      if (left) perSession.set(item.sessionId, left);
      else perSession.delete(item.sessionId);
    }
    // One synchronous stretch: the queue takes them as one run (its deferred start).
    if (keep) for (const item of items) deps.enqueue(item);
    for (const { fn } of after) fn();
  };

  return {
    hold(item) {
      const tx = deps.transaction();
      if (!tx) return false;
      let own = held.get(tx);
      if (!own) {
        own = { items: [], after: [] };
        held.set(tx, own);
        tx.onEnd((_kept, rolledBack) => release(tx, !rolledBack));
      }
      own.items.push(item);
      perSession.set(item.sessionId, (perSession.get(item.sessionId) ?? 0) + 1);
      return true;
    },
    releaseOwn() {
      if (!held.size) return;
      const tx = deps.transaction();
      if (tx) release(tx);
    },
    own() {
      const tx = held.size ? deps.transaction() : undefined;
      const items = (tx && held.get(tx)?.items) || [];
      return items.map(({ sessionId, type, payload, created_at }) => ({
        session_id: sessionId,
        type,
        payload,
        created_at,
      }));
    },
    holds: (sessionId) => perSession.has(sessionId),
    afterOwn(sessionId, fn) {
      if (!perSession.has(sessionId)) return false;
      const tx = deps.transaction();
      const own = tx && held.get(tx);
      if (!own?.items.some((item) => item.sessionId === sessionId)) return false;
      own.after.push({ sessionId, fn });
      return true;
    },
    takeOwn(sessionId) {
      const count = perSession.get(sessionId) ?? 0;
      if (!count) return { items: [], after: [] };
      const tx = deps.transaction();
      const own = tx && held.get(tx);
      const items = own?.items.filter((item) => item.sessionId === sessionId) ?? [];
      if (!own || items.length !== count) return undefined;
      perSession.delete(sessionId);
      own.items = own.items.filter((item) => item.sessionId !== sessionId);
      const after = own.after.filter((entry) => entry.sessionId === sessionId).map((entry) => entry.fn);
      own.after = own.after.filter((entry) => entry.sessionId !== sessionId);
      return { items, after };
    },
  };
}
