/**
 * Health follow-ons: runtime signals activate rules that plan actions and run them, under caps.
 *
 * Signal `health.token_pressure`: a `context.usage` event (published after every model step)
 * whose ratio reaches `options.health_followons.token_pressure_threshold`. It fires once, then
 * re-arms when a compaction finishes in the session or the ratio drops below the threshold.
 *
 * | rule                        | when                                                        | action    |
 * |-----------------------------|-------------------------------------------------------------|-----------|
 * | `token_pressure.compact`    | the signal fires (during a run)                              | compact: `app.agent.requestCompaction(session, {reason: 'health_followon'})`, done before the run's next step |
 * | `token_pressure.summarize`  | a run ends still under pressure, with `summarize_after_run`  | summarize: `app.agent.summarize` of the idle session |
 *
 * Every activation is checked against the caps (./caps.ts); a blocked one is skipped with the
 * cap's name as reason. One whose action could not run is skipped too: `auto_compaction_due`
 * (auto-compaction compacts at the next step anyway), `no_active_run`, `session_busy`,
 * `action_failed`. Each is stored (`health_activations`) and, when all five gates of the spec
 * hold, published as `health_followon.activation` on the session bus (so on the SSE stream):
 * `options.health_followons.enabled`, `emit_declarative_events`, the activation itself,
 * `activation_caps.emit_activation_telemetry_sse`, and `app.runtime.sessionPublisher` (the HTTP
 * service mounted the session route). There is no MCP mirror.
 *
 * The signal also records a `token_pressure` recommendation for the operator cognition ledger,
 * unless one is already pending for the session (the recorder normally has recorded it).
 *
 * The compact action runs inside the bus listener (the request must be in place before the run's
 * next step); storing and publishing run off the publisher's path (a microtask after the step's
 * transaction), so the activation event never overtakes the `context.usage` that caused it.
 * @module
 */
import type { App } from '../app';
import { SvcError, toSvcError } from '../errors';
import type { SessionEvent } from '../events/bus';
import type { SessionEventPayloads } from '../events/types';
import { type ActivationStore, createActivationStore, type HealthActivation } from './activation-store';
import { type ActivationCaps, type CapLimits, type CapUsage, createActivationCaps } from './caps';

export type HealthActionName = 'compact' | 'summarize';
export type HealthRuleId = 'token_pressure.compact' | 'token_pressure.summarize';

export interface ActivationGates {
  enabled: boolean;
  emit_declarative_events: boolean;
  emit_activation_telemetry_sse: boolean;
  /** The HTTP service wired the session publisher (mounted the SSE session route). */
  session_publisher_wired: boolean;
  /** All four config/runtime gates hold: the next activation will be published. */
  activation_event_enabled: boolean;
}

export interface HealthRuleInfo {
  id: HealthRuleId;
  signal: 'token_pressure';
  actions: HealthActionName[];
  enabled: boolean;
  description: string;
}

export interface HealthFollowons {
  /** Stored activations (any process), newest first. */
  activations(filter?: { sessionId?: string; since?: number; limit?: number }): HealthActivation[];
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

type ActivationPayload = SessionEventPayloads['health_followon.activation'];

interface ActionResult {
  ran: boolean;
  reason?: string;
}

interface Execution {
  run: number;
  reason?: string;
}

interface SessionHealth {
  armed: boolean;
  pressured: boolean;
  ratio: number;
  runId: string | null;
  at: number;
}

const CLOSE_TIMEOUT_MS = 5_000;
const HOUR_SECONDS = 3_600;

export function startHealthFollowons(app: App): HealthFollowons {
  const store: ActivationStore = createActivationStore(() => app.db);
  const caps: ActivationCaps = createActivationCaps(app.clock);
  const sessions = new Map<string, SessionHealth>();
  const inFlight = new Set<Promise<void>>();
  let closed = false;

  const options = () => app.config.options.health_followons;
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
      session_publisher_wired: app.runtime.sessionPublisher,
    };
    return { ...g, activation_event_enabled: Object.values(g).every(Boolean) };
  };
  const stateOf = (sessionId: string): SessionHealth => {
    let state = sessions.get(sessionId);
    if (!state) {
      state = { armed: true, pressured: false, ratio: 0, runId: null, at: 0 };
      sessions.set(sessionId, state);
    }
    return state;
  };

  /** Off the publisher's path; tracked so close() and tests can wait for it. */
  const schedule = (work: () => Promise<void> | void) => {
    if (closed) return;
    const promise: Promise<void> = Promise.resolve()
      .then(() => (closed ? undefined : work()))
      .catch((error: unknown) => app.log.warn('health follow-on failed', { error }))
      .finally(() => inFlight.delete(promise));
    inFlight.add(promise);
  };

  /** The declarative signal event, then the recommendation; the activation follows. */
  const announce = (sessionId: string, usage: SessionEventPayloads['context.usage']) => {
    const o = options();
    if (o.emit_declarative_events) {
      app.bus.publish(sessionId, 'health.token_pressure', {
        session_id: sessionId,
        run_id: usage.run_id,
        ratio: usage.ratio,
        threshold: o.token_pressure_threshold,
        input_tokens: usage.input_tokens,
        context_window: usage.context_window,
      } satisfies SessionEventPayloads['health.token_pressure']);
    }
    recordRecommendation(sessionId, usage);
  };

  const recordRecommendation = (sessionId: string, usage: SessionEventPayloads['context.usage']) => {
    try {
      const pending = app.recommendations.pending({
        session_id: sessionId,
        zone: 'token_pressure',
        kind: 'compact_session',
      });
      if (pending.length > 0) return;
      app.recommendations.record({
        zone: 'token_pressure',
        kind: 'compact_session',
        session_id: sessionId,
        run_id: usage.run_id,
        payload: { ratio: usage.ratio },
        window_seconds: HOUR_SECONDS,
        evidence: { ratio: usage.ratio, source: 'health_followon' },
      });
    } catch (error) {
      app.log.warn('health follow-on recommendation not recorded', { session_id: sessionId, error });
    }
  };

  /**
   * compact is synchronous: it runs inside the bus listener, so the request is in place before
   * the run reaches its next step boundary.
   */
  const compactNow = (sessionId: string, ratio: number | undefined): ActionResult => {
    const options = app.config.options;
    // Auto-compaction will compact at the next step anyway: nothing for the follow-on to add.
    if (options.auto_compact && ratio !== undefined && ratio >= options.compaction_threshold) {
      return { ran: false, reason: 'auto_compaction_due' };
    }
    return app.agent.requestCompaction(sessionId, { reason: 'health_followon' })
      ? { ran: true }
      : { ran: false, reason: 'no_active_run' };
  };

  const summarize = async (sessionId: string): Promise<ActionResult> => {
    try {
      await app.agent.summarize(sessionId, { reason: 'health_followon' });
      return { ran: true };
    } catch (error) {
      const e = toSvcError(error);
      app.log.info('health follow-on summarize not run', { session_id: sessionId, error: e.message });
      return { ran: false, reason: e.code === 'conflict' ? 'session_busy' : 'action_failed' };
    }
  };

  /** Checks the caps, then runs the rule's actions (unless blocked); counts a dispatch. */
  function execute(
    sessionId: string,
    actions: HealthActionName[],
    ratio?: number,
  ): Execution | Promise<Execution> {
    const blocked = caps.blocking(sessionId, limits());
    if (blocked) return { run: 0, reason: blocked };
    const results: (ActionResult | Promise<ActionResult>)[] = actions.map((action) => {
      switch (action) {
        case 'compact':
          return compactNow(sessionId, ratio);
        case 'summarize':
          return summarize(sessionId);
        default: {
          const never: never = action;
          throw new SvcError('internal', `unknown health action ${String(never)}`);
        }
      }
    });
    const tally = (settled: ActionResult[]): Execution => {
      const run = settled.filter((r) => r.ran).length;
      if (run > 0) caps.record(sessionId);
      return { run, reason: run > 0 ? undefined : settled.find((r) => r.reason)?.reason };
    };
    return results.some((r) => r instanceof Promise)
      ? Promise.all(results).then(tally)
      : tally(results as ActionResult[]);
  }

  /** Stores the activation and publishes its event when every gate holds. */
  const complete = (input: {
    sessionId: string;
    runId: string | null;
    ratio: number;
    rule: HealthRuleId;
    actions: HealthActionName[];
    execution: Execution;
  }) => {
    const { sessionId, execution } = input;
    const outcome = execution.run > 0 ? 'dispatched' : 'skipped';
    const g = gates();
    const activation: HealthActivation = {
      id: app.ids.next('hfa'),
      session_id: sessionId,
      run_id: input.runId,
      signal: 'token_pressure',
      rule_id: input.rule,
      outcome,
      actions: input.actions,
      actions_planned: input.actions.length,
      actions_run: execution.run,
      reason: execution.reason ?? null,
      ratio: input.ratio,
      event_published: g.activation_event_enabled,
      created_at: app.clock.now(),
    };
    try {
      store.insert(activation);
    } catch (error) {
      app.log.warn('health follow-on activation not stored', { session_id: sessionId, error });
    }
    app.log.info('health follow-on activation', {
      session_id: sessionId,
      rule: input.rule,
      outcome,
      reason: execution.reason ?? null,
    });
    if (!g.activation_event_enabled) return;
    const payload: ActivationPayload = {
      type: 'health_followon.activation',
      session_id: sessionId,
      signal: 'token_pressure',
      activation_rule_id: input.rule,
      outcome,
      actions_planned: input.actions.length,
      activation_actions_run: execution.run,
      ...(execution.reason ? { reason: execution.reason } : {}),
    };
    app.bus.publish(sessionId, 'health_followon.activation', payload);
  };

  const onEvent = (event: SessionEvent) => {
    if (closed) return;
    const sessionId = event.session_id;
    switch (event.type) {
      case 'context.usage': {
        const o = options();
        if (!o.enabled) return;
        const usage = event.payload as SessionEventPayloads['context.usage'];
        if (typeof usage.ratio !== 'number' || usage.context_window <= 0) return;
        const state = stateOf(sessionId);
        state.ratio = usage.ratio;
        state.runId = usage.run_id;
        state.at = event.created_at;
        if (usage.ratio < o.token_pressure_threshold) {
          state.armed = true;
          state.pressured = false;
          return;
        }
        state.pressured = true;
        if (!state.armed) return;
        state.armed = false;
        const actions: HealthActionName[] = ['compact'];
        const execution = execute(sessionId, actions, usage.ratio) as Execution;
        schedule(() => {
          announce(sessionId, usage);
          complete({
            sessionId,
            runId: usage.run_id,
            ratio: usage.ratio,
            rule: 'token_pressure.compact',
            actions,
            execution,
          });
        });
        return;
      }
      case 'compaction.finished': {
        const state = sessions.get(sessionId);
        if (state) {
          state.armed = true;
          state.pressured = false;
        }
        return;
      }
      case 'run.finished': {
        const o = options();
        const state = sessions.get(sessionId);
        if (!o.enabled || !o.summarize_after_run || !state?.pressured) return;
        const runId = (event.payload as { run_id?: string }).run_id ?? state.runId;
        // Once per pressured stretch: the next activation needs a compaction or a drop first.
        state.pressured = false;
        const ratio = state.ratio;
        schedule(async () => {
          const actions: HealthActionName[] = ['summarize'];
          const execution = await execute(sessionId, actions);
          complete({
            sessionId,
            runId: runId ?? null,
            ratio,
            rule: 'token_pressure.summarize',
            actions,
            execution,
          });
        });
        return;
      }
      case 'session.deleted':
        sessions.delete(sessionId);
        return;
      default:
        return;
    }
  };
  const unsubscribe = app.bus.subscribe('*', onEvent);

  return {
    activations: (filter) => store.list(filter),
    caps: () => caps.usage(limits()),
    gates,
    rules() {
      const o = options();
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
    },
    pressured() {
      return [...sessions.entries()]
        .filter(([, s]) => s.pressured)
        .map(([session_id, s]) => ({ session_id, run_id: s.runId, ratio: s.ratio, at: s.at }))
        .sort((a, b) => a.session_id.localeCompare(b.session_id));
    },
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
