/**
 * Whether this node can reach its PostgreSQL store right now (issue 18, "a node that loses the
 * database answers 503 with the reason and recovers by itself"): a cheap query every few seconds,
 * and at once after a statement failed for want of the database. `/healthz` and the HTTP surface
 * read the last answer without waiting; the pool reconnects by itself when the server returns, and
 * the next successful probe marks the store ok again.
 * @module
 */
import { SvcError } from '../../errors';
import type { SqlClient } from './client';

export interface StoreStatus {
  ok: boolean;
  /** Why not, as one line (the driver's error, redacted by the client). */
  reason?: string;
  schema_version?: number;
  /** When the status was last established (epoch ms). */
  checked_at: number;
}

export interface StoreMonitor {
  status(): StoreStatus;
  /** Probe now (also called after a failure the surface saw). */
  probe(): Promise<StoreStatus>;
  stop(): void;
}

export function createStoreMonitor(
  sql: SqlClient,
  options: { intervalMs?: number; now?: () => number; onChange?(status: StoreStatus): void } = {},
): StoreMonitor {
  const now = options.now ?? Date.now;
  let current: StoreStatus = { ok: true, checked_at: now() };
  let inFlight: Promise<StoreStatus> | undefined;
  const probe = () => {
    inFlight ??= (async () => {
      let next: StoreStatus;
      try {
        const row = await sql.one<{ version: number | null }>(
          'SELECT max(id) AS version FROM schema_migrations',
        );
        next = { ok: true, schema_version: row?.version ?? 0, checked_at: now() };
      } catch (error) {
        next = {
          ok: false,
          reason: SvcError.is(error) ? error.message : String(error),
          checked_at: now(),
        };
      }
      const changed = next.ok !== current.ok;
      current = next;
      if (changed) options.onChange?.(next);
      return next;
    })().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
  const timer = setInterval(() => void probe(), options.intervalMs ?? 2_000);
  timer.unref();
  void probe();
  return {
    status: () => current,
    probe,
    stop: () => clearInterval(timer),
  };
}
