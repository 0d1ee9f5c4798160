/**
 * The scheduler (`app.scheduler`): jobs that run a prompt or a recipe in a session, on a cron
 * expression or once at a time. Jobs are durable rows; `tick(now)` fires the due ones (the
 * autopilot worker calls it; `run` fires one now). A firing is claimed atomically, so two
 * processes ticking the same data dir fire a job once. Runs are never approved silently: a
 * prompt's run follows `services.autopilot.unattended` (else `permissions.unattended`), a recipe
 * asks through the permission service like any unattended run.
 * @module
 */
import type { App } from '../app';
import { SvcError, toSvcError } from '../errors';
import { callerOf } from '../workflows/lineage';
import { defaultTimezone, nextFireTimes } from './cron';
import {
  createScheduleStore,
  type Schedule,
  type ScheduleRun,
  type ScheduleStore,
  type ScheduleTrigger,
} from './schedule-store';

export interface ScheduleInput {
  name: string;
  prompt?: string;
  recipe?: string;
  recipe_params?: Record<string, unknown>;
  cron?: string;
  timezone?: string;
  /** One-shot time: ms since the epoch. */
  at?: number;
  session?: 'new' | 'reuse';
  session_id?: string;
  agent?: string;
  model?: string;
  paused?: boolean;
  created_by?: string;
}

export interface FireResult {
  schedule_id: string;
  schedule_run_id: string;
  trigger: ScheduleTrigger;
  status: 'started' | 'failed';
  session_id: string | null;
  run_id: string | null;
  error: string | null;
}

export interface Scheduler {
  readonly store: ScheduleStore;
  create(input: ScheduleInput): Promise<{ schedule: Schedule; warnings: string[] }>;
  update(
    idOrName: string,
    patch: Partial<ScheduleInput>,
  ): Promise<{ schedule: Schedule; warnings: string[] }>;
  pause(idOrName: string): Schedule;
  unpause(idOrName: string): Promise<Schedule>;
  delete(idOrName: string): Schedule;
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

export function recipeToolAvailable(app: App): boolean {
  return app.tools.get('run_recipe') !== undefined;
}

export function createScheduler(appRef: () => App): Scheduler {
  const app = () => appRef();
  const store = createScheduleStore({ db: () => app().db, clock: app().clock, ids: app().ids });
  const inflight = new Set<Promise<void>>();

  const validate = async (input: ScheduleInput, now: number) => {
    const warnings: string[] = [];
    if (!input.name.trim()) throw new SvcError('invalid_input', 'name: must not be empty');
    const hasPrompt = typeof input.prompt === 'string' && input.prompt.trim() !== '';
    const hasRecipe = typeof input.recipe === 'string' && input.recipe.trim() !== '';
    if (hasPrompt === hasRecipe) {
      throw new SvcError(
        'invalid_input',
        'prompt or recipe: give exactly one (a prompt to send, or a recipe name to run)',
      );
    }
    if ((input.cron === undefined) === (input.at === undefined)) {
      throw new SvcError(
        'invalid_input',
        'cron or at: give exactly one (a cron expression, or a one-shot time)',
      );
    }
    const timezone = input.timezone ?? defaultTimezone();
    let next: number;
    if (input.cron !== undefined) {
      [next] = await nextFireTimes(input.cron, { after: now, timezone });
    } else {
      if (!Number.isFinite(input.at) || (input.at as number) <= now) {
        throw new SvcError(
          'invalid_input',
          `at: ${new Date(input.at as number).toISOString()} is not in the future (now is ${new Date(now).toISOString()})`,
        );
      }
      next = input.at as number;
    }
    if (hasRecipe && !recipeToolAvailable(app())) {
      warnings.push(
        'run_recipe is not available in this build: the job fails when it fires until recipes are installed',
      );
    }
    if (input.session_id) app().sessions.require(input.session_id);
    return { next, timezone, warnings };
  };

  const fire = async (
    schedule: Schedule,
    trigger: ScheduleTrigger,
    dueAt: number | null,
  ): Promise<FireResult> => {
    const a = app();
    const now = a.clock.now();
    const record = store.addRun({
      schedule_id: schedule.id,
      trigger,
      due_at: dueAt,
      session_id: null,
      run_id: null,
      status: 'started',
      error: null,
      runner_pid: process.pid,
      started_at: now,
      finished_at: null,
    });
    const result = (patch: Partial<FireResult>): FireResult => ({
      schedule_id: schedule.id,
      schedule_run_id: record.id,
      trigger,
      status: 'started',
      session_id: null,
      run_id: null,
      error: null,
      ...patch,
    });
    const failed = (error: unknown, sessionId: string | null = null): FireResult => {
      const message = a.redactor.string(toSvcError(error).message);
      store.finishRun(record.id, { status: 'failed', error: message, session_id: sessionId });
      store.update(schedule.id, {
        last_run_at: now,
        last_status: 'failed',
        last_error: message,
        run_count: schedule.run_count + 1,
      });
      a.log.warn('schedule firing failed', { schedule_id: schedule.id, error: message });
      return result({ status: 'failed', error: message, session_id: sessionId });
    };
    let sessionId: string;
    try {
      sessionId = sessionFor(a, schedule);
    } catch (error) {
      return failed(error);
    }
    store.update(schedule.id, {
      last_run_at: now,
      last_status: 'started',
      last_error: null,
      run_count: schedule.run_count + 1,
      ...(schedule.session_mode === 'reuse' ? { session_id: sessionId } : {}),
    });
    if (schedule.recipe) {
      if (!recipeToolAvailable(a)) {
        return failed(
          new SvcError(
            'unavailable',
            `recipe ${schedule.recipe}: run_recipe is not available in this build; schedule a prompt instead`,
          ),
          sessionId,
        );
      }
      const unattended = a.config.services.autopilot.unattended;
      // The run_recipe tool's own call (recipes are a domain: the scheduler asks it directly).
      // Never approved silently: asks go to the permission service (nobody attached → fail or wait).
      const job = a.recipes
        .run(schedule.recipe, schedule.recipe_params ?? {}, {
          caller: callerOf(a, { sessionId, signal: new AbortController().signal }, sessionId),
          approve: async (request) => {
            await a.permissions.ask(
              { tool: 'bash', ...request },
              { sessionId, ...(unattended ? { unattended } : {}) },
            );
          },
        })
        .then(
          (value) => {
            finishFiring(record, schedule.id, value.status, null, value.run_id);
          },
          (error) =>
            finishFiring(record, schedule.id, 'failed', a.redactor.string(toSvcError(error).message)),
        );
      track(job);
      return result({ session_id: sessionId });
    }
    try {
      const unattended = a.config.services.autopilot.unattended;
      const sent = a.agent.send({
        sessionId,
        prompt: schedule.prompt ?? '',
        ...(schedule.agent ? { agent: schedule.agent } : {}),
        ...(schedule.model ? { model: schedule.model } : {}),
        origin: 'scheduler',
        ...(unattended ? { unattended } : {}),
      });
      store.attachRun(record.id, { run_id: sent.run_id, session_id: sessionId });
      const job = a.agent.wait(sent.run_id).then(
        // A run that finished with a refused change records `refused`, not `completed`.
        (run) =>
          run.refused
            ? finishFiring(
                record,
                schedule.id,
                'refused',
                `${run.refused.summary}; next: ${run.refused.next}`,
              )
            : finishFiring(record, schedule.id, run.status, run.error),
        (error) => finishFiring(record, schedule.id, 'failed', toSvcError(error).message),
      );
      track(job);
      return result({ session_id: sessionId, run_id: sent.run_id });
    } catch (error) {
      return failed(error, sessionId);
    }
  };

  const finishFiring = (
    record: ScheduleRun,
    scheduleId: string,
    status: string,
    error: string | null,
    runId?: string,
  ) => {
    try {
      store.finishRun(record.id, { status, error, ...(runId ? { run_id: runId } : {}) });
      if (store.get(scheduleId)) store.update(scheduleId, { last_status: status, last_error: error });
    } catch (e) {
      app().log.warn('schedule run bookkeeping failed', { schedule_run_id: record.id, error: e });
    }
  };

  const track = (job: Promise<void>) => {
    const settled = job.catch(() => {});
    inflight.add(settled);
    void settled.finally(() => inflight.delete(settled));
  };

  const scheduler: Scheduler = {
    store,
    async create(input) {
      const now = app().clock.now();
      const { next, timezone, warnings } = await validate(input, now);
      const schedule = store.insert({
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
      const current = store.require(idOrName);
      const merged: ScheduleInput = {
        name: patch.name ?? current.name,
        prompt: patch.recipe !== undefined ? undefined : (patch.prompt ?? current.prompt ?? undefined),
        recipe: patch.prompt !== undefined ? undefined : (patch.recipe ?? current.recipe ?? undefined),
        recipe_params: patch.recipe_params ?? current.recipe_params,
        cron: patch.at !== undefined ? undefined : (patch.cron ?? current.cron ?? undefined),
        at: patch.cron !== undefined ? undefined : (patch.at ?? current.run_at ?? undefined),
        timezone: patch.timezone ?? current.timezone ?? undefined,
        session: patch.session ?? current.session_mode,
        session_id: patch.session_id ?? current.session_id ?? undefined,
        agent: patch.agent ?? current.agent ?? undefined,
        model: patch.model ?? current.model ?? undefined,
      };
      const timing = patch.cron !== undefined || patch.at !== undefined || patch.timezone !== undefined;
      const now = app().clock.now();
      // A completed one-shot job keeps its past time unless the update gives a new one.
      const checkTime = timing || current.status !== 'completed';
      const { next, timezone, warnings } = checkTime
        ? await validate(merged, now)
        : { next: null, timezone: merged.timezone ?? null, warnings: [] as string[] };
      const schedule = store.update(current.id, {
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
    pause(idOrName) {
      const current = store.require(idOrName);
      if (current.status === 'completed') {
        throw new SvcError(
          'conflict',
          `schedule ${current.id} already completed (a one-shot job that fired); update its time to reuse it`,
        );
      }
      return store.update(current.id, { status: 'paused' });
    },
    async unpause(idOrName) {
      const current = store.require(idOrName);
      if (current.status === 'completed') {
        throw new SvcError(
          'conflict',
          `schedule ${current.id} already completed; update its time to reuse it`,
        );
      }
      const now = app().clock.now();
      let next = current.next_run_at;
      // Missed times while paused are skipped: the next time is from now on.
      if (current.cron)
        [next] = await nextFireTimes(current.cron, { after: now, timezone: current.timezone ?? 'UTC' });
      else if (current.run_at !== null && current.run_at <= now) next = now;
      return store.update(current.id, { status: 'active', next_run_at: next });
    },
    delete(idOrName) {
      const current = store.require(idOrName);
      store.delete(current.id);
      return current;
    },
    async run(idOrName) {
      return fire(store.require(idOrName), 'manual', null);
    },
    async tick(now = app().clock.now(), options = {}) {
      const fired: FireResult[] = [];
      for (const schedule of store.due(now, options.limit ?? 50)) {
        const dueAt = schedule.next_run_at as number;
        let next: number | null = null;
        let status: Schedule['status'] = 'active';
        if (schedule.cron) {
          try {
            // Missed times (the worker was down) fire once, then the schedule goes on from now.
            [next] = await nextFireTimes(schedule.cron, { after: now, timezone: schedule.timezone ?? 'UTC' });
          } catch (error) {
            store.update(schedule.id, { status: 'paused', last_error: toSvcError(error).message });
            continue;
          }
        } else {
          status = 'completed';
        }
        if (!store.claim(schedule.id, dueAt, { next_run_at: next, status })) continue;
        fired.push(await fire(store.get(schedule.id) ?? schedule, schedule.cron ? 'cron' : 'once', dueAt));
      }
      return fired;
    },
    async preview(schedule, count = 5) {
      if (schedule.status !== 'active' && schedule.status !== 'paused') return [];
      if (schedule.cron) {
        return nextFireTimes(schedule.cron, {
          after: Math.max(app().clock.now(), (schedule.next_run_at ?? 0) - 1),
          timezone: schedule.timezone ?? 'UTC',
          count,
        });
      }
      return schedule.next_run_at !== null ? [schedule.next_run_at] : [];
    },
    async settled() {
      while (inflight.size) await Promise.all([...inflight]);
    },
    inFlight: () => inflight.size,
  };
  return scheduler;
}

function sessionFor(app: App, schedule: Schedule): string {
  if (schedule.session_mode === 'reuse' && schedule.session_id && app.sessions.get(schedule.session_id)) {
    return schedule.session_id;
  }
  if (schedule.session_mode === 'reuse' && schedule.session_id) {
    throw new SvcError(
      'not_found',
      `session ${schedule.session_id} of schedule ${schedule.name} no longer exists; update its session_id`,
    );
  }
  return app.agent.createSession({
    title: `schedule: ${schedule.name}`,
    ...(schedule.agent ? { agent: schedule.agent } : {}),
    metadata: { schedule_id: schedule.id },
  }).id;
}
