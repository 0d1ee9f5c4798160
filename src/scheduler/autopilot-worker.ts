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
import type { AgentService } from '../agent/types';
import type { Config } from '../config/schema';
import { toSvcError } from '../errors';
import type { Logger } from '../log';
import type { Redactor } from '../redact';
import type { RunLedger } from '../runs/run-ledger';
import type { Clock } from '../util/ids';
import type { Scheduler } from './scheduler';

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

/** A background worker (the App's `BackgroundWorker`): runs until the signal aborts. */
export interface AutopilotWorker {
  readonly name: string;
  /** Runs until `signal` aborts; the promise settles once the worker has stopped. */
  run(signal: AbortSignal): Promise<void>;
  readonly state: AutopilotState;
  /** One pass: due schedules, then queued prompts. The loop calls it; tests call it with a fixed clock. */
  tick(): Promise<{ fired: number; drained: number }>;
}

export interface AutopilotDeps {
  runs: Pick<RunLedger, 'get' | 'list' | 'events'>;
  /** Built after the worker: read on each tick. */
  agent: () => Pick<AgentService, 'state' | 'drain'>;
  scheduler: Pick<Scheduler, 'tick'>;
  config: () => Config;
  clock: Clock;
  log: Logger;
  redactor: Redactor;
}

export function createAutopilotWorker(deps: AutopilotDeps): AutopilotWorker {
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
  const failures = failureLog(deps);

  const pruneStarted = async () => {
    for (const runId of started) {
      const run = await deps.runs.get(runId);
      if (run && (run.status === 'running' || run.status === 'queued')) continue;
      started.delete(runId);
      // A run that finished with a refused change is an outcome to look at, not a success.
      const refused = run?.status === 'completed' ? await refusedCall(deps.runs, runId) : null;
      if (refused) {
        state.errors++;
        state.last_error = `run ${runId} refused: ${refused.summary}; next: ${refused.next}`;
      }
    }
    state.active_runs = [...started];
  };

  const drainQueues = async (room: number): Promise<number> => {
    if (!deps.config().services.autopilot.drain_queues || room <= 0) return 0;
    const agent = deps.agent();
    const sessions = [
      ...new Set((await deps.runs.list({ status: ['queued'], limit: 500 })).map((r) => r.session_id)),
    ];
    let drained = 0;
    for (const sessionId of sessions) {
      if (drained >= room) break;
      const status = await agent.state(sessionId);
      if (status.state !== 'idle' || status.busy_elsewhere) continue;
      const last = (await deps.runs.list({ session_id: sessionId, limit: 20 })).find(
        (r) => r.status !== 'queued' && r.status !== 'running',
      );
      // After a failure or a cancel the queue waits for a person (the agent's rule for its queue).
      if (last && last.status !== 'completed') continue;
      const runId = await agent.drain(sessionId);
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
      const max = deps.config().services.autopilot.max_concurrent_runs;
      let fired = 0;
      let drained = 0;
      try {
        await pruneStarted();
        const room = Math.max(0, max - started.size);
        const results = room > 0 ? await deps.scheduler.tick(deps.clock.now(), { limit: room }) : [];
        for (const result of results) {
          if (result.run_id) started.add(result.run_id);
          if (result.status === 'failed') {
            state.errors++;
            state.last_error = result.error;
          }
        }
        fired = results.length;
        drained = await drainQueues(Math.max(0, max - started.size));
        failures.succeeded();
      } catch (error) {
        state.errors++;
        state.last_error = deps.redactor.string(toSvcError(error).message);
        failures.failed(error);
      }
      state.ticks++;
      state.last_tick_at = deps.clock.now();
      state.schedules_fired += fired;
      state.prompts_drained += drained;
      state.active_runs = [...started];
      return { fired, drained };
    },
    async run(signal) {
      const log = deps.log.child({ component: 'autopilot' });
      state.running = true;
      state.started_at = deps.clock.now();
      state.stopped_at = null;
      log.info('autopilot worker started', { tick_seconds: deps.config().services.autopilot.tick_seconds });
      try {
        while (!signal.aborted) {
          await worker.tick();
          try {
            await sleep(deps.config().services.autopilot.tick_seconds * 1000, undefined, { signal });
          } catch {
            break;
          }
        }
      } finally {
        state.running = false;
        state.stopped_at = deps.clock.now();
        log.info('autopilot worker stopped', { ticks: state.ticks, fired: state.schedules_fired });
      }
    },
  };
  return worker;
}

/** A minute: while ticks keep failing, one line a minute at most. */
const FAILURE_LOG_MS = 60_000;

/**
 * The log of failed ticks: the first failure at once, then (the same cause, a database away, fails
 * every tick) at most one line a minute with the count since the last, and one when a tick
 * succeeds again.
 */
function failureLog(deps: Pick<AutopilotDeps, 'clock' | 'log'>) {
  let since: number | undefined;
  let loggedAt = 0;
  let total = 0;
  let unlogged = 0;
  return {
    failed(error: unknown) {
      const now = deps.clock.now();
      total++;
      if (since === undefined) {
        since = loggedAt = now;
        deps.log.error('autopilot tick failed', { error });
        return;
      }
      unlogged++;
      if (now - loggedAt < FAILURE_LOG_MS) return;
      deps.log.error('autopilot ticks still failing', {
        error,
        failed_ticks: unlogged,
        failed_ticks_total: total,
        failing_for_ms: now - since,
      });
      loggedAt = now;
      unlogged = 0;
    },
    succeeded() {
      if (since === undefined) return;
      deps.log.info('autopilot tick succeeded again', {
        failed_ticks: total,
        failing_for_ms: deps.clock.now() - since,
      });
      since = undefined;
      total = unlogged = 0;
    },
  };
}
