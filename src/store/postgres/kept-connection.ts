/**
 * The client's checkouts (issue 18 item 6, p-pgconn): one connection of the pool kept in svc's
 * hands between uses, while nothing waits for the pool, so the next statement or transaction takes
 * it with no pg-pool checkout. A pg-pool checkout of an idle connection is a connect-timeout
 * `setTimeout` and its `clearTimeout`, a `process.nextTick`, the idle item's `clearTimeout`,
 * release's 10 s idle `setTimeout`, `acquire` and `release` events and pg-pool's idle `error`
 * listener off and on again (and `pool.query`'s own `error` listener): a lone compat request made
 * two (its start's transaction, its finish's statement).
 *
 * What stays as it was: the pool's size (the kept connection is one of the pool's, checked out);
 * a connection in use is never shared (only a connection nothing is sent on is kept, and it is
 * taken whole); a checkout finding the pool full waits in pg-pool's queue, and a connection given
 * back while one waits goes to pg-pool (to that waiter), never kept. A connection the server drops
 * (a restart, a kill) is released to pg-pool as broken, at once when it is kept idle (its `error`
 * event): pg-pool ends it and emits `remove` (`onConnectionGone`); one whose statement failed is
 * too (as `pool.query` did for any failure). While kept, its socket does not keep the process alive
 * (as an idle connection's would not after pg-pool's idle timeout). Not kept: the pool's idle
 * timeout for that one connection (one connection stays open while the node runs).
 * @module
 */
import type { Pool, PoolClient } from 'pg';

/** A connection of the pool in svc's hands, with svc's one `error` listener on it. */
export interface Held {
  readonly connection: PoolClient;
  /** It emitted `error` (the server dropped it): never used again. */
  broken: boolean;
  readonly dropped: () => void;
}

export interface Checkouts {
  /** The kept connection, taken (no pg-pool call), or undefined when none is kept now. */
  take(): Held | undefined;
  /** A connection from pg-pool (`pool.connect`'s callback form: no promise). */
  connect(callback: (error: Error | undefined, held?: Held) => void): void;
  /**
   * A connection back after its use, nothing in flight on it: kept when none is and nothing waits
   * for the pool, else released to pg-pool. `failed`: a statement on it failed (released, ended).
   */
  give(held: Held, failed?: boolean): void;
  /** The kept connection released (before the pool's end: pg-pool waits for every connection). */
  close(): void;
}

type Internals = { _queryable?: boolean; _ending?: boolean; ref?(): void; unref?(): void };

export function checkoutsOf(pool: Pool): Checkouts {
  let kept: Held | undefined;
  let closed = false;
  const release = (held: Held, failed?: boolean) => {
    held.connection.off('error', held.dropped);
    held.connection.release(held.broken || failed === true);
  };
  const hold = (connection: PoolClient): Held => {
    const held: Held = {
      connection,
      broken: false,
      // A connection the server drops emits 'error' (the statement in flight fails with it).
      dropped: () => {
        held.broken = true;
        if (kept !== held) return;
        kept = undefined;
        (connection as Internals).ref?.();
        release(held);
      },
    };
    connection.on('error', held.dropped);
    return held;
  };
  return {
    take() {
      const held = kept;
      if (!held) return undefined;
      kept = undefined;
      (held.connection as Internals).ref?.();
      return held;
    },
    connect(callback) {
      pool.connect((error, connection) => {
        if (error || !connection) callback(error ?? new Error('no connection'));
        else callback(undefined, hold(connection));
      });
    },
    give(held, failed) {
      const state = held.connection as Internals;
      if (
        kept ||
        closed ||
        failed ||
        held.broken ||
        pool.waitingCount > 0 ||
        state._queryable === false ||
        state._ending
      ) {
        release(held, failed);
        return;
      }
      kept = held;
      state.unref?.();
    },
    close() {
      closed = true;
      const held = kept;
      kept = undefined;
      if (held) {
        (held.connection as Internals).ref?.();
        release(held);
      }
    },
  };
}

/** A connection from the pool, one promise (pg-pool's callback form makes none); `fail` words its error. */
export function connectHeld(checkouts: Checkouts, fail: (error: unknown) => unknown): Promise<Held> {
  return new Promise((resolve, reject) => {
    checkouts.connect((error, held) => (held ? resolve(held) : reject(fail(error))));
  });
}
