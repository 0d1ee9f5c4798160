/**
 * Agent kinds and sub-agents. `list_agent_kinds` lists the built-in and configured kinds (TUI
 * `/agent_kinds`). `agent` (workflow) runs a task in a child session with its own run (parent run
 * id, same family session id) and a narrowed tool set, and returns the sub-agent's final answer.
 * @module
 */
import { z } from 'zod';
import { agentKind } from '../agent/agent-kinds';
import type { RunResult } from '../agent/types';
import { SvcError } from '../errors';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import { callerOf, narrowTools } from '../workflows/lineage';
import { agentParent } from './agent-caller';
import { defineTool } from './core/define-tool';

export const listAgentKinds = defineTool({
  name: 'list_agent_kinds',
  family: 'status',
  tag: 'primitive',
  description:
    'Agent kinds: build (default) and plan for top-level runs, explore and general as sub-agents, plus any [agents.<id>] from config, with their model, step limit and tool policy.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/agent-kinds' },
    mcp: 'svc_list_agent_kinds',
    cli: {
      command: 'agent-kinds',
      text: (r: { kinds: { id: string; mode: string; read_only: boolean; description: string }[] }) =>
        r.kinds
          .map(
            (k) =>
              `${k.id.padEnd(12)} ${k.mode.padEnd(9)} ${k.read_only ? 'read-only ' : '          '}${k.description}`,
          )
          .join('\n'),
    },
  },
  run: async (ctx) => ({
    default: 'build',
    kinds: ctx.app.agent.kinds().map((k) => ({
      id: k.id,
      description: k.description,
      mode: k.mode,
      builtin: k.builtin,
      model: k.model,
      read_only: k.read_only,
      max_steps: k.max_steps,
      reasoning_effort: k.reasoning_effort,
      has_prompt: k.prompt !== null,
      tools: k.tools,
    })),
  }),
});

export const agent = defineTool({
  name: 'agent',
  family: 'workflow',
  tag: 'workflow',
  description:
    'Start a sub-agent on a self-contained task in a child session and get its final answer. Use explore for read-only searches of the codebase (where is X, how does Y work) and general for a task that needs its own steps. Give the task fully: the sub-agent sees only your prompt, not this conversation.',
  input: () =>
    z.strictObject({
      prompt: z.string().min(1).describe('The complete task for the sub-agent, with the context it needs.'),
      description: z
        .string()
        .max(120)
        .optional()
        .describe('A few words naming the task (the child session title).'),
      agent: z.string().min(1).default('general').describe('Sub-agent kind: explore (read-only) or general.'),
      tools: z
        .array(z.string().min(1))
        .optional()
        .describe("Narrow the sub-agent to these tools. Omit for the kind's own set."),
      session_id: sessionIdInput('current', 'Parent session when called outside a run. Omit inside a run.'),
    }),
  mutates: false,
  // fan_out genome: several agent calls of one step run in parallel (adaptive orchestration).
  concurrent: async ({ app, sessionId }) => ((await app.adaptive?.spawnLimit(sessionId)) ?? 1) > 1,
  surfaces: { mcp: 'svc_agent' },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input): Promise<RunResult & { child_session_id: string; tools_dropped?: string[] }> => {
    const { app } = ctx;
    const parent = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    await agentParent(ctx, parent.id, 'start sub-agents under');
    const kind = agentKind(app.config, input.agent, 'subagent');
    const parentRun = ctx.runId ? await app.runs.get(ctx.runId) : undefined;
    const parentKind = ctx.agent ? app.agent.kinds().find((k) => k.id === ctx.agent) : undefined;
    if (parentKind?.read_only && !kind.read_only) {
      throw new SvcError(
        'invalid_input',
        `agent: a read-only agent (${parentKind.id}) can only start read-only sub-agents such as explore, not ${kind.id}`,
      );
    }
    // A sub-agent never gets more than the agent that started it (./workflow.ts does the same):
    // the task's tools, or the kind's own set, within the calling run's effective tools.
    const { ceiling } = await callerOf(app, ctx, parent.id);
    const narrowed = narrowTools(app, input.tools, ceiling, 'tools');
    // At most the genome's max_parallel_agents children of one session family run at once.
    const release = await app.adaptive?.acquireSpawnSlot(parent.id, ctx.signal);
    const result = await app.agent
      .runChild({
        parentSessionId: parent.id,
        parentRunId: ctx.runId,
        prompt: input.prompt,
        agent: kind.id,
        title: input.description,
        tools: narrowed.tools,
        signal: ctx.signal,
        yolo: parentRun?.options.yolo,
        unattended: parentRun?.options.unattended,
      })
      .finally(() => release?.());
    return {
      ...result,
      child_session_id: result.session_id,
      ...(narrowed.dropped.length ? { tools_dropped: narrowed.dropped } : {}),
    };
  },
  toModelOutput: (result) => {
    if (result.status === 'completed') return result.text || '(the sub-agent finished without an answer)';
    return `The sub-agent run ${result.run_id} ended ${result.status}${result.reason ? ` (${result.reason})` : ''}${result.error ? `: ${result.error}` : ''}.${result.text ? `\nIts last answer:\n${result.text}` : ''}`;
  },
});

export const agentTools = [listAgentKinds, agent];
