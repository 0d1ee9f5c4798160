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
  /** Insert, or reset an existing row of the name to the new deployment (keeps created_at). */
  upsertStarting(row: NewDeployment, now: number): Promise<void>;
  /** Set some columns, and updated_at. */
  patch(name: string, fields: Partial<DeploymentRow>, now: number): Promise<void>;
  delete(name: string): Promise<void>;
  /** By name; only one fleet's when given. */
  list(fleet?: string): Promise<DeploymentRow[]>;
  /** Running deployments that have a URL. */
  running(): Promise<DeploymentRow[]>;
}

export function createDeploymentRepository(db: () => Db): DeploymentRepository {
  return {
    get: async (name) =>
      db().prepare('SELECT * FROM deployments WHERE name = ?').get(name) as DeploymentRow | undefined,
    async upsertStarting(row, now) {
      db()
        .prepare(
          `INSERT INTO deployments (name, fleet, target, agent, model, tools, skills, url, pid, token_ref, data_dir, overrides, log_path, status, health, last_error, checked_at, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?, 'failed', 'unknown', 'starting', NULL, ?, ?)
           ON CONFLICT(name) DO UPDATE SET fleet = excluded.fleet, target = excluded.target, agent = excluded.agent,
             model = excluded.model, tools = excluded.tools, skills = excluded.skills, url = NULL, pid = NULL,
             token_ref = excluded.token_ref, data_dir = excluded.data_dir, overrides = excluded.overrides,
             log_path = excluded.log_path, status = 'failed', health = 'unknown', last_error = 'starting',
             updated_at = excluded.updated_at`,
        )
        .run(
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
        );
    },
    async patch(name, fields, now) {
      const entries = Object.entries(fields);
      db()
        .prepare(
          `UPDATE deployments SET ${entries.map(([key]) => `${key} = ?`).join(', ')}, updated_at = ? WHERE name = ?`,
        )
        .run(...entries.map(([, value]) => value as string | number | null), now, name);
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
