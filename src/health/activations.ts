/**
 * Reporting a health follow-on activation: the declarative `health.token_pressure` signal event
 * and its `token_pressure` recommendation (for the operator cognition ledger, unless one is
 * already pending for the session: the recorder normally has recorded it), then the stored
 * activation and, when all five gates of the spec hold, the `health_followon.activation` event on
 * the session bus (so on the SSE stream). There is no MCP mirror.
 * @module
 */
import type { Config } from '../config/schema';
import type { EventBus } from '../events/bus';
import type { SessionEventPayloads } from '../events/types';
import type { Logger } from '../log';
import type { RecommendationLedger } from '../readouts/cognition/recommendation-store';
import type { Clock, Ids } from '../util/ids';
import type { Execution, HealthActionName } from './actions';
import type { ActivationStore, HealthActivation } from './activation-store';

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

export interface ActivationReportDeps {
  config: () => Config;
  bus: Pick<EventBus, 'publish'>;
  clock: Clock;
  ids: Ids;
  log: Logger;
  recommendations: Pick<RecommendationLedger, 'serial'>;
}

export interface ActivationReport {
  /** The declarative signal event, then the recommendation; the activation follows. */
  announce(sessionId: string, usage: SessionEventPayloads['context.usage']): void;
  /** Stores the activation and publishes its event when every gate holds. */
  complete(input: {
    sessionId: string;
    runId: string | null;
    ratio: number;
    rule: HealthRuleId;
    actions: HealthActionName[];
    execution: Execution;
  }): Promise<void>;
}

const HOUR_SECONDS = 3_600;

export function createActivationReport(
  deps: ActivationReportDeps,
  store: ActivationStore,
  gates: () => ActivationGates,
): ActivationReport {
  /**
   * One step in the ledger's order: the recorder's step for the same signal (queued when the bus
   * delivered it, before this) is applied first, so a recommendation is recorded once.
   */
  const recordRecommendation = (sessionId: string, usage: SessionEventPayloads['context.usage']) =>
    deps.recommendations
      .serial(async (ledger) => {
        const pending = await ledger.pending({
          session_id: sessionId,
          zone: 'token_pressure',
          kind: 'compact_session',
        });
        if (pending.length > 0) return;
        await ledger.record({
          zone: 'token_pressure',
          kind: 'compact_session',
          session_id: sessionId,
          run_id: usage.run_id,
          payload: { ratio: usage.ratio },
          window_seconds: HOUR_SECONDS,
          evidence: { ratio: usage.ratio, source: 'health_followon' },
        });
      })
      .catch((error) => {
        deps.log.warn('health follow-on recommendation not recorded', { session_id: sessionId, error });
      });

  return {
    announce(sessionId, usage) {
      const o = deps.config().options.health_followons;
      if (o.emit_declarative_events) {
        deps.bus.publish(sessionId, 'health.token_pressure', {
          session_id: sessionId,
          run_id: usage.run_id,
          ratio: usage.ratio,
          threshold: o.token_pressure_threshold,
          input_tokens: usage.input_tokens,
          context_window: usage.context_window,
        } satisfies SessionEventPayloads['health.token_pressure']);
      }
      // Queued in the ledger's order, not awaited: the activation is not held up by it (readers of
      // the ledger wait for it).
      void recordRecommendation(sessionId, usage);
    },
    async complete(input) {
      const { sessionId, execution } = input;
      const outcome = execution.run > 0 ? 'dispatched' : 'skipped';
      const g = gates();
      const activation: HealthActivation = {
        id: deps.ids.next('hfa'),
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
        created_at: deps.clock.now(),
      };
      try {
        await store.insert(activation);
      } catch (error) {
        deps.log.warn('health follow-on activation not stored', { session_id: sessionId, error });
      }
      deps.log.info('health follow-on activation', {
        session_id: sessionId,
        rule: input.rule,
        outcome,
        reason: execution.reason ?? null,
      });
      if (!g.activation_event_enabled) return;
      const payload: SessionEventPayloads['health_followon.activation'] = {
        type: 'health_followon.activation',
        session_id: sessionId,
        signal: 'token_pressure',
        activation_rule_id: input.rule,
        outcome,
        actions_planned: input.actions.length,
        activation_actions_run: execution.run,
        ...(execution.reason ? { reason: execution.reason } : {}),
      };
      deps.bus.publish(sessionId, 'health_followon.activation', payload);
    },
  };
}
