/**
 * Scheduled jobs and their firings in svc.db (tables `schedules`, `schedule_runs`).
 * @module
 */
import { SvcError } from '../errors';
import type { Db } from '../store/db';
import type { Clock, Ids } from '../util/ids';
import { printable } from '../util/terminal-text';

export type ScheduleStatus = 'active' | 'paused' | 'completed';
export type ScheduleTrigger = 'cron' | 'once' | 'manual';

export interface Schedule {
  id: string;
  name: string;
  /** Cron expression (recurring), or null for a one-shot job. */
  cron: string | null;
  timezone: string | null;
  /** One-shot fire time (ms), or null for a cron job. */
  run_at: number | null;
  prompt: string | null;
  recipe: string | null;
  recipe_params: Record<string, unknown>;
  /** new: a fresh session per firing; reuse: one session for every firing. */
  session_mode: 'new' | 'reuse';
  session_id: string | null;
  agent: string | null;
  model: string | null;
  status: ScheduleStatus;
  next_run_at: number | null;
  last_run_at: number | null;
  last_status: string | null;
  last_error: string | null;
  run_count: number;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface ScheduleRun {
  id: string;
  schedule_id: string;
  trigger: ScheduleTrigger;
  due_at: number | null;
  session_id: string | null;
  run_id: string | null;
  /** started, then the run's final status (completed, failed, cancelled, interrupted) or failed. */
  status: string;
  error: string | null;
  runner_pid: number | null;
  started_at: number;
  finished_at: number | null;
}

/** A stored schedule: `recipe_params` is the JSON text as written. */
export type ScheduleRow = Omit<Schedule, 'recipe_params'> & { recipe_params: string };

/**
 * `schedules` and `schedule_runs`. Async (issue 18): the SQLite one answers at once; the PostgreSQL
 * twin is ./pg-schedule-store.ts.
 */
export interface ScheduleStore {
  insert(
    input: Omit<
      Schedule,
      'id' | 'created_at' | 'updated_at' | 'run_count' | 'last_run_at' | 'last_status' | 'last_error'
    >,
  ): Promise<Schedule>;
  get(id: string): Promise<Schedule | undefined>;
  /** By id or by name; a not_found error naming the field otherwise. */
  require(idOrName: string): Promise<Schedule>;
  list(filter?: { status?: ScheduleStatus }): Promise<Schedule[]>;
  update(id: string, patch: Partial<Omit<Schedule, 'id' | 'created_at'>>): Promise<Schedule>;
  delete(id: string): Promise<boolean>;
  /** Active jobs due at `now`, oldest due first. */
  due(now: number, limit: number): Promise<Schedule[]>;
  /**
   * Move a due job to its next time, only if nobody else did (several processes may tick): true
   * when this caller claimed the firing.
   */
  claim(
    id: string,
    expectedNext: number,
    patch: { next_run_at: number | null; status: ScheduleStatus },
  ): Promise<boolean>;
  addRun(run: Omit<ScheduleRun, 'id'>): Promise<ScheduleRun>;
  /** The firing started this run (in this session). */
  attachRun(id: string, patch: { run_id: string; session_id: string }): Promise<void>;
  finishRun(
    id: string,
    patch: { status: string; error: string | null; run_id?: string | null; session_id?: string | null },
  ): Promise<void>;
  runs(filter?: { schedule_id?: string; limit?: number }): Promise<ScheduleRun[]>;
  counts(): Promise<Record<ScheduleStatus, number>>;
}

export function createScheduleStore(deps: { db: () => Db; clock: Clock; ids: Ids }): ScheduleStore {
  const db = deps.db;
  const toSchedule = (row: ScheduleRow): Schedule => ({
    ...row,
    recipe_params: JSON.parse(row.recipe_params) as Record<string, unknown>,
  });
  const get = (id: string) => {
    const row = db().prepare('SELECT * FROM schedules WHERE id = ?').get(id) as ScheduleRow | undefined;
    return row ? toSchedule(row) : undefined;
  };
  const store: ScheduleStore = {
    async insert(input) {
      const now = deps.clock.now();
      const id = deps.ids.next('sch');
      try {
        db()
          .prepare(
            `INSERT INTO schedules (id, name, cron, timezone, run_at, prompt, recipe, recipe_params, session_mode, session_id,
              agent, model, status, next_run_at, created_by, created_at, updated_at)
             VALUES (@id, @name, @cron, @timezone, @run_at, @prompt, @recipe, @recipe_params, @session_mode, @session_id,
              @agent, @model, @status, @next_run_at, @created_by, @now, @now)`,
          )
          .run({ ...input, id, now, recipe_params: JSON.stringify(input.recipe_params) });
      } catch (error) {
        if (String((error as Error).message).includes('UNIQUE')) {
          throw new SvcError(
            'conflict',
            `name: a schedule named "${input.name}" exists; pick another name or update it`,
          );
        }
        throw error;
      }
      return get(id)!;
    },
    get: async (id) => get(id),
    async require(idOrName) {
      const found =
        get(idOrName) ??
        (() => {
          const row = db().prepare('SELECT * FROM schedules WHERE name = ?').get(idOrName) as
            | ScheduleRow
            | undefined;
          return row ? toSchedule(row) : undefined;
        })();
      if (!found) throw noSchedule(idOrName);
      return found;
    },
    async list(filter = {}) {
      const rows = (
        filter.status
          ? db()
              .prepare('SELECT * FROM schedules WHERE status = ? ORDER BY created_at, id')
              .all(filter.status)
          : db().prepare('SELECT * FROM schedules ORDER BY created_at, id').all()
      ) as ScheduleRow[];
      return rows.map(toSchedule);
    },
    async update(id, patch) {
      const current = get(id);
      if (!current) throw new SvcError('not_found', `schedule_id: no schedule "${id}"`);
      const next = { ...current, ...patch, updated_at: deps.clock.now() };
      db()
        .prepare(
          `UPDATE schedules SET name = @name, cron = @cron, timezone = @timezone, run_at = @run_at, prompt = @prompt,
            recipe = @recipe, recipe_params = @recipe_params, session_mode = @session_mode, session_id = @session_id,
            agent = @agent, model = @model, status = @status, next_run_at = @next_run_at, last_run_at = @last_run_at,
            last_status = @last_status, last_error = @last_error, run_count = @run_count, updated_at = @updated_at
           WHERE id = @id`,
        )
        .run({ ...next, recipe_params: JSON.stringify(next.recipe_params) });
      return get(id)!;
    },
    async delete(id) {
      return db().prepare('DELETE FROM schedules WHERE id = ?').run(id).changes > 0;
    },
    async due(now, limit) {
      const rows = db()
        .prepare(
          "SELECT * FROM schedules WHERE status = 'active' AND next_run_at IS NOT NULL AND next_run_at <= ? ORDER BY next_run_at, id LIMIT ?",
        )
        .all(now, limit) as ScheduleRow[];
      return rows.map(toSchedule);
    },
    async claim(id, expectedNext, patch) {
      return (
        db()
          .prepare(
            "UPDATE schedules SET next_run_at = ?, status = ?, updated_at = ? WHERE id = ? AND status = 'active' AND next_run_at = ?",
          )
          .run(patch.next_run_at, patch.status, deps.clock.now(), id, expectedNext).changes === 1
      );
    },
    async addRun(run) {
      const id = deps.ids.next('schrun');
      db()
        .prepare(
          `INSERT INTO schedule_runs (id, schedule_id, trigger, due_at, session_id, run_id, status, error, runner_pid, started_at, finished_at)
           VALUES (@id, @schedule_id, @trigger, @due_at, @session_id, @run_id, @status, @error, @runner_pid, @started_at, @finished_at)`,
        )
        .run({ ...run, id });
      return { ...run, id };
    },
    async attachRun(id, patch) {
      db()
        .prepare('UPDATE schedule_runs SET run_id = ?, session_id = ? WHERE id = ?')
        .run(patch.run_id, patch.session_id, id);
    },
    async finishRun(id, patch) {
      db()
        .prepare(
          `UPDATE schedule_runs SET status = @status, error = @error, run_id = coalesce(@run_id, run_id),
            session_id = coalesce(@session_id, session_id), finished_at = @finished_at WHERE id = @id`,
        )
        .run({
          id,
          status: patch.status,
          error: patch.error,
          run_id: patch.run_id ?? null,
          session_id: patch.session_id ?? null,
          finished_at: deps.clock.now(),
        });
    },
    async runs(filter = {}) {
      const limit = filter.limit ?? 20;
      return (
        filter.schedule_id
          ? db()
              .prepare(
                'SELECT * FROM schedule_runs WHERE schedule_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ?',
              )
              .all(filter.schedule_id, limit)
          : db()
              .prepare('SELECT * FROM schedule_runs ORDER BY started_at DESC, rowid DESC LIMIT ?')
              .all(limit)
      ) as ScheduleRun[];
    },
    async counts() {
      const rows = db().prepare('SELECT status, count(*) AS n FROM schedules GROUP BY status').all() as {
        status: ScheduleStatus;
        n: number;
      }[];
      const out: Record<ScheduleStatus, number> = { active: 0, paused: 0, completed: 0 };
      for (const row of rows) out[row.status] = row.n;
      return out;
    },
  };
  return store;
}

/** The error of a lookup that found nothing; the key as given, cut and escaped. */
export function noSchedule(idOrName: string): SvcError {
  return new SvcError(
    'not_found',
    `schedule_id: no schedule "${printable(idOrName, 100)}"; see schedule action list`,
  );
}
