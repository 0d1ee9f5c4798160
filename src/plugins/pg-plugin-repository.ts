/**
 * The plugins' tables on PostgreSQL (issue 18): the twin of ./plugin-repository.ts, the same
 * answers (plugins by name in byte order, an upsert keeps installed_at, events newest first).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import {
  PLUGIN_UPSERT,
  type PluginEvent,
  type PluginRepository,
  type PluginRow,
  pluginUpsertValues,
} from './plugin-repository';

type Row = PluginRow & Record<string, unknown>;
type EventRow = PluginEvent & Record<string, unknown>;

export function createPostgresPluginRepository(deps: { sql: SqlClient }): PluginRepository {
  const { sql } = deps;
  return {
    list: () => sql.query<Row>('SELECT * FROM plugins ORDER BY name COLLATE "C"'),
    get: (name) => sql.one<Row>('SELECT * FROM plugins WHERE name = $1', [name]),
    async upsert(row, installedAt, now) {
      await sql.run(
        PLUGIN_UPSERT((n) => `$${n}`),
        pluginUpsertValues(row, installedAt, now),
      );
    },
    async delete(name) {
      await sql.run('DELETE FROM plugins WHERE name = $1', [name]);
    },
    async record(event) {
      await sql.run(
        'INSERT INTO plugin_events (name, action, version, source, "by", session_id, "at") VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [event.name, event.action, event.version, event.source, event.by, event.session_id, event.at],
      );
    },
    events: (limit) =>
      sql.query<EventRow>(
        'SELECT name, action, version, source, "by", session_id, "at" FROM plugin_events ORDER BY id DESC LIMIT $1',
        [limit],
      ),
  };
}
