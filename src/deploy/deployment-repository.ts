/**
 * The deployed agents' table, `deployments`: the only place that knows how deployments are
 * stored. ./deploy-service.ts owns the processes, the tokens and the views.
 * @module
 */
import type { Db } from '../store/db';

/** A stored deployment: `tools`, `skills` and `overrides` are the JSON as written. */
export interface DeploymentRow {
  name: string;
  fleet: string | null;
  target: string;
  agent: string;
  model: string | null;
  tools: string;
  skills: string;
  url: string | null;
  pid: number | null;
  token_ref: string;
  data_dir: string;
  overrides: string;
  log_path: string;
  status: 'running' | 'stopped' | 'failed' | 'exited';
  health: 'healthy' | 'unhealthy' | 'unreachable' | 'stopped' | 'unknown';
  last_error: string | null;
  checked_at: number | null;
  created_at: number;
  updated_at: number;
}

/** What a deploy writes before the process starts (the row reads `failed`/`starting` until it does). */
export type NewDeployment = Pick<
  DeploymentRow,
  | 'name'
  | 'fleet'
  | 'target'
  | 'agent'
  | 'model'
  | 'tools'
  | 'skills'
  | 'token_ref'
  | 'data_dir'
  | 'overrides'
  | 'log_path'
>;

export interface DeploymentRepository {
  get(name: string): Promise<DeploymentRow | undefined>;
  /**
   * Insert, or reset an existing row of the name to the new deployment (keeps created_at); in one
   * statement, so two deploys of one name racing (on one node or two) cannot both start: false,
   * and nothing written, when another deploy of the name began after `startingSince` and is still
   * starting.
   */
  upsertStarting(row: NewDeployment, now: number, startingSince: number): Promise<boolean>;
  /** Set some columns, and updated_at. */
  patch(name: string, fields: Partial<DeploymentRow>, now: number): Promise<void>;
  delete(name: string): Promise<void>;
  /** By name; only one fleet's when given. */
  list(fleet?: string): Promise<DeploymentRow[]>;
  /** Running deployments that have a URL. */
  running(): Promise<DeploymentRow[]>;
}

/** The upsert of a deployment about to start, with placeholders `p(1)`…`p(14)` (SQLite and PostgreSQL). */
export const DEPLOYMENT_UPSERT = (p: (n: number) => string) =>
  `INSERT INTO deployments (name, fleet, target, agent, model, tools, skills, url, pid, token_ref, data_dir, overrides, log_path, status, health, last_error, checked_at, created_at, updated_at)
   VALUES (${[1, 2, 3, 4, 5, 6, 7].map(p).join(', ')}, NULL, NULL, ${[8, 9, 10, 11].map(p).join(', ')}, 'failed', 'unknown', 'starting', NULL, ${p(12)}, ${p(13)})
   ON CONFLICT(name) DO UPDATE SET fleet = excluded.fleet, target = excluded.target, agent = excluded.agent,
     model = excluded.model, tools = excluded.tools, skills = excluded.skills, url = NULL, pid = NULL,
     token_ref = excluded.token_ref, data_dir = excluded.data_dir, overrides = excluded.overrides,
     log_path = excluded.log_path, status = 'failed', health = 'unknown', last_error = 'starting',
     updated_at = excluded.updated_at
   WHERE NOT (deployments.status = 'failed' AND deployments.last_error = 'starting' AND deployments.updated_at > ${p(14)})`;

export const deploymentUpsertValues = (row: NewDeployment, now: number, startingSince: number): unknown[] => [
  row.name,
  row.fleet,
  row.target,
  row.agent,
  row.model,
  row.tools,
  row.skills,
  row.token_ref,
  row.data_dir,
  row.overrides,
  row.log_path,
  now,
  now,
  startingSince,
];

/** The UPDATE of some columns and updated_at of one deployment, placeholders by `p`. */
export function deploymentPatch(
  fields: Partial<DeploymentRow>,
  now: number,
  name: string,
  p: (n: number) => string,
): { sql: string; values: unknown[] } {
  const entries = Object.entries(fields);
  const sets = entries.map(([key], i) => `${key} = ${p(i + 1)}`);
  return {
    sql: `UPDATE deployments SET ${[...sets, `updated_at = ${p(entries.length + 1)}`].join(', ')} WHERE name = ${p(entries.length + 2)}`,
    values: [...entries.map(([, value]) => value), now, name],
  };
}

export function createDeploymentRepository(db: () => Db): DeploymentRepository {
  return {
    get: async (name) =>
      db().prepare('SELECT * FROM deployments WHERE name = ?').get(name) as DeploymentRow | undefined,
    upsertStarting: async (row, now, startingSince) =>
      db()
        .prepare(DEPLOYMENT_UPSERT(() => '?'))
        .run(...deploymentUpsertValues(row, now, startingSince)).changes > 0,
    async patch(name, fields, now) {
      const { sql, values } = deploymentPatch(fields, now, name, () => '?');
      db()
        .prepare(sql)
        .run(...values);
    },
    async delete(name) {
      db().prepare('DELETE FROM deployments WHERE name = ?').run(name);
    },
    list: async (fleet) =>
      (fleet
        ? db().prepare('SELECT * FROM deployments WHERE fleet = ? ORDER BY name').all(fleet)
        : db().prepare('SELECT * FROM deployments ORDER BY name').all()) as DeploymentRow[],
    running: async () =>
      db()
        .prepare("SELECT * FROM deployments WHERE status = 'running' AND url IS NOT NULL")
        .all() as DeploymentRow[],
  };
}
