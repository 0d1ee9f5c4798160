/**
 * The deployments table on PostgreSQL (issue 18): the twin of ./deployment-repository.ts, the
 * same answers (deployments by name in byte order, an upsert keeps created_at and resets the row
 * to `failed`/`starting`, a missing one is undefined).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import {
  DEPLOYMENT_UPSERT,
  type DeploymentRepository,
  type DeploymentRow,
  deploymentPatch,
  deploymentUpsertValues,
} from './deployment-repository';

type Row = DeploymentRow & Record<string, unknown>;
const p = (n: number) => `$${n}`;

export function createPostgresDeploymentRepository(deps: { sql: SqlClient }): DeploymentRepository {
  const { sql } = deps;
  return {
    get: (name) => sql.one<Row>('SELECT * FROM deployments WHERE name = $1', [name]),
    upsertStarting: async (row, now, startingSince) =>
      (await sql.run(DEPLOYMENT_UPSERT(p), deploymentUpsertValues(row, now, startingSince))) > 0,
    async patch(name, fields, now) {
      const update = deploymentPatch(fields, now, name, p);
      await sql.run(update.sql, update.values);
    },
    async delete(name) {
      await sql.run('DELETE FROM deployments WHERE name = $1', [name]);
    },
    list: (fleet) =>
      fleet
        ? sql.query<Row>('SELECT * FROM deployments WHERE fleet = $1 ORDER BY name COLLATE "C"', [fleet])
        : sql.query<Row>('SELECT * FROM deployments ORDER BY name COLLATE "C"'),
    running: () =>
      sql.query<Row>(
        `SELECT * FROM deployments WHERE status = 'running' AND url IS NOT NULL ORDER BY name COLLATE "C"`,
      ),
  };
}
