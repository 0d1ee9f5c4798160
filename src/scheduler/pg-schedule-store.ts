/**
 * `schedules` and `schedule_runs` on PostgreSQL (issue 18): the twin of ./schedule-store.ts, the
 * same answers (list by created_at then id, due by next_run_at then id, runs newest first in
 * write order, `recipe_params` parsed, a taken name a `conflict`, a missing id `not_found`). A due
 * firing is claimed by one conditional UPDATE (`… WHERE next_run_at = $old`), so of several
 * nodes ticking at once exactly one moves the job on and fires it.
 * @module
 */
import { SvcError } from '../errors';
import type { SqlClient } from '../store/postgres/client';
import type { Clock, Ids } from '../util/ids';
import {
  noSchedule,
  type Schedule,
  type ScheduleRow,
  type ScheduleRun,
  type ScheduleStatus,
  type ScheduleStore,
} from './schedule-store';

const COLUMNS = [
  'name',
  'cron',
  'timezone',
  'run_at',
  'prompt',
  'recipe',
  'recipe_params',
  'session_mode',
  'session_id',
  'agent',
  'model',
  'status',
  'next_run_at',
  'last_run_at',
  'last_status',
  'last_error',
  'run_count',
  'updated_at',
] as const;

export function createPostgresScheduleStore(deps: { sql: SqlClient; clock: Clock; ids: Ids }): ScheduleStore {
  const { sql } = deps;
  const toSchedule = (row: ScheduleRow): Schedule => ({
    ...row,
    recipe_params: JSON.parse(row.recipe_params) as Record<string, unknown>,
  });
  const get = async (id: string) => {
    const row = await sql.one<ScheduleRow & Record<string, unknown>>(
      'SELECT * FROM schedules WHERE id = $1',
      [id],
    );
    return row ? toSchedule(row) : undefined;
  };
  return {
    async insert(input) {
      const now = deps.clock.now();
      const id = deps.ids.next('sch');
      const taken = await sql.one<{ id: string }>(
        `INSERT INTO schedules (id, name, cron, timezone, run_at, prompt, recipe, recipe_params, session_mode, session_id,
          agent, model, status, next_run_at, created_by, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $16)
         ON CONFLICT (name) DO NOTHING RETURNING id`,
        [
          id,
          input.name,
          input.cron,
          input.timezone,
          input.run_at,
          input.prompt,
          input.recipe,
          JSON.stringify(input.recipe_params),
          input.session_mode,
          input.session_id,
          input.agent,
          input.model,
          input.status,
          input.next_run_at,
          input.created_by,
          now,
        ],
      );
      if (!taken) {
        throw new SvcError(
          'conflict',
          `name: a schedule named "${input.name}" exists; pick another name or update it`,
        );
      }
      return (await get(id))!;
    },
    get,
    async require(idOrName) {
      const found =
        (await get(idOrName)) ??
        (await (async () => {
          const row = await sql.one<ScheduleRow & Record<string, unknown>>(
            'SELECT * FROM schedules WHERE name = $1',
            [idOrName],
          );
          return row ? toSchedule(row) : undefined;
        })());
      if (!found) throw noSchedule(idOrName);
      return found;
    },
    async list(filter = {}) {
      const rows = filter.status
        ? await sql.query<ScheduleRow & Record<string, unknown>>(
            'SELECT * FROM schedules WHERE status = $1 ORDER BY created_at, id',
            [filter.status],
          )
        : await sql.query<ScheduleRow & Record<string, unknown>>(
            'SELECT * FROM schedules ORDER BY created_at, id',
          );
      return rows.map(toSchedule);
    },
    async update(id, patch) {
      const current = await get(id);
      if (!current) throw new SvcError('not_found', `schedule_id: no schedule "${id}"`);
      const next: Schedule = { ...current, ...patch, updated_at: deps.clock.now() };
      const values = COLUMNS.map((c) =>
        c === 'recipe_params' ? JSON.stringify(next.recipe_params) : next[c],
      );
      const changed = await sql.run(
        `UPDATE schedules SET ${COLUMNS.map((c, i) => `${c} = $${i + 1}`).join(', ')} WHERE id = $${COLUMNS.length + 1}`,
        [...values, id],
      );
      if (changed === 0) throw new SvcError('not_found', `schedule_id: no schedule "${id}"`);
      return (await get(id))!;
    },
    async delete(id) {
      return (await sql.run('DELETE FROM schedules WHERE id = $1', [id])) > 0;
    },
    async due(now, limit) {
      const rows = await sql.query<ScheduleRow & Record<string, unknown>>(
        "SELECT * FROM schedules WHERE status = 'active' AND next_run_at IS NOT NULL AND next_run_at <= $1 ORDER BY next_run_at, id LIMIT $2",
        [now, limit],
      );
      return rows.map(toSchedule);
    },
    async claim(id, expectedNext, patch) {
      const changed = await sql.run(
        "UPDATE schedules SET next_run_at = $1, status = $2, updated_at = $3 WHERE id = $4 AND status = 'active' AND next_run_at = $5",
        [patch.next_run_at, patch.status, deps.clock.now(), id, expectedNext],
      );
      return changed === 1;
    },
    ...scheduleRuns(deps),
    async counts() {
      const rows = await sql.query<{ status: ScheduleStatus; n: number }>(
        'SELECT status, count(*)::int AS n FROM schedules GROUP BY status',
      );
      const out: Record<ScheduleStatus, number> = { active: 0, paused: 0, completed: 0 };
      for (const row of rows) out[row.status] = row.n;
      return out;
    },
  };
}

const runColumns =
  'id, schedule_id, trigger, due_at, session_id, run_id, status, error, runner_pid, started_at, finished_at';

/** `schedule_runs`: a firing's record, newest first in write order (`row_seq` for SQLite's rowid). */
function scheduleRuns(deps: {
  sql: SqlClient;
  clock: Clock;
  ids: Ids;
}): Pick<ScheduleStore, 'addRun' | 'attachRun' | 'finishRun' | 'runs'> {
  const { sql } = deps;
  return {
    async addRun(run) {
      const id = deps.ids.next('schrun');
      await sql.run(
        `INSERT INTO schedule_runs (${runColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        [
          id,
          run.schedule_id,
          run.trigger,
          run.due_at,
          run.session_id,
          run.run_id,
          run.status,
          run.error,
          run.runner_pid,
          run.started_at,
          run.finished_at,
        ],
      );
      return { ...run, id };
    },
    async attachRun(id, patch) {
      await sql.run('UPDATE schedule_runs SET run_id = $1, session_id = $2 WHERE id = $3', [
        patch.run_id,
        patch.session_id,
        id,
      ]);
    },
    async finishRun(id, patch) {
      await sql.run(
        `UPDATE schedule_runs SET status = $1, error = $2, run_id = coalesce($3, run_id),
          session_id = coalesce($4, session_id), finished_at = $5 WHERE id = $6`,
        [patch.status, patch.error, patch.run_id ?? null, patch.session_id ?? null, deps.clock.now(), id],
      );
    },
    async runs(filter = {}) {
      const limit = filter.limit ?? 20;
      return filter.schedule_id
        ? sql.query<ScheduleRun & Record<string, unknown>>(
            `SELECT ${runColumns} FROM schedule_runs WHERE schedule_id = $1 ORDER BY started_at DESC, row_seq DESC LIMIT $2`,
            [filter.schedule_id, limit],
          )
        : sql.query<ScheduleRun & Record<string, unknown>>(
            `SELECT ${runColumns} FROM schedule_runs ORDER BY started_at DESC, row_seq DESC LIMIT $1`,
            [limit],
          );
    },
  };
}
