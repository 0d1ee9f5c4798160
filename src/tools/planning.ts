/**
 * Staged workflow and plans. The phase lives in session metadata `workflow_phase`: `planning`
 * (the funnel withholds mutating tools) or `execute`; absent means the workflow is not in use.
 * `set_plan_artifact` stores a markdown plan (and enters planning), `approve_plan` moves planning
 * → execute (asking the operator when the agent calls it), `return_to_plan` moves back,
 * `clear_plan` ends the workflow. `summarize_session` compacts a session's history on demand.
 * spec: there is no `submit_plan`; approval is `/approve` or `approve_plan`.
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import type { Session } from '../sessions/session-store';
import { workflowPhase } from '../sessions/session-views';
import { agentScope, byAgent } from './agent-caller';
import { defineTool } from './core/define-tool';
import type { ToolHost } from './core/types';

const sessionIdField = () => sessionIdInput('current');

interface StoredPlan {
  markdown: string;
  title: string | null;
  revision: number;
  updated_at: number;
}

interface PhaseChange {
  from: string;
  to: string;
  at: number;
  by: string;
}

const MAX_PLAN_CHARS = 200_000;
const HISTORY_MAX = 20;

function planOf(session: Session): StoredPlan | undefined {
  const plan = session.metadata.plan as StoredPlan | undefined;
  return plan && typeof plan.markdown === 'string' ? plan : undefined;
}

const planMeta = (plan: StoredPlan | undefined) =>
  plan
    ? { title: plan.title, revision: plan.revision, chars: plan.markdown.length, updated_at: plan.updated_at }
    : null;

/** Move the session to a phase ('none' ends the workflow), recording the change and publishing it. */
async function setPhase(
  app: ToolHost,
  session: Session,
  to: string,
  by: string,
  extra: Record<string, unknown> = {},
) {
  const from = workflowPhase(session);
  const history = Array.isArray(session.metadata.workflow_history)
    ? (session.metadata.workflow_history as PhaseChange[])
    : [];
  const next =
    from === to ? history : [...history, { from, to, at: app.clock.now(), by }].slice(-HISTORY_MAX);
  const updated = await app.sessions.update(session.id, {
    metadata: { ...extra, workflow_phase: to === 'none' ? null : to, workflow_history: next },
  });
  if (from !== to) {
    app.bus.publish(session.id, 'workflow.phase_changed', {
      session_id: session.id,
      phase: to,
      previous: from,
    });
  }
  return { updated, from, changed: from !== to };
}

export const setPlanArtifact = defineTool({
  name: 'set_plan_artifact',
  family: 'planning',
  tag: 'primitive',
  description:
    'Store the plan of a session as markdown (replacing the previous one). Starts the staged workflow in the planning phase when it is not in use; in the execute phase the plan is updated and execution goes on.',
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      markdown: z
        .string()
        .min(1)
        .max(MAX_PLAN_CHARS)
        .describe('The plan, in markdown: numbered steps, files, checks.'),
      title: z.string().max(200).optional().describe('Short title of the plan.'),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_set_plan_artifact' },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    await agentScope(ctx, session.id, 'write the plan of');
    const previous = planOf(session);
    const plan: StoredPlan = {
      markdown: input.markdown,
      title: input.title ?? previous?.title ?? null,
      revision: (previous?.revision ?? 0) + 1,
      updated_at: app.clock.now(),
    };
    const phase = workflowPhase(session);
    const { updated } = await setPhase(app, session, phase === 'none' ? 'planning' : phase, ctx.surface, {
      plan,
    });
    app.bus.publish(session.id, 'plan.updated', { session_id: session.id, has_plan: true });
    return { session_id: session.id, phase: workflowPhase(updated), plan: planMeta(plan) };
  },
});

export const getPlan = defineTool({
  name: 'get_plan',
  family: 'planning',
  tag: 'primitive',
  description: 'The markdown plan of a session (null when it has none) and its workflow phase.',
  input: () => z.strictObject({ session_id: sessionIdField() }),
  mutates: false,
  // Audited (p-readonly): reads its session row, nothing else.
  readsOnly: true,
  surfaces: { mcp: 'svc_get_plan' },
  examples: [{ session_id: 'ses_0001' }],
  run: async (ctx, input) => {
    const session = (await resolveSession(ctx.app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    const plan = planOf(session);
    return {
      session_id: session.id,
      phase: workflowPhase(session),
      plan: plan ? { ...planMeta(plan), markdown: plan.markdown } : null,
    };
  },
  toModelOutput: (result) =>
    result.plan
      ? `Plan (phase ${result.phase}, revision ${result.plan.revision}):\n\n${result.plan.markdown}`
      : 'No plan.',
});

export const clearPlan = defineTool({
  name: 'clear_plan',
  family: 'planning',
  tag: 'primitive',
  description:
    'Remove the plan of a session and end its staged workflow (no phase; every tool available again).',
  input: () => z.strictObject({ session_id: sessionIdField() }),
  mutates: false,
  surfaces: { mcp: 'svc_clear_plan' },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    await agentScope(ctx, session.id, 'clear the plan of');
    if (byAgent(ctx) && workflowPhase(session) === 'planning') {
      throw new SvcError(
        'forbidden',
        `session ${session.id} is in the planning phase: it ends when the user approves the plan (/approve, approve_plan), not by the agent clearing it; revise the plan with set_plan_artifact`,
      );
    }
    const had = planOf(session) !== undefined;
    await setPhase(app, session, 'none', ctx.surface, { plan: null });
    if (had) app.bus.publish(session.id, 'plan.updated', { session_id: session.id, has_plan: false });
    return { session_id: session.id, cleared: had, phase: 'none' };
  },
});

export const getWorkflowPhase = defineTool({
  name: 'get_workflow_phase',
  family: 'planning',
  tag: 'primitive',
  description:
    'The staged-workflow phase of a session: planning, execute, or none when the workflow is not in use.',
  input: () => z.strictObject({ session_id: sessionIdField() }),
  mutates: false,
  // Audited (p-readonly): reads its session row, nothing else.
  readsOnly: true,
  surfaces: { mcp: 'svc_get_workflow_phase' },
  examples: [{ session_id: 'ses_0001' }],
  run: async (ctx, input) => {
    const session = (await resolveSession(ctx.app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    return { session_id: session.id, phase: workflowPhase(session), has_plan: planOf(session) !== undefined };
  },
});

export const getStagedWorkflowStatus = defineTool({
  name: 'get_staged_workflow_status',
  family: 'planning',
  tag: 'primitive',
  description:
    'The staged workflow of a session: phase, plan summary, phase history, the tools withheld in the current phase, and the next action.',
  input: () => z.strictObject({ session_id: sessionIdField() }),
  mutates: false,
  surfaces: { mcp: 'svc_get_staged_workflow_status' },
  examples: [{ session_id: 'ses_0001' }],
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    const phase = workflowPhase(session);
    const plan = planOf(session);
    const withheld = app
      .funnel(await app.funnelContext(session.id))
      .filter((e) => e.removed_by === 'mode' && phase === 'planning' && e.mutates)
      .map((e) => e.name)
      .sort();
    const next =
      phase === 'none'
        ? 'not in use: set_plan_artifact starts it in the planning phase'
        : phase === 'planning'
          ? plan
            ? 'approve the plan with /approve or approve_plan to execute it'
            : 'write the plan with set_plan_artifact'
          : 'execute the plan; return_to_plan goes back to planning';
    return {
      session_id: session.id,
      enabled: phase !== 'none',
      phase,
      has_plan: plan !== undefined,
      plan: planMeta(plan),
      history: Array.isArray(session.metadata.workflow_history) ? session.metadata.workflow_history : [],
      withheld_tools: withheld,
      next_action: next,
    };
  },
});

export const approvePlan = defineTool({
  name: 'approve_plan',
  family: 'planning',
  tag: 'primitive',
  description:
    'Approve the plan of a session: the planning phase ends and the execute phase starts (mutating tools come back). When an agent calls it, the operator is asked to approve.',
  input: () => z.strictObject({ session_id: sessionIdField() }),
  mutates: false,
  asksPermission: true,
  surfaces: {
    http: { method: 'POST', path: '/v1/sessions/:id/plan/approve', params: { id: 'session_id' } },
    mcp: 'svc_approve_plan',
  },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    await agentScope(ctx, session.id, 'approve the plan of');
    const plan = planOf(session);
    if (!plan) {
      throw new SvcError(
        'conflict',
        `session ${session.id} has no plan to approve; write one with set_plan_artifact`,
      );
    }
    const phase = workflowPhase(session);
    if (phase === 'execute') return { session_id: session.id, phase, previous: phase, changed: false };
    // The agent may not approve its own plan: the operator decides (allowed_tools/--yolo aside).
    await ctx.ask({
      tool: 'approve_plan',
      title: `approve the plan${plan.title ? ` "${plan.title}"` : ''} and start executing it`,
      details: { plan_chars: plan.markdown.length, revision: plan.revision },
    });
    const { from, changed } = await setPhase(app, session, 'execute', ctx.surface);
    return { session_id: session.id, phase: 'execute', previous: from, changed };
  },
});

export const returnToPlan = defineTool({
  name: 'return_to_plan',
  family: 'planning',
  tag: 'primitive',
  description:
    'Go back from the execute phase to planning (mutating tools are withheld again) to revise the plan.',
  input: () =>
    z.strictObject({
      session_id: sessionIdField(),
      reason: z.string().max(500).optional().describe('Why the plan needs another look.'),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_return_to_plan' },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    await agentScope(ctx, session.id, 'change the workflow phase of');
    const { from, changed } = await setPhase(app, session, 'planning', ctx.surface);
    return {
      session_id: session.id,
      phase: 'planning',
      previous: from,
      changed,
      reason: input.reason ?? null,
    };
  },
});

export const summarizeSession = defineTool({
  name: 'summarize_session',
  family: 'planning',
  tag: 'primitive',
  description:
    "Compact a session's history now: older turns are summarized by the small model (the auto-compaction pipeline). For the session of an active run it happens before that run's next step.",
  input: () => z.strictObject({ session_id: sessionIdField() }),
  mutates: true,
  surfaces: {
    http: { method: 'POST', path: '/v1/sessions/:id/summarize', params: { id: 'session_id' } },
    mcp: 'svc_summarize_session',
  },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    await agentScope(ctx, session.id, 'compact the history of');
    if (app.agent.requestCompaction(session.id)) {
      return {
        session_id: session.id,
        scheduled: true,
        note: 'the history is summarized before the next step of the active run',
      };
    }
    return { scheduled: false, ...(await app.agent.summarize(session.id, { signal: ctx.signal })) };
  },
});

export const planningTools = [
  setPlanArtifact,
  getPlan,
  clearPlan,
  getWorkflowPhase,
  getStagedWorkflowStatus,
  approvePlan,
  returnToPlan,
  summarizeSession,
];
