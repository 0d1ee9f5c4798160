/**
 * The claims' tables, `workspace_claims` and `claim_negotiations`: the only place that knows how
 * claims are stored. ./claims.ts owns the rules (overlap, ownership, expiry); the multiplayer trace
 * export reads through ./trace-queries.ts.
 * @module
 */
import { atomicallyAsync, type Db } from '../store/db';

/** A stored claim: `paths` is the JSON array as written. */
export interface ClaimRow {
  id: string;
  session_id: string;
  paths: string;
  mode: 'soft' | 'hard';
  reason: string;
  created_at: number;
  renewed_at: number;
  expires_at: number;
  released_at: number | null;
  release_reason: string | null;
}

/** Async (issue 18): the SQLite one answers at once; the PostgreSQL twin is ./pg-claim-repository.ts. */
export interface ClaimRepository {
  get(id: string): Promise<ClaimRow | undefined>;
  /** Unreleased claims that expire after `now`, oldest first. */
  active(now: number): Promise<ClaimRow[]>;
  /** Newest first: the active ones, or (include_inactive) the last 500 of any state. */
  list(options: { now: number; includeInactive: boolean }): Promise<ClaimRow[]>;
  insert(row: Omit<ClaimRow, 'released_at' | 'release_reason'>): Promise<void>;
  renew(id: string, renewedAt: number, expiresAt: number): Promise<void>;
  release(id: string, releasedAt: number, reason: string): Promise<void>;
  insertNegotiation(row: {
    id: string;
    claim_id: string;
    from_session_id: string;
    message: string;
    created_at: number;
    outcome: string;
  }): Promise<void>;
  /**
   * `fn` (an overlap check and the insert that depends on it) as one transaction holding the
   * claims' write lock, so two acquires never both pass the check: SQLite's BEGIN IMMEDIATE, a
   * PostgreSQL advisory transaction lock.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
}

export function createClaimRepository(db: () => Db): ClaimRepository {
  return {
    exclusive: (fn) => atomicallyAsync(db, fn),
    get: async (id) =>
      db().prepare('SELECT * FROM workspace_claims WHERE id = ?').get(id) as ClaimRow | undefined,
    active: async (now) =>
      db()
        .prepare(
          'SELECT * FROM workspace_claims WHERE released_at IS NULL AND expires_at > ? ORDER BY created_at',
        )
        .all(now) as ClaimRow[],
    list: async ({ now, includeInactive }) =>
      (includeInactive
        ? db().prepare('SELECT * FROM workspace_claims ORDER BY created_at DESC LIMIT 500').all()
        : db()
            .prepare(
              'SELECT * FROM workspace_claims WHERE released_at IS NULL AND expires_at > ? ORDER BY created_at DESC',
            )
            .all(now)) as ClaimRow[],
    async insert(row) {
      db()
        .prepare(
          `INSERT INTO workspace_claims (id, session_id, paths, mode, reason, created_at, renewed_at, expires_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          row.id,
          row.session_id,
          row.paths,
          row.mode,
          row.reason,
          row.created_at,
          row.renewed_at,
          row.expires_at,
        );
    },
    async renew(id, renewedAt, expiresAt) {
      db()
        .prepare('UPDATE workspace_claims SET renewed_at = ?, expires_at = ? WHERE id = ?')
        .run(renewedAt, expiresAt, id);
    },
    async release(id, releasedAt, reason) {
      db()
        .prepare('UPDATE workspace_claims SET released_at = ?, release_reason = ? WHERE id = ?')
        .run(releasedAt, reason, id);
    },
    async insertNegotiation(row) {
      db()
        .prepare(
          'INSERT INTO claim_negotiations (id, claim_id, from_session_id, message, created_at, outcome) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run(row.id, row.claim_id, row.from_session_id, row.message, row.created_at, row.outcome);
    },
  };
}
