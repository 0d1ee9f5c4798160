/**
 * The workspace lease's table, `workspace_leases` (issue 18, one writer per workspace): one row
 * per workspace naming the holder (a run) and when its hold expires. Taking the lease is one
 * upsert that succeeds only when the row is absent, expired, or already the caller's, so two
 * processes (or two nodes on PostgreSQL) racing for a workspace never both hold it: the database
 * decides. ./pg-lease-repository.ts is the PostgreSQL twin.
 * @module
 */
import type { Db } from '../store/db';

export interface WorkspaceLease {
  workspace: string;
  /** Who holds it (a run id, or another holder's own key). */
  holder: string;
  runId: string | null;
  /** The node (process) that took it. */
  node: string;
  acquiredAt: number;
  expiresAt: number;
}

export interface LeaseClaim {
  workspace: string;
  holder: string;
  runId: string | null;
  node: string;
  now: number;
  ttlMs: number;
}

export interface LeaseRepository {
  /**
   * Takes (or extends) the lease when it is free, expired or already `holder`'s. Answers the lease
   * as it now stands: `held` is the caller's lease, or someone else's that stands.
   */
  tryAcquire(claim: LeaseClaim): Promise<{ acquired: boolean; lease: WorkspaceLease }>;
  /** Extends the holder's lease to `now + ttlMs`; false when it is no longer theirs. */
  renew(workspace: string, holder: string, now: number, ttlMs: number): Promise<boolean>;
  /** Gives the lease up; false when it was not the holder's. */
  release(workspace: string, holder: string): Promise<boolean>;
  get(workspace: string): Promise<WorkspaceLease | undefined>;
}

export interface LeaseRow {
  workspace: string;
  holder: string;
  run_id: string | null;
  node: string;
  acquired_at: number;
  expires_at: number;
}

export const leaseOfRow = (row: LeaseRow): WorkspaceLease => ({
  workspace: row.workspace,
  holder: row.holder,
  runId: row.run_id,
  node: row.node,
  acquiredAt: row.acquired_at,
  expiresAt: row.expires_at,
});

/**
 * The upsert both backends run (`?` here, `$n` on PostgreSQL): insert, or take over a row that has
 * expired or is already the holder's (keeping `acquired_at` when it is the holder renewing).
 */
export const LEASE_UPSERT = (p: (n: number) => string) => `
  INSERT INTO workspace_leases (workspace, holder, run_id, node, acquired_at, expires_at)
  VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)})
  ON CONFLICT (workspace) DO UPDATE SET
    acquired_at = CASE WHEN workspace_leases.holder = excluded.holder
      THEN workspace_leases.acquired_at ELSE excluded.acquired_at END,
    holder = excluded.holder, run_id = excluded.run_id, node = excluded.node,
    expires_at = excluded.expires_at
  WHERE workspace_leases.holder = excluded.holder OR workspace_leases.expires_at <= excluded.acquired_at`;

export const LEASE_COLUMNS = 'workspace, holder, run_id, node, acquired_at, expires_at';

/** The upsert's parameters, in LEASE_UPSERT's order, for both backends. */
export const leaseClaimValues = (claim: LeaseClaim): unknown[] => [
  claim.workspace,
  claim.holder,
  claim.runId,
  claim.node,
  claim.now,
  claim.now + claim.ttlMs,
];

export function createLeaseRepository(db: () => Db): LeaseRepository {
  const get = (workspace: string) => {
    const row = db()
      .prepare(`SELECT ${LEASE_COLUMNS} FROM workspace_leases WHERE workspace = ?`)
      .get(workspace) as LeaseRow | undefined;
    return row ? leaseOfRow(row) : undefined;
  };
  return {
    async tryAcquire(claim) {
      const handle = db();
      return handle.transaction(() => {
        const changed = handle.prepare(LEASE_UPSERT(() => '?')).run(...leaseClaimValues(claim)).changes;
        const lease = get(claim.workspace);
        if (!lease) throw new Error(`workspace lease of ${claim.workspace} vanished`);
        return { acquired: changed > 0, lease };
      })();
    },
    async renew(workspace, holder, now, ttlMs) {
      return (
        db()
          .prepare(
            'UPDATE workspace_leases SET expires_at = ? WHERE workspace = ? AND holder = ? AND expires_at > ?',
          )
          .run(now + ttlMs, workspace, holder, now).changes > 0
      );
    },
    async release(workspace, holder) {
      return (
        db().prepare('DELETE FROM workspace_leases WHERE workspace = ? AND holder = ?').run(workspace, holder)
          .changes > 0
      );
    },
    async get(workspace) {
      return get(workspace);
    },
  };
}
