/**
 * `service_processes` on PostgreSQL (issue 18): the twin of ./daemon-repository.ts, the same
 * answers (newest first, in write order — `row_seq` stands for SQLite's rowid — running ones only
 * unless asked, a missing id undefined, a stopped row keeping its first stop).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { DaemonRecord, DaemonRepository } from './daemon-repository';

type Row = DaemonRecord & Record<string, unknown>;

/** Every column but `row_seq`, so a row reads as SQLite's `SELECT *`. */
const COLUMNS =
  'id, kind, pid, host, url, argv, worker, started_at, heartbeat_at, stopped_at, stop_reason, status, identity';

export function createPostgresDaemonRepository(deps: { sql: SqlClient }): DaemonRepository {
  const { sql } = deps;
  return {
    async insert(row) {
      await sql.run(
        `INSERT INTO service_processes (id, kind, pid, host, url, argv, worker, started_at, heartbeat_at, status, identity)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        [
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
        ],
      );
    },
    async heartbeat(id, at, status) {
      await sql.run('UPDATE service_processes SET heartbeat_at = $1, status = $2 WHERE id = $3', [
        at,
        status,
        id,
      ]);
    },
    async stopped(id, at, reason) {
      await sql.run(
        'UPDATE service_processes SET stopped_at = $1, stop_reason = $2 WHERE id = $3 AND stopped_at IS NULL',
        [at, reason, id],
      );
    },
    list: ({ includeStopped, limit }) =>
      sql.query<Row>(
        `SELECT ${COLUMNS} FROM service_processes ${includeStopped ? '' : 'WHERE stopped_at IS NULL'} ORDER BY started_at DESC, row_seq DESC LIMIT $1`,
        [limit],
      ),
    get: (id) => sql.one<Row>(`SELECT ${COLUMNS} FROM service_processes WHERE id = $1`, [id]),
  };
}
