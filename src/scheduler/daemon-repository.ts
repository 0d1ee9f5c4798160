/**
 * The daemons' table, `service_processes`: the only place that knows how service processes are
 * stored. ./daemons.ts owns liveness (pid, host, heartbeat age) and the views.
 * @module
 */
import type { Db } from '../store/db';

/** A stored service process: `argv` and `status` are the JSON as written. */
export interface DaemonRecord {
  id: string;
  kind: 'http' | 'autopilot';
  pid: number;
  host: string;
  url: string | null;
  argv: string;
  worker: string | null;
  started_at: number;
  heartbeat_at: number;
  stopped_at: number | null;
  stop_reason: string | null;
  status: string;
  /** `{"start_time":…,"boot_id":…}` of the registered process (./daemons.ts); null on older rows. */
  identity: string | null;
}

export interface DaemonRepository {
  insert(row: Omit<DaemonRecord, 'stopped_at' | 'stop_reason'>): Promise<void>;
  heartbeat(id: string, at: number, status: string): Promise<void>;
  /** Marks a running row stopped (a stopped row keeps its first stop). */
  stopped(id: string, at: number, reason: string): Promise<void>;
  /** Newest first; running ones only unless `includeStopped`. */
  list(options: { includeStopped: boolean; limit: number }): Promise<DaemonRecord[]>;
  get(id: string): Promise<DaemonRecord | undefined>;
}

export function createDaemonRepository(db: () => Db): DaemonRepository {
  return {
    async insert(row) {
      db()
        .prepare(
          `INSERT INTO service_processes (id, kind, pid, host, url, argv, worker, started_at, heartbeat_at, status, identity)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          row.id,
          row.kind,
          row.pid,
          row.host,
          row.url,
          row.argv,
          row.worker,
          row.started_at,
          row.heartbeat_at,
          row.status,
          row.identity,
        );
    },
    async heartbeat(id, at, status) {
      db()
        .prepare('UPDATE service_processes SET heartbeat_at = ?, status = ? WHERE id = ?')
        .run(at, status, id);
    },
    async stopped(id, at, reason) {
      db()
        .prepare(
          'UPDATE service_processes SET stopped_at = ?, stop_reason = ? WHERE id = ? AND stopped_at IS NULL',
        )
        .run(at, reason, id);
    },
    list: async ({ includeStopped, limit }) =>
      db()
        .prepare(
          `SELECT * FROM service_processes ${includeStopped ? '' : 'WHERE stopped_at IS NULL'} ORDER BY started_at DESC, rowid DESC LIMIT ?`,
        )
        .all(limit) as DaemonRecord[],
    get: async (id) =>
      db().prepare('SELECT * FROM service_processes WHERE id = ?').get(id) as DaemonRecord | undefined,
  };
}
