/**
 * The session grants ("allow for session") the permission service keeps in `permission_grants`,
 * keyed by the family's root session, tool and scope. Reads across sessions: ./grant-queries.ts.
 * @module
 */
import type { Db } from '../store/db';
import { statementCache } from '../store/statement-cache';

/** The scope of a grant that covers every call of the tool. */
export const ANY_SCOPE = '*';

export interface StoredGrant {
  session_id: string;
  tool: string;
  scope: string;
  created_at: number;
}

export interface GrantRepository {
  /** A grant of the tool for this scope (or for any scope) is held by the root session. */
  has(root: string, tool: string, scope: string | undefined): Promise<boolean>;
  /** Adds a grant unless it is there. */
  add(root: string, tool: string, scope: string, createdAt: number): Promise<void>;
  /** The root session's grants, oldest first. */
  list(root: string): Promise<StoredGrant[]>;
  /** Removes the root session's grants; returns how many. */
  revoke(root: string): Promise<number>;
}

export function createGrantRepository(db: () => Db): GrantRepository {
  const sql = statementCache(db);
  return {
    async has(root, tool, scope) {
      const row = sql(
        'SELECT 1 FROM permission_grants WHERE session_id = ? AND tool = ? AND scope IN (?, ?) LIMIT 1',
      ).get(root, tool, scope ?? ANY_SCOPE, ANY_SCOPE);
      return row !== undefined;
    },
    async add(root, tool, scope, createdAt) {
      sql(
        'INSERT OR IGNORE INTO permission_grants (session_id, tool, scope, created_at) VALUES (?, ?, ?, ?)',
      ).run(root, tool, scope, createdAt);
    },
    async list(root) {
      return sql('SELECT * FROM permission_grants WHERE session_id = ? ORDER BY created_at, tool').all(
        root,
      ) as StoredGrant[];
    },
    async revoke(root) {
      return sql('DELETE FROM permission_grants WHERE session_id = ?').run(root).changes;
    },
  };
}
