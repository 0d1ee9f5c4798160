/**
 * The autopilot worker (`app.autopilotWorker`; `svc service start autopilot` runs it once the
 * HTTP server is ready): every `services.autopilot.tick_seconds` it fires the due schedules and
 * starts queued prompts of idle sessions, with nobody attached. Permissions follow the config
 * (`services.autopilot.unattended`, else `permissions.unattended`): a prompt that needs an
 * approval fails or waits, it is never approved silently. A session whose last run failed or was
 * cancelled keeps its queue until an operator sends or drains (the agent's own rule), and at most
 * `max_concurrent_runs` runs the worker started are active at once.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { refusedCall } from '../agent/refused';
import type { App, BackgroundWorker } from '../app';
import { toSvcError } from '../errors';

export interface AutopilotState {
  running: boolean;
  started_at: number | null;
  stopped_at: number | null;
  ticks: number;
  last_tick_at: number | null;
  schedules_fired: number;
  prompts_drained: number;
  errors: number;
  last_error: string | null;
  /** Runs the worker started that are still active. */
  active_runs: string[];
}

export interface AutopilotWorker extends BackgroundWorker {
  readonly state: AutopilotState;
  /** One pass: due schedules, then queued prompts. The loop calls it; tests call it with a fixed clock. */
  tick(): Promise<{ fired: number; drained: number }>;
}

export function createAutopilotWorker(appRef: () => App): AutopilotWorker {
  const state: AutopilotState = {
    running: false,
    started_at: null,
    stopped_at: null,
    ticks: 0,
    last_tick_at: null,
    schedules_fired: 0,
    prompts_drained: 0,
    errors: 0,
    last_error: null,
    active_runs: [],
  };
  const started = new Set<string>();

  const pruneStarted = (app: App) => {
    for (const runId of started) {
      const run = app.runs.get(runId);
      if (run && (run.status === 'running' || run.status === 'queued')) continue;
      started.delete(runId);
      // A run that finished with a refused change is an outcome to look at, not a success.
      const refused = run?.status === 'completed' ? refusedCall(app.runs, runId) : null;
      if (refused) {
        state.errors++;
        state.last_error = `run ${runId} refused: ${refused.summary}; next: ${refused.next}`;
      }
    }
    state.active_runs = [...started];
  };

  const drainQueues = (app: App, room: number): number => {
    if (!app.config.services.autopilot.drain_queues || room <= 0) return 0;
    const sessions = [...new Set(app.runs.list({ status: ['queued'], limit: 500 }).map((r) => r.session_id))];
    let drained = 0;
    for (const sessionId of sessions) {
      if (drained >= room) break;
      const status = app.agent.state(sessionId);
      if (status.state !== 'idle' || status.busy_elsewhere) continue;
      const last = app.runs
        .list({ session_id: sessionId, limit: 20 })
        .find((r) => r.status !== 'queued' && r.status !== 'running');
      // After a failure or a cancel the queue waits for a person (the agent's rule for its queue).
      if (last && last.status !== 'completed') continue;
      const runId = app.agent.drain(sessionId);
      if (runId) {
        started.add(runId);
        drained++;
      }
    }
    return drained;
  };

  const worker: AutopilotWorker = {
    name: 'autopilot',
    state,
    async tick() {
      const app = appRef();
      pruneStarted(app);
      const max = app.config.services.autopilot.max_concurrent_runs;
      let fired = 0;
      let drained = 0;
      try {
        const room = Math.max(0, max - started.size);
        const results = room > 0 ? await app.scheduler.tick(app.clock.now(), { limit: room }) : [];
        for (const result of results) {
          if (result.run_id) started.add(result.run_id);
          if (result.status === 'failed') {
            state.errors++;
            state.last_error = result.error;
          }
        }
        fired = results.length;
        drained = drainQueues(app, Math.max(0, max - started.size));
      } catch (error) {
        state.errors++;
        state.last_error = app.redactor.string(toSvcError(error).message);
        app.log.error('autopilot tick failed', { error });
      }
      state.ticks++;
      state.last_tick_at = app.clock.now();
      state.schedules_fired += fired;
      state.prompts_drained += drained;
      state.active_runs = [...started];
      return { fired, drained };
    },
    async run(signal) {
      const app = appRef();
      const log = app.log.child({ component: 'autopilot' });
      state.running = true;
      state.started_at = app.clock.now();
      state.stopped_at = null;
      log.info('autopilot worker started', { tick_seconds: app.config.services.autopilot.tick_seconds });
      try {
        while (!signal.aborted) {
          await worker.tick();
          try {
            await sleep(appRef().config.services.autopilot.tick_seconds * 1000, undefined, { signal });
          } catch {
            break;
          }
        }
      } finally {
        state.running = false;
        state.stopped_at = app.clock.now();
        log.info('autopilot worker stopped', { ticks: state.ticks, fired: state.schedules_fired });
      }
    },
  };
  return worker;
}
