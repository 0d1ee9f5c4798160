/**
 * The workspace lease on PostgreSQL (issue 18): ./lease-repository.ts's upsert, so nodes racing
 * for a workspace are decided by the row's unique key; `RETURNING` says whether this call took it.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import {
  LEASE_COLUMNS,
  LEASE_UPSERT,
  type LeaseRepository,
  type LeaseRow,
  leaseClaimValues,
  leaseOfRow,
} from './lease-repository';

export function createPostgresLeaseRepository({ sql }: { sql: SqlClient }): LeaseRepository {
  const get = async (workspace: string) => {
    const row = await sql.one<LeaseRow>(
      `SELECT ${LEASE_COLUMNS} FROM workspace_leases WHERE workspace = $1`,
      [workspace],
    );
    return row ? leaseOfRow(row) : undefined;
  };
  return {
    async tryAcquire(claim) {
      const taken = await sql.one<LeaseRow>(
        `${LEASE_UPSERT((n) => `$${n}`)} RETURNING ${LEASE_COLUMNS}`,
        leaseClaimValues(claim),
      );
      if (taken) return { acquired: true, lease: leaseOfRow(taken) };
      const lease = await get(claim.workspace);
      // Released between the upsert and the read: try once more.
      if (!lease) return this.tryAcquire(claim);
      return { acquired: false, lease };
    },
    async renew(workspace, holder, now, ttlMs) {
      return (
        (await sql.run(
          'UPDATE workspace_leases SET expires_at = $1 WHERE workspace = $2 AND holder = $3 AND expires_at > $4',
          [now + ttlMs, workspace, holder, now],
        )) > 0
      );
    },
    async release(workspace, holder) {
      return (
        (await sql.run('DELETE FROM workspace_leases WHERE workspace = $1 AND holder = $2', [
          workspace,
          holder,
        ])) > 0
      );
    },
    get,
  };
}
