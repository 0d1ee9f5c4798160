/**
 * What a model's tool call may do to sessions. A call the agent loop makes (surface `agent`: a
 * run's tool call, carrying its session and run) acts for the model, which a prompt injection can
 * steer; a call from an operator surface (HTTP, CLI, TUI, MCP, ACP) is the operator's own and keeps
 * every power. So the session tools check, for the agent only: it acts on its own session and the
 * sessions below it (its sub-agents'), never on another; it never loosens a session's restrictions
 * (plan mode, a read-only agent kind, the planning phase: those are lifted by the user); it never
 * switches the current session.
 * @module
 */
import { agentKinds } from '../agent/agent-kinds';
import { SvcError } from '../errors';
import type { Session } from '../sessions/session-store';
import { type Caller, callerOf, kindTools, runTools } from '../workflows/lineage';
import type { ToolContext } from './core/types';

/** The call is a model's tool call inside a run (not an operator's). */
export const byAgent = (ctx: Pick<ToolContext, 'surface'>): boolean => ctx.surface === 'agent';

/**
 * Refuses an agent's call acting on `sessionId` unless it is the run's own session or one below it.
 * `what` completes "the agent may not …" (e.g. `change the settings of`).
 */
export async function agentScope(ctx: ToolContext, sessionId: string, what: string): Promise<void> {
  if (!byAgent(ctx)) return;
  const own = ctx.sessionId;
  // A run's tool call always carries its session (agent-toolbox.ts); without one there is no run
  // to keep in scope (a direct call in a test or a tool's own sub-call).
  if (!own || own === sessionId) return;
  if (own && (await ctx.app.sessions.family(own)).some((s) => s.id === sessionId)) return;
  throw new SvcError(
    'forbidden',
    `session_id: ${sessionId} is not the session this run works in nor one of its sub-agent sessions; the agent may not ${what} another session (the operator can, over HTTP, MCP, the CLI or the TUI)`,
  );
}

/** Refuses an agent's call that would make the session's mode or default agent kind less restrictive. */
export function agentLoosening(
  ctx: ToolContext,
  session: Session,
  patch: { mode?: string; agent?: string },
): void {
  if (!byAgent(ctx)) return;
  if (session.mode === 'plan' && patch.mode === 'build') {
    throw new SvcError(
      'forbidden',
      `mode: plan mode is left by the user (PATCH /v1/sessions/${session.id} with mode build, or svc_update_session over MCP), not by the agent; write the plan with set_plan_artifact and stop for review`,
    );
  }
  if (patch.agent && patch.agent !== session.agent) {
    const kinds = agentKinds(ctx.app.config);
    const from = kinds.find((k) => k.id === session.agent);
    const to = kinds.find((k) => k.id === patch.agent);
    if (from?.read_only && to && !to.read_only) {
      throw new SvcError(
        'forbidden',
        `agent: the read-only agent kind ${from.id} is left by the user (PATCH /v1/sessions/${session.id} with another agent), not by the agent`,
      );
    }
  }
}

/**
 * Refuses an agent's call that would have a run of agent kind `kindId` (a prompt it sends or
 * queues, a session it creates or re-kinds, a job it schedules) use a tool the calling run does
 * not have: a kind's restrictions (`[agents.<id>.tools]`, read-only, a sub-agent's or a task's
 * narrower set) are left by the user, never by the agent. Both sets are computed in the run's own
 * session, so only the kinds differ.
 */
export async function agentKindWithin(ctx: ToolContext, kindId: string, field = 'agent'): Promise<void> {
  if (!byAgent(ctx) || !ctx.runId) return;
  const { app } = ctx;
  const run = await app.runs.get(ctx.runId);
  if (!run) return;
  // An unknown kind is refused where it is used, with the list of known ones.
  if (!app.agent.kinds().some((k) => k.id === kindId)) return;
  const [ceiling, wanted] = await Promise.all([
    runTools(app, run),
    kindTools(app, run.session_id, kindId, { yolo: run.options.yolo }),
  ]);
  const have = new Set(ceiling);
  const extra = wanted.filter((name) => !have.has(name));
  if (extra.length === 0) return;
  const shown = extra.slice(0, 6).join(', ') + (extra.length > 6 ? `, … (${extra.length} in all)` : '');
  throw new SvcError(
    'forbidden',
    `${field}: a run of agent kind ${kindId} could use ${shown}, which this run (agent kind ${run.agent}${run.origin === 'subagent' ? ', a sub-agent' : ''}) cannot; the agent never starts or prepares a run with more tools than its own (the user can, over HTTP, MCP, the CLI or the TUI)`,
  );
}

/**
 * What a session the agent creates may be: a child in its own family (so it can prompt it, and
 * `delete_session` of its own session takes it along), never less restricted than the run's own
 * session: under plan mode or a read-only agent kind the new session inherits them, and asking
 * for build mode or a mutating kind is refused. An operator's call passes through unchanged.
 */
export async function agentChildSession<
  T extends { parent_id?: string; mode?: 'build' | 'plan'; agent?: string },
>(ctx: ToolContext, input: T): Promise<T> {
  if (!byAgent(ctx) || !ctx.sessionId) return input;
  const parent = input.parent_id ?? ctx.sessionId;
  await agentScope(ctx, parent, 'create sessions under');
  const own = await ctx.app.sessions.require(ctx.sessionId);
  const ownKind = agentKinds(ctx.app.config).find((k) => k.id === own.agent);
  const held = {
    ...input,
    parent_id: parent,
    mode: input.mode ?? (own.mode === 'plan' ? 'plan' : undefined),
    // The run's own session's kind, unless it is a sub-agent kind (which drives no session's runs).
    agent: input.agent ?? (ownKind && ownKind.mode !== 'subagent' ? own.agent : undefined),
  };
  if (own.mode === 'plan' && held.mode === 'build') {
    throw new SvcError(
      'forbidden',
      `mode: this run's session ${own.id} is in plan mode; a session the agent creates is in plan mode too (omit mode, or give plan)`,
    );
  }
  agentLoosening(ctx, own, { agent: held.agent });
  await agentKindWithin(ctx, held.agent ?? 'build');
  return held;
}

/**
 * Refuses an agent's call that starts sub-agents (or forks, or fetch readers) under `sessionId`
 * unless it is in the run's own family and not less restricted than the run's own session: a
 * plan-mode run starts no sub-agent under a build-mode session (the sub-agent takes its parent's
 * mode). Without `sessionId` the call works under the run's own session, which passes.
 */
export async function agentParent(
  ctx: ToolContext,
  sessionId: string | undefined,
  what: string,
): Promise<void> {
  if (!byAgent(ctx) || !ctx.sessionId || !sessionId || sessionId === ctx.sessionId) return;
  await agentScope(ctx, sessionId, what);
  const [own, target] = await Promise.all([
    ctx.app.sessions.require(ctx.sessionId),
    ctx.app.sessions.require(sessionId),
  ]);
  if (own.mode === 'plan' && target.mode !== 'plan') {
    throw new SvcError(
      'forbidden',
      `session_id: ${sessionId} is in ${target.mode} mode and this run's session ${own.id} in plan mode; the agent may not ${what} a less restricted session`,
    );
  }
}

/** The caller of a workflow tool (./workflow.ts, recipes, teams), checked by {@link agentParent}. */
export async function scopedCaller(ctx: ToolContext, sessionId: string | undefined): Promise<Caller> {
  await agentParent(ctx, sessionId, 'start sub-agents under');
  return await callerOf(ctx.app, ctx, sessionId);
}

/** Refuses an agent's switch of the current session (the operator's default session). */
export function agentNoSwitch(ctx: ToolContext): void {
  if (!byAgent(ctx)) return;
  throw new SvcError(
    'forbidden',
    'the current session is switched by the user (svc session switch, svc_switch_session over MCP), not by the agent',
  );
}
