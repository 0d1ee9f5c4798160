/**
 * `workspace_claims` and `claim_negotiations` on PostgreSQL (issue 18): the twin of
 * ./claim-repository.ts, the same answers (active oldest first, list newest first, the last 500
 * of any state with include_inactive, `paths` as the JSON text written). `exclusive` is one
 * transaction holding an advisory transaction lock on the claims, so of several nodes acquiring
 * overlapping hard claims at once exactly one passes the overlap check.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { ClaimRepository, ClaimRow } from './claim-repository';

/** The advisory lock key every node takes before an overlap check and its insert. */
const CLAIMS_LOCK = 'svc:workspace_claims';

type Row = ClaimRow & Record<string, unknown>;

export function createPostgresClaimRepository(deps: { sql: SqlClient }): ClaimRepository {
  const { sql } = deps;
  return {
    exclusive: (fn) =>
      sql.transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [CLAIMS_LOCK]);
        return fn();
      }),
    get: (id) => sql.one<Row>('SELECT * FROM workspace_claims WHERE id = $1', [id]),
    active: (now) =>
      sql.query<Row>(
        'SELECT * FROM workspace_claims WHERE released_at IS NULL AND expires_at > $1 ORDER BY created_at, id',
        [now],
      ),
    list: ({ now, includeInactive }) =>
      includeInactive
        ? sql.query<Row>('SELECT * FROM workspace_claims ORDER BY created_at DESC, id DESC LIMIT 500')
        : sql.query<Row>(
            'SELECT * FROM workspace_claims WHERE released_at IS NULL AND expires_at > $1 ORDER BY created_at DESC, id DESC',
            [now],
          ),
    async insert(row) {
      await sql.run(
        `INSERT INTO workspace_claims (id, session_id, paths, mode, reason, created_at, renewed_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          row.id,
          row.session_id,
          row.paths,
          row.mode,
          row.reason,
          row.created_at,
          row.renewed_at,
          row.expires_at,
        ],
      );
    },
    async renew(id, renewedAt, expiresAt) {
      await sql.run('UPDATE workspace_claims SET renewed_at = $1, expires_at = $2 WHERE id = $3', [
        renewedAt,
        expiresAt,
        id,
      ]);
    },
    async release(id, releasedAt, reason) {
      await sql.run('UPDATE workspace_claims SET released_at = $1, release_reason = $2 WHERE id = $3', [
        releasedAt,
        reason,
        id,
      ]);
    },
    async insertNegotiation(row) {
      await sql.run(
        'INSERT INTO claim_negotiations (id, claim_id, from_session_id, message, created_at, outcome) VALUES ($1, $2, $3, $4, $5, $6)',
        [row.id, row.claim_id, row.from_session_id, row.message, row.created_at, row.outcome],
      );
    },
  };
}
