/**
 * Run ledgers of several nodes on one PostgreSQL database reached through two connection pools
 * (two machines): what the heartbeat and put-back tests set up. Every ledger opened is closed
 * with the pools.
 * @module
 */
import { createPostgresRunLedger } from '../../src/runs/pg-run-ledger';
import type { RunLedger } from '../../src/runs/run-ledger';
import type { SqlClient } from '../../src/store/postgres/client';
import { createIds, systemClock } from '../../src/util/ids';
import { type PostgresCluster, twoNodes } from '../helpers/postgres';

export interface LedgerNodes {
  /** The first machine's pool (it migrated the database). */
  sql: SqlClient;
  /** The second machine's pool. */
  other: SqlClient;
  /** The database's URL (for a driver client of a test's own). */
  url: string;
  /**
   * The ledger of node `runner` on `host` (pid 4242), beating every `heartbeatMs`; its machine's
   * clock is `skewMs` off the real one.
   */
  open(runner: string, host: string, heartbeatMs: number, sql?: SqlClient, skewMs?: number): RunLedger;
  /** Insert the sessions the runs belong to. */
  sessions(...ids: string[]): Promise<void>;
  /** Close every ledger opened, then the pools. */
  close(): Promise<void>;
}

/** Nodes whose heartbeats go stale after `staleMs`. */
export async function ledgerNodes(cluster: PostgresCluster, staleMs: number): Promise<LedgerNodes> {
  const nodes = await twoNodes(cluster);
  const ledgers: RunLedger[] = [];
  return {
    sql: nodes.sql,
    other: nodes.other,
    url: nodes.url,
    open(runner, host, heartbeatMs, sql = nodes.sql, skewMs = 0) {
      const ledger = createPostgresRunLedger({
        clock: skewMs ? { now: () => systemClock.now() + skewMs } : systemClock,
        ids: createIds(),
        sql,
        runner,
        host,
        pid: 4242,
        nodes: { heartbeatMs, staleMs },
      });
      ledgers.push(ledger);
      return ledger;
    },
    async sessions(...ids) {
      for (const id of ids)
        await nodes.sql.run('INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1)', [id]);
    },
    async close() {
      for (const ledger of ledgers) await ledger.close?.().catch(() => {});
      await nodes.close();
    },
  };
}

/** What a run of `session_id` is created with. */
export const runInput = (session_id: string) => ({
  session_id,
  family_session_id: session_id,
  agent: 'build',
  origin: 'http',
  prompt: 'hello',
});
