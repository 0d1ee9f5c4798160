/**
 * The scheduler (`app.scheduler`): jobs that run a prompt or a recipe in a session, on a cron
 * expression or once at a time. Jobs are durable rows; `tick(now)` fires the due ones (the
 * autopilot worker calls it; `run` fires one now). A firing is claimed atomically, so two
 * processes ticking the same data dir fire a job once. Runs are never approved silently: a
 * prompt's run follows `services.autopilot.unattended` (else `permissions.unattended`), a recipe
 * asks through the permission service like any unattended run.
 * @module
 */
import { SvcError, toSvcError } from '../errors';
import { nextFireTimes } from './cron';
import { createFiring } from './firing';
import {
  checkScheduleName,
  mergeSchedulePatch,
  type ScheduleInput,
  validateSchedule,
} from './schedule-input';
import type { Schedule, ScheduleStore } from './schedule-store';
import type { FireResult, SchedulerDeps } from './scheduler-deps';

export type { ScheduleInput } from './schedule-input';
export type { FireResult, ScheduledRecipes, SchedulerAgent, SchedulerDeps } from './scheduler-deps';

export interface Scheduler {
  readonly store: ScheduleStore;
  create(input: ScheduleInput): Promise<{ schedule: Schedule; warnings: string[] }>;
  update(
    idOrName: string,
    patch: Partial<ScheduleInput>,
  ): Promise<{ schedule: Schedule; warnings: string[] }>;
  pause(idOrName: string): Promise<Schedule>;
  unpause(idOrName: string): Promise<Schedule>;
  delete(idOrName: string): Promise<Schedule>;
  /** Fire one job now (does not move its next time). */
  run(idOrName: string): Promise<FireResult>;
  /** Fire every job due at `now` (default the App clock); returns what fired. */
  tick(now?: number, options?: { limit?: number }): Promise<FireResult[]>;
  /** The next fire times of a job (cron: up to `count`; once: its time). */
  preview(schedule: Schedule, count?: number): Promise<number[]>;
  /** Wait for the runs this process started to end (tests, shutdown). */
  settled(): Promise<void>;
  /** Runs this process started that have not ended. */
  inFlight(): number;
}

/** Whether `run_recipe` is in the tool registry of a host (a ToolHost, the App). */
export function recipeToolAvailable(host: { tools: { get(name: string): unknown } }): boolean {
  return host.tools.get('run_recipe') !== undefined;
}

export function createScheduler(deps: SchedulerDeps): Scheduler {
  const { store, clock } = deps;
  const firing = createFiring(deps);
  const validate = (input: ScheduleInput, now: number) => validateSchedule(deps, input, now);

  const scheduler: Scheduler = {
    store,
    async create(input) {
      const now = clock.now();
      const { next, timezone, warnings } = await validate(input, now);
      const schedule = await store.insert({
        name: input.name.trim(),
        cron: input.cron?.trim() ?? null,
        timezone: input.cron !== undefined ? timezone : null,
        run_at: input.at ?? null,
        prompt: input.prompt ?? null,
        recipe: input.recipe ?? null,
        recipe_params: input.recipe_params ?? {},
        session_mode: input.session ?? (input.session_id ? 'reuse' : 'new'),
        session_id: input.session_id ?? null,
        agent: input.agent ?? null,
        model: input.model ?? null,
        status: input.paused ? 'paused' : 'active',
        next_run_at: next,
        created_by: input.created_by ?? 'api',
      });
      return { schedule, warnings };
    },
    async update(idOrName, patch) {
      if (patch.name !== undefined) checkScheduleName(patch.name);
      const current = await store.require(idOrName);
      const merged = mergeSchedulePatch(current, patch);
      const timing = patch.cron !== undefined || patch.at !== undefined || patch.timezone !== undefined;
      const now = clock.now();
      // A completed one-shot job keeps its past time unless the update gives a new one.
      const checkTime = timing || current.status !== 'completed';
      const { next, timezone, warnings } = checkTime
        ? await validate(merged, now)
        : { next: null, timezone: merged.timezone ?? null, warnings: [] as string[] };
      const schedule = await store.update(current.id, {
        name: merged.name.trim(),
        prompt: merged.prompt ?? null,
        recipe: merged.recipe ?? null,
        recipe_params: merged.recipe_params ?? {},
        cron: merged.cron ?? null,
        run_at: merged.at ?? null,
        timezone: merged.cron !== undefined ? timezone : null,
        session_mode: merged.session ?? 'new',
        session_id: merged.session_id ?? null,
        agent: merged.agent ?? null,
        model: merged.model ?? null,
        ...(checkTime ? { next_run_at: next } : {}),
        ...(timing && current.status === 'completed' ? { status: 'active' as const } : {}),
      });
      return { schedule, warnings };
    },
    async pause(idOrName) {
      const current = await store.require(idOrName);
      if (current.status === 'completed') {
        throw new SvcError(
          'conflict',
          `schedule ${current.id} already completed (a one-shot job that fired); update its time to reuse it`,
        );
      }
      return await store.update(current.id, { status: 'paused' });
    },
    async unpause(idOrName) {
      const current = await store.require(idOrName);
      if (current.status === 'completed') {
        throw new SvcError(
          'conflict',
          `schedule ${current.id} already completed; update its time to reuse it`,
        );
      }
      const now = clock.now();
      let next = current.next_run_at;
      // Missed times while paused are skipped: the next time is from now on.
      if (current.cron)
        [next] = await nextFireTimes(current.cron, { after: now, timezone: current.timezone ?? 'UTC' });
      else if (current.run_at !== null && current.run_at <= now) next = now;
      return await store.update(current.id, { status: 'active', next_run_at: next });
    },
    async delete(idOrName) {
      const current = await store.require(idOrName);
      await store.delete(current.id);
      return current;
    },
    async run(idOrName) {
      return firing.fire(await store.require(idOrName), 'manual', null);
    },
    async tick(now = clock.now(), options = {}) {
      const fired: FireResult[] = [];
      for (const schedule of await store.due(now, options.limit ?? 50)) {
        const dueAt = schedule.next_run_at as number;
        let next: number | null = null;
        let status: Schedule['status'] = 'active';
        if (schedule.cron) {
          try {
            // Missed times (the worker was down) fire once, then the schedule goes on from now.
            [next] = await nextFireTimes(schedule.cron, { after: now, timezone: schedule.timezone ?? 'UTC' });
          } catch (error) {
            await store.update(schedule.id, { status: 'paused', last_error: toSvcError(error).message });
            continue;
          }
        } else {
          status = 'completed';
        }
        if (!(await store.claim(schedule.id, dueAt, { next_run_at: next, status }))) continue;
        fired.push(
          await firing.fire(
            (await store.get(schedule.id)) ?? schedule,
            schedule.cron ? 'cron' : 'once',
            dueAt,
          ),
        );
      }
      return fired;
    },
    async preview(schedule, count = 5) {
      if (schedule.status !== 'active' && schedule.status !== 'paused') return [];
      if (schedule.cron) {
        return nextFireTimes(schedule.cron, {
          after: Math.max(clock.now(), (schedule.next_run_at ?? 0) - 1),
          timezone: schedule.timezone ?? 'UTC',
          count,
        });
      }
      return schedule.next_run_at !== null ? [schedule.next_run_at] : [];
    },
    settled: () => firing.settled(),
    inFlight: () => firing.inFlight(),
  };
  return scheduler;
}
