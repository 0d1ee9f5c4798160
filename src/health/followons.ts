/**
 * Health follow-ons: runtime signals activate rules that plan actions and run them, under caps.
 *
 * Signal `health.token_pressure`: a `context.usage` event (published after every model step)
 * whose ratio reaches `options.health_followons.token_pressure_threshold`. It fires once, then
 * re-arms when a compaction finishes in the session or the ratio drops below the threshold.
 *
 * | rule                        | when                                                        | action    |
 * |-----------------------------|-------------------------------------------------------------|-----------|
 * | `token_pressure.compact`    | the signal fires (during a run)                              | compact: `agent.requestCompaction(session, {reason: 'health_followon'})`, done before the run's next step |
 * | `token_pressure.summarize`  | a run ends still under pressure, with `summarize_after_run`  | summarize: `agent.summarize` of the idle session |
 *
 * Every activation is checked against the caps (./caps.ts); a blocked one is skipped with the
 * cap's name as reason. One whose action could not run is skipped too: `auto_compaction_due`
 * (auto-compaction compacts at the next step anyway), `no_active_run`, `session_busy`,
 * `action_failed`. Each is stored (`health_activations`) and, when all five gates of the spec
 * hold, published as `health_followon.activation` on the session bus (so on the SSE stream):
 * `options.health_followons.enabled`, `emit_declarative_events`, the activation itself,
 * `activation_caps.emit_activation_telemetry_sse`, and `sessionPublisher()` (the HTTP service
 * mounted the session route). There is no MCP mirror.
 *
 * The signal also records a `token_pressure` recommendation for the operator cognition ledger,
 * unless one is already pending for the session (the recorder normally has recorded it).
 *
 * The compact action runs inside the bus listener (the request must be in place before the run's
 * next step); storing and publishing run off the publisher's path (a microtask after the step's
 * transaction), so the activation event never overtakes the `context.usage` that caused it.
 * @module
 */
import type { AgentService } from '../agent/types';
import type { Config } from '../config/schema';
import type { EventBus, SessionEvent } from '../events/bus';
import { ownContext } from '../events/own-context';
import type { SessionEventPayloads } from '../events/types';
import type { Logger } from '../log';
import type { RecommendationLedger } from '../readouts/cognition/recommendation-store';
import type { Clock, Ids } from '../util/ids';
import { createHealthActions, type Execution, type HealthActionName } from './actions';
import type { ActivationStore, HealthActivation } from './activation-store';
import { type ActivationGates, createActivationReport, type HealthRuleId } from './activations';
import { type CapLimits, type CapUsage, createActivationCaps } from './caps';
import { createPressureTracker } from './pressure';

export type { HealthActionName } from './actions';
export type { ActivationGates, HealthRuleId } from './activations';

export interface HealthRuleInfo {
  id: HealthRuleId;
  signal: 'token_pressure';
  actions: HealthActionName[];
  enabled: boolean;
  description: string;
}

export interface HealthFollowons {
  /** Stored activations (any process), newest first. */
  activations(filter?: { sessionId?: string; since?: number; limit?: number }): Promise<HealthActivation[]>;
  /** Cap limits and this process's use of them. */
  caps(): CapUsage;
  gates(): ActivationGates;
  rules(): HealthRuleInfo[];
  /** Sessions whose last context usage is at or over the threshold (since the last compaction). */
  pressured(): { session_id: string; run_id: string | null; ratio: number; at: number }[];
  /** Resolves when every activation in progress has finished. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

export interface HealthFollowonDeps {
  /** The activations' table (SQLite: createActivationStore, PostgreSQL: its pg- twin). */
  activations: ActivationStore;
  bus: Pick<EventBus, 'publish' | 'subscribe'>;
  clock: Clock;
  ids: Ids;
  log: Logger;
  config: () => Config;
  /** The actions: compaction requests and summaries. */
  agent: Pick<AgentService, 'requestCompaction' | 'summarize'>;
  /** The operator cognition ledger (the signal's `token_pressure` recommendation). */
  recommendations: Pick<RecommendationLedger, 'serial'>;
  /** Whether the HTTP service mounted the SSE session route (publishes session events to clients). */
  sessionPublisher: () => boolean;
}

const CLOSE_TIMEOUT_MS = 5_000;

/** Subscribes to the session bus at once; `close()` stops it and waits for work in progress. */
export function createHealthFollowons(deps: HealthFollowonDeps): HealthFollowons {
  const store = deps.activations;
  const caps = createActivationCaps(deps.clock);
  const pressure = createPressureTracker();
  const inFlight = new Set<Promise<void>>();
  let closed = false;

  const options = () => deps.config().options.health_followons;
  const limits = (): CapLimits => ({
    process_hour_cap: options().activation_caps.process_hour_cap,
    session_hour_cap: options().activation_caps.session_hour_cap,
  });
  const gates = (): ActivationGates => {
    const o = options();
    const g = {
      enabled: o.enabled,
      emit_declarative_events: o.emit_declarative_events,
      emit_activation_telemetry_sse: o.activation_caps.emit_activation_telemetry_sse,
      session_publisher_wired: deps.sessionPublisher(),
    };
    return { ...g, activation_event_enabled: Object.values(g).every(Boolean) };
  };
  const actions = createHealthActions(deps, caps, limits);
  const report = createActivationReport(deps, store, gates);

  /**
   * Off the publisher's path and out of its transaction: the work (the activation's rows, a
   * summary) runs in the follow-ons' own async context (../events/own-context.ts), so it is never
   * committed or rolled back with whoever published the event. Tracked so close() and tests can
   * wait for it.
   */
  const own = ownContext('svc.health-followons');
  const schedule = (work: () => Promise<void> | void) => {
    if (closed) return;
    const promise: Promise<void> = own.run(() =>
      Promise.resolve()
        .then(() => (closed ? undefined : work()))
        .catch((error: unknown) => deps.log.warn('health follow-on failed', { error }))
        .finally(() => inFlight.delete(promise)),
    );
    inFlight.add(promise);
  };

  /** The signal: compact at once (before the run's next step), report off the publisher's path. */
  const onUsage = (event: SessionEvent) => {
    const o = options();
    if (!o.enabled) return;
    const sessionId = event.session_id;
    const usage = event.payload as SessionEventPayloads['context.usage'];
    if (typeof usage.ratio !== 'number' || usage.context_window <= 0) return;
    const fired = pressure.usage(
      sessionId,
      { ratio: usage.ratio, run_id: usage.run_id, at: event.created_at },
      o.token_pressure_threshold,
    );
    if (!fired) return;
    const planned: HealthActionName[] = ['compact'];
    // compact is synchronous: the request is in place before the run's next step.
    const execution = actions.execute(sessionId, planned, usage.ratio) as Execution;
    schedule(async () => {
      report.announce(sessionId, usage);
      await report.complete({
        sessionId,
        runId: usage.run_id,
        ratio: usage.ratio,
        rule: 'token_pressure.compact',
        actions: planned,
        execution,
      });
    });
  };

  /** A run ended still under pressure: summarize the idle session (once per pressured stretch). */
  const onRunFinished = (event: SessionEvent) => {
    const o = options();
    if (!o.enabled || !o.summarize_after_run) return;
    const sessionId = event.session_id;
    const ended = pressure.runEnded(sessionId);
    if (!ended) return;
    const runId = (event.payload as { run_id?: string }).run_id ?? ended.runId;
    schedule(async () => {
      const planned: HealthActionName[] = ['summarize'];
      const execution = await actions.execute(sessionId, planned);
      await report.complete({
        sessionId,
        runId: runId ?? null,
        ratio: ended.ratio,
        rule: 'token_pressure.summarize',
        actions: planned,
        execution,
      });
    });
  };

  const onEvent = (event: SessionEvent) => {
    if (closed) return;
    switch (event.type) {
      case 'context.usage':
        return onUsage(event);
      case 'compaction.finished':
        return pressure.compacted(event.session_id);
      case 'run.finished':
        return onRunFinished(event);
      case 'session.deleted':
        return pressure.forget(event.session_id);
      default:
        return;
    }
  };
  const unsubscribe = deps.bus.subscribe('*', onEvent);

  return {
    activations: async (filter) => await store.list(filter),
    caps: () => caps.usage(limits()),
    gates,
    rules: () => rulesOf(options()),
    pressured: () => pressure.pressured(),
    async idle() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
    async close() {
      if (closed) return;
      closed = true;
      unsubscribe();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...inFlight]),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, CLOSE_TIMEOUT_MS);
          timer.unref();
        }),
      ]);
      clearTimeout(timer);
    },
  };
}

function rulesOf(o: Config['options']['health_followons']): HealthRuleInfo[] {
  return [
    {
      id: 'token_pressure.compact',
      signal: 'token_pressure',
      actions: ['compact'],
      enabled: o.enabled,
      description:
        'Context usage reached the threshold during a run: compact the session before the next step.',
    },
    {
      id: 'token_pressure.summarize',
      signal: 'token_pressure',
      actions: ['summarize'],
      enabled: o.enabled && o.summarize_after_run,
      description:
        'A run ended still under token pressure (no step boundary was left to compact at): summarize the idle session.',
    },
  ];
}
