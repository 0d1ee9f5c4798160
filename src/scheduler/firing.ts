/**
 * Firing a job: record the firing, pick its session, then send its prompt to the agent or run its
 * recipe, and record how the run ended once it does. Runs are never approved silently: a prompt's
 * run follows `services.autopilot.unattended`, a recipe asks through the permission service.
 * @module
 */
import { SvcError, toSvcError } from '../errors';
import type { Schedule, ScheduleRun, ScheduleTrigger } from './schedule-store';
import type { FireResult, SchedulerDeps } from './scheduler-deps';

export interface Firing {
  fire(schedule: Schedule, trigger: ScheduleTrigger, dueAt: number | null): Promise<FireResult>;
  /** Wait for the runs this process started to end (tests, shutdown). */
  settled(): Promise<void>;
  /** Runs this process started that have not ended. */
  inFlight(): number;
}

/** One firing's record, and how it reads as a result or as a failure. */
interface Started {
  now: number;
  record: ScheduleRun;
  result(patch: Partial<FireResult>): FireResult;
  failed(error: unknown, sessionId?: string | null): Promise<FireResult>;
}

export function createFiring(deps: SchedulerDeps): Firing {
  const { store } = deps;
  const inflight = new Set<Promise<void>>();

  const track = (job: Promise<void>) => {
    const settled = job.catch(() => {});
    inflight.add(settled);
    void settled.finally(() => inflight.delete(settled));
  };

  const finishFiring = async (
    record: ScheduleRun,
    scheduleId: string,
    status: string,
    error: string | null,
    runId?: string,
  ) => {
    try {
      await store.finishRun(record.id, { status, error, ...(runId ? { run_id: runId } : {}) });
      if (await store.get(scheduleId))
        await store.update(scheduleId, { last_status: status, last_error: error });
    } catch (e) {
      deps.log.warn('schedule run bookkeeping failed', { schedule_run_id: record.id, error: e });
    }
  };

  const fireRecipe = async (schedule: Schedule, recipe: string, sessionId: string, started: Started) => {
    if (!deps.recipeToolAvailable()) {
      return started.failed(
        new SvcError(
          'unavailable',
          `recipe ${recipe}: run_recipe is not available in this build; schedule a prompt instead`,
        ),
        sessionId,
      );
    }
    const unattended = deps.config().services.autopilot.unattended;
    const { record } = started;
    // The run_recipe tool's own call (recipes are a domain: the scheduler asks it directly).
    // Never approved silently: asks go to the permission service (nobody attached → fail or wait).
    const job = deps
      .recipes()
      .run(recipe, schedule.recipe_params ?? {}, {
        caller: { sessionId, signal: new AbortController().signal },
        approve: async (request) => {
          await deps.permissions.ask(
            { tool: 'bash', ...request },
            { sessionId, ...(unattended ? { unattended } : {}) },
          );
        },
      })
      .then(
        (value) => finishFiring(record, schedule.id, value.status, null, value.run_id),
        (error) =>
          finishFiring(record, schedule.id, 'failed', deps.redactor.string(toSvcError(error).message)),
      );
    track(job);
    return started.result({ session_id: sessionId });
  };

  const firePrompt = async (schedule: Schedule, sessionId: string, started: Started) => {
    const { record } = started;
    try {
      const unattended = deps.config().services.autopilot.unattended;
      const agent = deps.agent();
      const sent = await agent.send({
        sessionId,
        prompt: schedule.prompt ?? '',
        ...(schedule.agent ? { agent: schedule.agent } : {}),
        ...(schedule.model ? { model: schedule.model } : {}),
        origin: 'scheduler',
        ...(unattended ? { unattended } : {}),
      });
      await store.attachRun(record.id, { run_id: sent.run_id, session_id: sessionId });
      const job = agent.wait(sent.run_id).then(
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
      return started.result({ session_id: sessionId, run_id: sent.run_id });
    } catch (error) {
      return started.failed(error, sessionId);
    }
  };

  return {
    async fire(schedule, trigger, dueAt) {
      const started = await beginFiring(deps, schedule, trigger, dueAt);
      let sessionId: string;
      try {
        sessionId = await sessionFor(deps, schedule);
      } catch (error) {
        return started.failed(error);
      }
      await store.update(schedule.id, {
        last_run_at: started.now,
        last_status: 'started',
        last_error: null,
        run_count: schedule.run_count + 1,
        ...(schedule.session_mode === 'reuse' ? { session_id: sessionId } : {}),
      });
      return schedule.recipe
        ? await fireRecipe(schedule, schedule.recipe, sessionId, started)
        : await firePrompt(schedule, sessionId, started);
    },
    async settled() {
      while (inflight.size) await Promise.all([...inflight]);
    },
    inFlight: () => inflight.size,
  };
}

/** Record a firing as started; its result and its failure (recorded on the job too). */
async function beginFiring(
  deps: Pick<SchedulerDeps, 'store' | 'clock' | 'redactor' | 'log'>,
  schedule: Schedule,
  trigger: ScheduleTrigger,
  dueAt: number | null,
): Promise<Started> {
  const { store } = deps;
  const now = deps.clock.now();
  const record = await store.addRun({
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
  const failed = async (error: unknown, sessionId: string | null = null): Promise<FireResult> => {
    const message = deps.redactor.string(toSvcError(error).message);
    await store.finishRun(record.id, { status: 'failed', error: message, session_id: sessionId });
    await store.update(schedule.id, {
      last_run_at: now,
      last_status: 'failed',
      last_error: message,
      run_count: schedule.run_count + 1,
    });
    deps.log.warn('schedule firing failed', { schedule_id: schedule.id, error: message });
    return result({ status: 'failed', error: message, session_id: sessionId });
  };
  return { now, record, result, failed };
}

async function sessionFor(
  deps: Pick<SchedulerDeps, 'sessions' | 'agent'>,
  schedule: Schedule,
): Promise<string> {
  if (
    schedule.session_mode === 'reuse' &&
    schedule.session_id &&
    (await deps.sessions.get(schedule.session_id))
  ) {
    return schedule.session_id;
  }
  if (schedule.session_mode === 'reuse' && schedule.session_id) {
    throw new SvcError(
      'not_found',
      `session ${schedule.session_id} of schedule ${schedule.name} no longer exists; update its session_id`,
    );
  }
  return (
    await deps.agent().createSession({
      title: `schedule: ${schedule.name}`,
      ...(schedule.agent ? { agent: schedule.agent } : {}),
      metadata: { schedule_id: schedule.id },
    })
  ).id;
}
