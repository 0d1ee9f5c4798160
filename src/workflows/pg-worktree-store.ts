/**
 * `worktree_overrides` on PostgreSQL (issue 18): the twin of ./worktree-store.ts, the same answers
 * (a new override is `active`; an update answers the row after it; lists newest first by
 * created_at, then id in byte order, descending, 50 unless a limit is given).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { Clock } from '../util/ids';
import type { WorktreeOverride, WorktreeStore } from './worktree-store';

type Row = WorktreeOverride & { [column: string]: unknown };

const COLUMNS =
  'id, session_id, child_session_id, run_id, path, workspace_root, branch, base_commit, head_commit, status, files_changed, created_at, finished_at';

/** The columns an update may set. */
const UPDATABLE = new Set([
  'child_session_id',
  'run_id',
  'head_commit',
  'status',
  'files_changed',
  'finished_at',
]);

export function createPostgresWorktreeStore(deps: { sql: SqlClient; clock: Clock }): WorktreeStore {
  const { sql } = deps;
  const get = async (id: string) =>
    await sql.one<Row>(`SELECT ${COLUMNS} FROM worktree_overrides WHERE id = $1`, [id]);
  return {
    async create(input) {
      const row = await sql.one<Row>(
        `INSERT INTO worktree_overrides (id, session_id, path, workspace_root, branch, base_commit, status, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'active', $7) RETURNING ${COLUMNS}`,
        [
          input.id,
          input.session_id,
          input.path,
          input.workspace_root,
          input.branch,
          input.base_commit,
          deps.clock.now(),
        ],
      );
      return row!;
    },
    async update(id, patch) {
      const keys = Object.keys(patch) as (keyof typeof patch)[];
      for (const key of keys) {
        if (!UPDATABLE.has(key)) throw new Error(`worktree_overrides has no updatable column ${key}`);
      }
      if (keys.length) {
        await sql.run(
          `UPDATE worktree_overrides SET ${keys.map((k, i) => `${k} = $${i + 1}`).join(', ')} WHERE id = $${keys.length + 1}`,
          [...keys.map((k) => patch[k] ?? null), id],
        );
      }
      return (await get(id))!;
    },
    get,
    async list(filter = {}) {
      const limit = filter.limit ?? 50;
      return filter.status
        ? await sql.query<Row>(
            `SELECT ${COLUMNS} FROM worktree_overrides WHERE status = $1 ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $2`,
            [filter.status, limit],
          )
        : await sql.query<Row>(
            `SELECT ${COLUMNS} FROM worktree_overrides ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $1`,
            [limit],
          );
    },
  };
}
