/**
 * The contracts' tables on PostgreSQL (issue 18): the twin of ./contract-repository.ts, the same
 * answers (attached obligations by id in byte order, the newest result by insertion, waivers and
 * attachments replaced on conflict by the primary key).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { type ContractRepository, contractResultValues, type ObligationResult } from './contract-repository';

type ResultRow = ObligationResult & Record<string, unknown>;
type WaiverRow = { reason: string; by: string; at: number } & Record<string, unknown>;

const RESULT_COLUMNS = 'status, detail, exit_code, duration_ms, ran_at, scope';

export function createPostgresContractRepository(deps: { sql: SqlClient }): ContractRepository {
  const { sql } = deps;
  return {
    attached: (scope) =>
      sql.query<{ obligation_id: string; spec: string }>(
        'SELECT obligation_id, spec FROM contract_obligations WHERE scope = $1 ORDER BY obligation_id COLLATE "C"',
        [scope],
      ),
    async attach(scope, obligationId, spec, createdAt) {
      await sql.run(
        `INSERT INTO contract_obligations (scope, obligation_id, spec, created_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (scope, obligation_id) DO UPDATE SET spec = excluded.spec, created_at = excluded.created_at`,
        [scope, obligationId, spec, createdAt],
      );
    },
    lastResult: (scope, obligationId) =>
      sql.one<ResultRow>(
        `SELECT ${RESULT_COLUMNS} FROM contract_results WHERE scope = $1 AND obligation_id = $2 ORDER BY id DESC LIMIT 1`,
        [scope, obligationId],
      ),
    latestForCommand: (command) =>
      sql.one<ResultRow>(
        `SELECT ${RESULT_COLUMNS} FROM contract_results WHERE command = $1 ORDER BY id DESC LIMIT 1`,
        [command],
      ),
    async insertResult(row) {
      await sql.run(
        'INSERT INTO contract_results (scope, obligation_id, origin, kind, command, status, detail, exit_code, duration_ms, ran_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
        contractResultValues(row),
      );
    },
    waiver: (scope, obligationId) =>
      sql.one<WaiverRow>(
        'SELECT reason, "by", "at" FROM contract_waivers WHERE scope = $1 AND obligation_id = $2',
        [scope, obligationId],
      ),
    async waive(scope, obligationId, waiver) {
      await sql.run(
        `INSERT INTO contract_waivers (scope, obligation_id, reason, "by", "at") VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (scope, obligation_id) DO UPDATE SET reason = excluded.reason, "by" = excluded."by", "at" = excluded."at"`,
        [scope, obligationId, waiver.reason, waiver.by, waiver.at],
      );
    },
  };
}
