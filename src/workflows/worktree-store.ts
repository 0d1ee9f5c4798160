/**
 * Worktree overrides (spawn_worktree_override): one row per sub-agent run in a git worktree,
 * with where it ran, its branch, the commit it started from and what became of the worktree.
 * @module
 */
import type { Db } from '../store/db';
import type { Clock, Ids } from '../util/ids';

export type WorktreeStatus = 'active' | 'kept' | 'removed' | 'failed';

export interface WorktreeOverride {
  id: string;
  /** The session that asked for it. */
  session_id: string | null;
  /** The sub-agent's session and run in the worktree. */
  child_session_id: string | null;
  run_id: string | null;
  /** The worktree directory (under the data dir) and the workspace root inside it. */
  path: string;
  workspace_root: string;
  branch: string;
  base_commit: string;
  head_commit: string | null;
  status: WorktreeStatus;
  files_changed: number;
  created_at: number;
  finished_at: number | null;
}

/** `worktree_overrides` (issue 18: async; PostgreSQL twin ./pg-worktree-store.ts). */
export interface WorktreeStore {
  create(
    input: Pick<WorktreeOverride, 'session_id' | 'path' | 'workspace_root' | 'branch' | 'base_commit'> & {
      id: string;
    },
  ): Promise<WorktreeOverride>;
  update(
    id: string,
    patch: Partial<
      Pick<
        WorktreeOverride,
        'child_session_id' | 'run_id' | 'head_commit' | 'status' | 'files_changed' | 'finished_at'
      >
    >,
  ): Promise<WorktreeOverride>;
  get(id: string): Promise<WorktreeOverride | undefined>;
  /** Newest first (created_at, then id, descending); 50 unless a limit is given. */
  list(filter?: { status?: WorktreeStatus; limit?: number }): Promise<WorktreeOverride[]>;
}

export function createWorktreeStore(deps: { db: () => Db; clock: Clock; ids: Ids }): WorktreeStore {
  const store: WorktreeStore = {
    async create(input) {
      deps
        .db()
        .prepare(
          `INSERT INTO worktree_overrides (id, session_id, path, workspace_root, branch, base_commit, status, created_at)
           VALUES (?, ?, ?, ?, ?, ?, 'active', ?)`,
        )
        .run(
          input.id,
          input.session_id,
          input.path,
          input.workspace_root,
          input.branch,
          input.base_commit,
          deps.clock.now(),
        );
      return (await store.get(input.id))!;
    },
    async update(id, patch) {
      const keys = Object.keys(patch) as (keyof typeof patch)[];
      if (keys.length) {
        deps
          .db()
          .prepare(`UPDATE worktree_overrides SET ${keys.map((k) => `${k} = ?`).join(', ')} WHERE id = ?`)
          .run(...keys.map((k) => patch[k] ?? null), id);
      }
      return (await store.get(id))!;
    },
    async get(id) {
      return deps.db().prepare('SELECT * FROM worktree_overrides WHERE id = ?').get(id) as
        | WorktreeOverride
        | undefined;
    },
    async list(filter = {}) {
      const rows = filter.status
        ? deps
            .db()
            .prepare(
              'SELECT * FROM worktree_overrides WHERE status = ? ORDER BY created_at DESC, id DESC LIMIT ?',
            )
            .all(filter.status, filter.limit ?? 50)
        : deps
            .db()
            .prepare('SELECT * FROM worktree_overrides ORDER BY created_at DESC, id DESC LIMIT ?')
            .all(filter.limit ?? 50);
      return rows as WorktreeOverride[];
    },
  };
  return store;
}
