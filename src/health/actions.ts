/**
 * The actions of health follow-on rules, run under the activation caps (./caps.ts):
 *
 * - `compact`: `agent.requestCompaction(session, {reason: 'health_followon'})`, done before the
 *   run's next step. Synchronous: it runs inside the bus listener, so the request is in place
 *   before the run reaches its next step boundary. Skipped as `auto_compaction_due` when
 *   auto-compaction compacts at the next step anyway, `no_active_run` when there is no run;
 * - `summarize`: `agent.summarize` of the idle session; `session_busy` or `action_failed` when
 *   it could not run.
 * @module
 */
import type { AgentService } from '../agent/types';
import type { Config } from '../config/schema';
import { SvcError, toSvcError } from '../errors';
import type { Logger } from '../log';
import type { ActivationCaps, CapLimits } from './caps';

export type HealthActionName = 'compact' | 'summarize';

interface ActionResult {
  ran: boolean;
  reason?: string;
}

/** What a rule's dispatch did: how many actions ran, and why none did. */
export interface Execution {
  run: number;
  reason?: string;
}

export interface HealthActionDeps {
  config: () => Config;
  agent: Pick<AgentService, 'requestCompaction' | 'summarize'>;
  log: Logger;
}

export interface HealthActions {
  /**
   * Checks the caps, then runs the rule's actions (unless blocked) and counts a dispatch.
   * Synchronous when every action is (compact).
   */
  execute(sessionId: string, actions: HealthActionName[], ratio?: number): Execution | Promise<Execution>;
}

export function createHealthActions(
  deps: HealthActionDeps,
  caps: ActivationCaps,
  limits: () => CapLimits,
): HealthActions {
  const compactNow = (sessionId: string, ratio: number | undefined): ActionResult => {
    const options = deps.config().options;
    // Auto-compaction will compact at the next step anyway: nothing for the follow-on to add.
    if (options.auto_compact && ratio !== undefined && ratio >= options.compaction_threshold) {
      return { ran: false, reason: 'auto_compaction_due' };
    }
    return deps.agent.requestCompaction(sessionId, { reason: 'health_followon' })
      ? { ran: true }
      : { ran: false, reason: 'no_active_run' };
  };

  const summarize = async (sessionId: string): Promise<ActionResult> => {
    try {
      await deps.agent.summarize(sessionId, { reason: 'health_followon' });
      return { ran: true };
    } catch (error) {
      const e = toSvcError(error);
      deps.log.info('health follow-on summarize not run', { session_id: sessionId, error: e.message });
      return { ran: false, reason: e.code === 'conflict' ? 'session_busy' : 'action_failed' };
    }
  };

  return {
    execute(sessionId, actions, ratio) {
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
    },
  };
}
