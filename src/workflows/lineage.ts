/**
 * Who a workflow works for, and what its sub-agents may use. A sub-agent never gets more than
 * the agent that started it: when a tool is called inside a run, the caller's effective tool set
 * (its funnel, its kind's policy, its own task narrowing) is the ceiling of every child, applied
 * through runChild's `tools` (the funnel's agent_policy stage). Nesting is bounded by
 * `options.workflows.max_depth`.
 * @module
 */
import { kindPolicies } from '../agent/agent-kinds';
import type { AgentService } from '../agent/types';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import { effectiveNames, type ToolPolicy } from '../permissions/tool-policy';
import type { RunLedger } from '../runs/run-ledger';
import type { Session, SessionStore } from '../sessions/session-store';
import type { ToolCatalog, ToolFunnel } from './ports';

/** The calling agent, as a workflow inherits it. */
export interface Caller {
  sessionId?: string;
  runId?: string;
  signal: AbortSignal;
  /** The caller's effective tools when it is an agent run; undefined for an operator's own call. */
  ceiling?: string[];
  yolo?: boolean;
  unattended?: 'fail' | 'wait';
}

/** Who calls, as a tool call says it (the tool context's own fields). */
export interface CallerContext {
  sessionId?: string;
  runId?: string;
  signal: AbortSignal;
}

/** What computing a caller's ceiling reads (a tool handler's `ctx.app` has it). */
export interface CallerDeps extends ToolFunnel {
  readonly runs: Pick<RunLedger, 'get' | 'require'>;
  readonly agent: Pick<AgentService, 'kinds'>;
}

/** What the nesting bound reads. */
export interface DepthDeps {
  readonly sessions: Pick<SessionStore, 'get'>;
  readonly config: Pick<Config, 'options'>;
}

/** What finding or opening a workflow's session needs. */
export interface ParentSessionDeps {
  readonly sessions: Pick<SessionStore, 'require' | 'create'>;
}

export async function callerOf(deps: CallerDeps, ctx: CallerContext, sessionId?: string): Promise<Caller> {
  const run = ctx.runId ? await deps.runs.get(ctx.runId) : undefined;
  return {
    sessionId: sessionId ?? ctx.sessionId,
    runId: run?.id,
    signal: ctx.signal,
    ceiling: run ? await toolCeiling(deps, run.id) : undefined,
    yolo: run?.options.yolo,
    unattended: run?.options.unattended,
  };
}

/** The effective tool names of a run, as its loop computes them before each step. */
export async function toolCeiling(deps: CallerDeps, runId: string): Promise<string[]> {
  return await runTools(deps, await deps.runs.require(runId));
}

/** {@link toolCeiling} of a run already read. */
export async function runTools(
  deps: CallerDeps,
  run: { session_id: string; agent: string; origin: string; options: { yolo?: boolean; tools?: string[] } },
): Promise<string[]> {
  return await kindTools(deps, run.session_id, run.agent, {
    subagent: run.origin === 'subagent',
    yolo: run.options.yolo,
    tools: run.options.tools,
  });
}

/**
 * The effective tool names a run of agent kind `kindId` would have in `sessionId`'s funnel: the
 * kind's policies (read-only, `[agents.<id>.tools]`), a sub-agent's, a task's own narrowing.
 */
export async function kindTools(
  deps: CallerDeps,
  sessionId: string,
  kindId: string | undefined,
  options: { subagent?: boolean; yolo?: boolean; tools?: string[] } = {},
): Promise<string[]> {
  const kind = kindId === undefined ? undefined : deps.agent.kinds().find((k) => k.id === kindId);
  const policies: ToolPolicy[] = [
    ...(kind ? kindPolicies(kind, { subagent: options.subagent }) : []),
    ...onlyTools(options.tools),
  ];
  return effectiveNames(
    deps.funnel(
      await deps.funnelContext(sessionId, {
        ...(kind ? { agent: kind.id } : {}),
        yolo: options.yolo,
        policies,
      }),
    ),
  );
}

function onlyTools(names: string[] | undefined): ToolPolicy[] {
  if (!names?.length) return [];
  const allowed = new Set(names);
  return [
    {
      source: 'sub-agent task',
      removes: (tool) => (allowed.has(tool.name) ? undefined : 'not in the task tool list'),
    },
  ];
}

export interface NarrowedTools {
  /** What to pass as runChild `tools` (undefined: the kind's own set). */
  tools?: string[];
  /** Requested tools the caller does not have (dropped). */
  dropped: string[];
}

/**
 * The tools of one child: what the task asks for, within the caller's ceiling. Unknown names are
 * refused; names the caller lacks are dropped (and reported); nothing left is refused.
 */
export function narrowTools(
  deps: { readonly tools: ToolCatalog },
  requested: readonly string[] | undefined,
  ceiling: readonly string[] | undefined,
  field: string,
): NarrowedTools {
  if (requested) {
    const known = new Set(deps.tools.gates().map((g) => g.tool.name));
    const unknown = requested.filter((name) => !known.has(name));
    if (unknown.length) {
      throw new SvcError(
        'invalid_input',
        `${field}: unknown tool${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; see list_tool_capabilities`,
      );
    }
  }
  if (!ceiling) return { tools: requested ? [...requested] : undefined, dropped: [] };
  if (!requested) return { tools: [...ceiling], dropped: [] };
  const allowed = new Set(ceiling);
  const tools = requested.filter((name) => allowed.has(name));
  const dropped = requested.filter((name) => !allowed.has(name));
  if (tools.length === 0) {
    throw new SvcError(
      'forbidden',
      `${field}: none of ${requested.join(', ')} is available to the calling agent (a sub-agent never gets more tools than its parent)`,
    );
  }
  return { tools, dropped };
}

/** How many sessions lie above this one. */
export async function sessionDepth(deps: Pick<DepthDeps, 'sessions'>, sessionId: string): Promise<number> {
  let depth = 0;
  let current = await deps.sessions.get(sessionId);
  while (current?.parent_id && depth < 100) {
    depth++;
    current = await deps.sessions.get(current.parent_id);
  }
  return depth;
}

/** Refuse to nest workflows deeper than `options.workflows.max_depth` sessions. */
export async function assertDepth(deps: DepthDeps, sessionId: string, what: string): Promise<void> {
  const max = deps.config.options.workflows.max_depth;
  const depth = await sessionDepth(deps, sessionId);
  if (depth >= max) {
    throw new SvcError(
      'conflict',
      `${what}: session ${sessionId} is already ${depth} levels deep (options.workflows.max_depth = ${max}); run it from a shallower session`,
    );
  }
}

/**
 * The session a workflow works under: the given one or the caller's, or a new top-level session
 * titled `title` when there is none (an operator's call from the CLI, HTTP or the scheduler).
 */
export async function parentSession(
  deps: ParentSessionDeps,
  caller: Caller,
  title: string,
): Promise<Session> {
  if (caller.sessionId) return await deps.sessions.require(caller.sessionId);
  return await deps.sessions.create({ title });
}
