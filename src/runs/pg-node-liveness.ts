/**
 * The nodes' heartbeats on PostgreSQL (issue 18; issue 19 adopts on top of them): every App that
 * uses the shared run ledger writes a row to `cluster_nodes` (its runner id, host, pid) and renews
 * `heartbeat_at` every `heartbeatMs` (the database's clock, which also judges it: the machines'
 * clocks never meet); a clean close deletes the row, and the live nodes delete a row silent for ten
 * times `staleMs` (a node killed never does). A node whose heartbeat is
 * older than `staleMs` is dead: the runs it was running are marked `interrupted` by whichever live
 * node looks first (./pg-run-ledger.ts, one conditional UPDATE, so exactly one does). On one
 * machine the process check of ./run-recovery.ts answers first; the heartbeat is what tells a run
 * of another machine from a run whose node is gone.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { Clock } from '../util/ids';
import { createPostgresNodeRepository, type NodeRecord } from './pg-node-repository';

export type { NodeRecord } from './pg-node-repository';

export interface NodeLiveness {
  /** This node's heartbeat, now (the row is written the first time). */
  beat(): Promise<void>;
  /** Every node's last heartbeat, read again. */
  refresh(): Promise<void>;
  /**
   * Whether the node of `runner` beat within `staleMs` as of the last refresh: true or false once
   * a refresh has happened (no row: the node closed or never beat, so it is not alive), undefined
   * before the first one.
   */
  alive(runner: string): boolean | undefined;
  /** Whether another node beat within `staleMs`, read now (a clean stop hands its runs to it). */
  othersAlive(): Promise<boolean>;
  /** The node's row as of the last refresh (for the reason a run was interrupted). */
  node(runner: string): NodeRecord | undefined;
  /** How long before the last refresh the node's last heartbeat was, by the database's clock. */
  silentFor(runner: string): number | undefined;
  /**
   * The database's time of the last refresh (undefined before the first): what a time the database
   * stamped (a durable workflow's `updated_at`) is compared with, never this machine's clock.
   */
  refreshedAt(): number | undefined;
  /**
   * The rows of nodes silent for more than PRUNE_STALE × `staleMs` as of the last refresh go (a
   * killed node never removes its own): a statement only when the last refresh saw one.
   */
  prune(): Promise<void>;
  /**
   * The row goes, if this node ever beat: it has stopped (a clean close). A beat in flight lands
   * first and later ones do nothing, so an UPSERT cannot bring the row of a stopped node back.
   */
  close(): Promise<void>;
}

/** A node silent for this many times `staleMs` has its row removed by the live nodes. */
export const PRUNE_STALE = 10;

export interface NodeLivenessDeps {
  sql: SqlClient;
  clock: Clock;
  runner: string;
  host: string;
  pid: number;
  staleMs: number;
}

export function createNodeLiveness(deps: NodeLivenessDeps): NodeLiveness {
  const { clock } = deps;
  const repo = createPostgresNodeRepository({ sql: deps.sql });
  let nodes: Map<string, NodeRecord> | undefined;
  /** The database's time of the last refresh (both sides of every comparison are its clock). */
  let refreshedAt = 0;
  let closed = false;
  /** The last beat (in flight or landed); none: this node never wrote its row. */
  let beating: Promise<void> | undefined;
  let closing: Promise<void> | undefined;
  return {
    async beat() {
      if (closed) return;
      beating = repo.beat({ id: deps.runner, host: deps.host, pid: deps.pid }, clock.now());
      await beating;
    },
    async refresh() {
      const rows = await repo.all();
      refreshedAt = rows.now ?? 0;
      nodes = new Map(rows.nodes.map((row) => [row.id, row]));
    },
    alive(runner) {
      if (!nodes) return undefined;
      if (runner === deps.runner) return true;
      const node = nodes.get(runner);
      return node !== undefined && node.heartbeat_at >= refreshedAt - deps.staleMs;
    },
    async othersAlive() {
      const rows = await repo.all();
      return rows.nodes.some(
        (row) => row.id !== deps.runner && row.heartbeat_at >= (rows.now ?? 0) - deps.staleMs,
      );
    },
    async prune() {
      const silentMs = deps.staleMs * PRUNE_STALE;
      if (!nodes || ![...nodes.values()].some((node) => node.heartbeat_at < refreshedAt - silentMs)) return;
      await repo.prune(silentMs);
    },
    node: (runner) => nodes?.get(runner),
    silentFor(runner) {
      const node = nodes?.get(runner);
      return node ? Math.max(0, refreshedAt - node.heartbeat_at) : undefined;
    },
    // No rows read (not even this node's): the database's time was not read with them.
    refreshedAt: () => (nodes?.size ? refreshedAt : undefined),
    close() {
      // Once: a second close (the App closes its ledger early, then with its closers) waits for the first.
      closing ??= (async () => {
        closed = true;
        if (!beating) return;
        await beating.catch(() => undefined);
        await repo.remove(deps.runner);
      })();
      return closing;
    },
  };
}
