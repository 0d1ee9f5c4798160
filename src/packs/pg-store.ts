/**
 * `session_operating_packs`, `pack_hook_runs` on PostgreSQL (issue 18): the twin of ./store.ts,
 * the same answers: one row per session (an upsert on the session id), the flag and the JSON
 * columns decoded (a row that does not decode fails the same way), hook runs newest first.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { decode, encode, type HookRun, type PackStore, type RawRow } from './store';

const COLUMNS = `session_id, active, pack_name, requested, manifest_path, source, preset_id, digest, summary,
  ref_revision, last_action, failure_state, failure_reason, diagnostics, updated_at`;

export function createPostgresPackStore(deps: { sql: SqlClient }): PackStore {
  const { sql } = deps;
  return {
    readOnly: () => false,
    async get(sessionId) {
      const raw = await sql.one<RawRow & Record<string, unknown>>(
        `SELECT ${COLUMNS} FROM session_operating_packs WHERE session_id = $1`,
        [sessionId],
      );
      return raw ? decode(raw) : undefined;
    },
    async put(row) {
      const r = encode(row);
      await sql.run(
        `INSERT INTO session_operating_packs (${COLUMNS})
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
         ON CONFLICT (session_id) DO UPDATE SET active = excluded.active, pack_name = excluded.pack_name,
           requested = excluded.requested, manifest_path = excluded.manifest_path, source = excluded.source,
           preset_id = excluded.preset_id, digest = excluded.digest, summary = excluded.summary,
           ref_revision = excluded.ref_revision, last_action = excluded.last_action,
           failure_state = excluded.failure_state, failure_reason = excluded.failure_reason,
           diagnostics = excluded.diagnostics, updated_at = excluded.updated_at`,
        [
          r.session_id,
          r.active,
          r.pack_name,
          r.requested,
          r.manifest_path,
          r.source,
          r.preset_id,
          r.digest,
          r.summary,
          r.ref_revision,
          r.last_action,
          r.failure_state,
          r.failure_reason,
          r.diagnostics,
          r.updated_at,
        ],
      );
    },
    async recordHookRun(run) {
      await sql.run(
        `INSERT INTO pack_hook_runs (session_id, pack_name, hook_index, event, event_id, status, exit_code, duration_ms, started_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          run.session_id,
          run.pack_name,
          run.hook_index,
          run.event,
          run.event_id,
          run.status,
          run.exit_code,
          run.duration_ms,
          run.started_at,
        ],
      );
    },
    async hookRuns(sessionId, limit = 20) {
      return sql.query<HookRun & Record<string, unknown>>(
        `SELECT session_id, pack_name, hook_index, event, event_id, status, exit_code, duration_ms, started_at
         FROM pack_hook_runs WHERE session_id = $1 ORDER BY id DESC LIMIT $2`,
        [sessionId, limit],
      );
    },
  };
}
