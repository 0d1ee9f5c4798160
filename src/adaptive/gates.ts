/**
 * What a genome needs of the runtime before it applies, and the gate it opens once applied:
 * the tools it requires must survive the session's funnel, its reviewer agent must exist, and a
 * `plan_gate` genome moves the session into the staged workflow's planning phase.
 * @module
 */
import { agentKind } from '../agent/agent-kinds';
import { workflowPhase } from '../agent/views';
import { SvcError } from '../errors';
import { type AdaptiveContext, describe } from './context';
import { type Genome, requiredTools } from './genome';
import type { AdaptiveRow } from './store';

export interface GenomeGates {
  /** Why the session's policy forbids a genome (a tool it needs is withheld), if it does. */
  blockedReason(root: string, genome: Genome): Promise<string | undefined>;
  /** Throws when this runtime cannot run the genome (checked before every apply). */
  validate(genome: Genome): void;
  /** plan_gate: enter the staged workflow's planning phase once per genome revision. */
  applyPlanGate(root: string, row: AdaptiveRow): Promise<void>;
}

export function createGenomeGates(ctx: AdaptiveContext): GenomeGates {
  const { deps } = ctx;
  return {
    async blockedReason(root, genome) {
      const needed = requiredTools(genome);
      if (!needed.length) return undefined;
      const entries = await deps.toolFunnel(root);
      for (const name of needed) {
        const entry = entries.find((e) => e.name === name);
        if (!entry?.registered) return `${name} is not registered (${entry?.reason ?? 'unknown tool'})`;
        if (entry.removed_by === 'disabled_tools' || entry.removed_by === 'agent_policy') {
          return `${name} is withheld by ${entry.removed_by}: ${entry.reason ?? 'policy'}`;
        }
      }
      return undefined;
    },
    validate(genome) {
      if (!genome.review_gate) return;
      const id = ctx.settings().reviewer_agent;
      try {
        agentKind(deps.config(), id, 'subagent');
      } catch (error) {
        throw new SvcError(
          'config_error',
          `options.adaptive_orchestration.reviewer_agent: ${describe(error).replace(/^agent: /, '')}`,
        );
      }
    },
    async applyPlanGate(root, row) {
      const genome = ctx.genomeOf(row);
      if (!genome?.plan_gate) return;
      const session = await deps.sessions.get(root);
      if (!session || workflowPhase(session) !== 'none') return;
      const history = Array.isArray(session.metadata.workflow_history)
        ? session.metadata.workflow_history
        : [];
      await deps.sessions.update(root, {
        metadata: {
          workflow_phase: 'planning',
          workflow_history: [
            ...history,
            { from: 'none', to: 'planning', at: deps.clock.now(), by: 'adaptive' },
          ].slice(-20),
        },
      });
      deps.bus.publish(root, 'workflow.phase_changed', {
        session_id: root,
        phase: 'planning',
        previous: 'none',
      });
    },
  };
}
