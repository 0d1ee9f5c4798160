/**
 * Remote agents and deployments: `a2a_delegate` (spec, Remote-agent and DAG tools: "a tool that
 * delegates to a remote agent by card URL, deployed name or capability"; its name is ours,
 * TOOLS-54), `delete_a2a_task` (TOOLS-55), and the workflow tools `deploy_agent` and
 * `deploy_fleet` (TOOLS-50; remote targets need `[deploy] enabled`, TOOLS-29).
 * @module
 */
import { z } from 'zod';
import { agentKind } from '../agent/agent-kinds';
import type { DeployInput, Deployment } from '../deploy/deploy-service';
import { LOCAL_TARGET } from '../deploy/targets';
import { SvcError } from '../errors';
import type { ResolvedTarget, TrackedTask } from '../remote/delegation';
import { safeOrigin } from '../remote/delegation-types';
import { renderText } from '../util/render-text';
import { safeTerminalText } from '../util/terminal-text';
import { allowlistProblems } from './core/aliases';
import { type AnyTool, defineTool, type ToolContext } from './core/define-tool';
import type { PermissionRequest, ToolHost } from './core/types';

const timeoutField = () =>
  z
    .number()
    .int()
    .min(1)
    .max(3600)
    .default(300)
    .describe(
      'Seconds to wait for the remote task to finish (default 300). When it runs longer the answer says so and the task keeps running.',
    );

export const a2aDelegateInput = () =>
  z.strictObject({
    card_url: z
      .string()
      .min(1)
      .optional()
      .describe(
        "The remote agent's card URL (…/.well-known/agent-card.json) or its base URL. Give exactly one of card_url, agent_name, capability.",
      ),
    agent_name: z
      .string()
      .min(1)
      .optional()
      .describe('A deployed agent (deploy_agent) or a configured remote ([a2a.remotes.<name>]) by name.'),
    capability: z
      .string()
      .min(1)
      .optional()
      .describe(
        "What the agent must be able to do, in a few words (e.g. 'code review'): matched against the skills of the deployed and configured agents' cards.",
      ),
    message: z
      .string()
      .min(1)
      .max(100_000)
      .optional()
      .describe(
        'The task for the remote agent, self-contained: it sees nothing of this session. Required unless task_id is given.',
      ),
    task_id: z
      .string()
      .min(1)
      .optional()
      .describe(
        'A task id from an earlier a2a_delegate: look at that task again (and wait for it) instead of sending a new one.',
      ),
    context_id: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Continue a conversation with the remote agent: the context_id of an earlier answer. Omit to start fresh.',
      ),
    wait: z
      .boolean()
      .default(true)
      .describe('Wait for the remote task to finish (default true). false returns at once with the task id.'),
    timeout_seconds: timeoutField(),
  });

export const a2aDelegate = defineTool({
  name: 'a2a_delegate',
  family: 'remote',
  tag: 'primitive',
  description:
    'Delegate a task to a remote agent over the A2A protocol: name it by agent card URL, by the name of a deployed or configured agent, or by the capability it needs. The card is fetched and checked, the task sent, and the answer waited for (up to timeout_seconds). Tasks are tracked: pass task_id to check one again, delete_a2a_task to cancel it.',
  input: a2aDelegateInput,
  mutates: true,
  asksPermission: true,
  surfaces: {
    mcp: 'svc_a2a_delegate',
    // The remote agent's text is shown with its control characters escaped, never acted on.
    cli: { command: 'a2a delegate', args: ['message?'], text: (task) => safeTerminalText(renderText(task)) },
  },
  parity: false,
  run: async (ctx, input) => {
    const call = { sessionId: ctx.sessionId, runId: ctx.runId, signal: ctx.signal };
    if (input.task_id !== undefined) {
      if (
        input.message !== undefined ||
        input.card_url !== undefined ||
        input.agent_name !== undefined ||
        input.capability !== undefined
      ) {
        throw new SvcError(
          'invalid_input',
          'task_id: checks a tracked task; leave message, card_url, agent_name and capability out',
        );
      }
      return ctx.app.remote.check(
        input.task_id,
        { wait: input.wait, timeout_seconds: input.timeout_seconds },
        call,
      );
    }
    if (input.message === undefined)
      throw new SvcError(
        'invalid_input',
        'message: give the task for the remote agent (or task_id to check a tracked one)',
      );
    const request = {
      card_url: input.card_url,
      agent_name: input.agent_name,
      capability: input.capability,
      message: input.message,
      context_id: input.context_id,
      wait: input.wait,
      timeout_seconds: input.timeout_seconds,
    };
    // A name or a capability is resolved first (configured and deployed agents only), so the
    // prompt names the agent and origin the task goes to and a session grant covers only that
    // agent. A card URL is asked for as given, before anything is fetched from it.
    const byUrlOnly =
      input.card_url !== undefined && input.agent_name === undefined && input.capability === undefined;
    const resolved = byUrlOnly ? undefined : await ctx.app.remote.resolve(request, ctx.signal);
    await ctx.ask(delegatePermission(request, resolved));
    return ctx.app.remote.delegate(request, call, resolved);
  },
  toModelOutput: (task: TrackedTask) => {
    const head = `A2A task ${task.task_id} to ${task.agent.name || task.agent.card_url}: ${task.state}${task.context_id ? ` (context_id ${task.context_id})` : ''}`;
    const body = task.text ?? task.error ?? '';
    return [head, task.note, body].filter(Boolean).join('\n\n');
  },
});

/** The prompt of a delegation: the agent and origin it resolved to, or the card URL as given. */
function delegatePermission(
  input: { card_url?: string; capability?: string; message: string },
  resolved: ResolvedTarget | undefined,
): PermissionRequest {
  const first = input.message.split('\n')[0].slice(0, 100);
  if (!resolved) {
    return {
      tool: 'a2a_delegate',
      title: `delegate to remote agent ${JSON.stringify(input.card_url)}: ${first}`,
      scope: `a2a:${input.card_url}`,
      details: { card_url: input.card_url, message_chars: input.message.length },
    };
  }
  const agent = resolved.endpoint ?? resolved.card.name;
  const origin = safeOrigin(resolved.card.rpc_url) ?? resolved.card.rpc_url;
  const via = resolved.kind === 'capability' ? ` for capability ${JSON.stringify(resolved.value)}` : '';
  return {
    tool: 'a2a_delegate',
    title: `delegate to remote agent ${JSON.stringify(agent)} at ${origin}${via}: ${first}`,
    scope: `a2a:${agent}@${origin}`,
    details: {
      agent_name: agent,
      origin,
      capability: input.capability,
      card_name: resolved.card.name,
      card_url: resolved.card.card_url,
      message_chars: input.message.length,
    },
  };
}

export const deleteA2aTask = defineTool({
  name: 'delete_a2a_task',
  family: 'remote',
  tag: 'primitive',
  description:
    'Cancel and forget a tracked remote A2A task: a task still running at the remote agent is asked to cancel (tasks/cancel), then its record is deleted.',
  input: () => z.strictObject({ task_id: z.string().min(1).describe('The task id a2a_delegate returned.') }),
  mutates: true,
  surfaces: { mcp: 'svc_delete_a2a_task', cli: { command: 'a2a delete-task', args: ['task_id'] } },
  parity: false,
  run: async (ctx, input) => ctx.app.remote.remove(input.task_id, { signal: ctx.signal }),
});

const toolPolicy = () =>
  z
    .strictObject({
      allow: z.array(z.string().min(1)).optional().describe('Only these tools for the deployed agent.'),
      deny: z.array(z.string().min(1)).optional().describe('Tools removed from the deployed agent.'),
    })
    .describe("The deployed agent's tool policy ([agents.<kind>.tools] in its process).");

const agentFields = {
  agent: z.string().min(1).default('build').describe('Agent kind it runs (a primary kind, default build).'),
  model: z
    .string()
    .min(1)
    .optional()
    .describe('Model selector <provider>/<model> (default: the usual selection).'),
  description: z.string().max(500).optional().describe('What the agent is for; shown on its agent card.'),
  tools: toolPolicy().optional(),
  allowed_tools: z
    .array(z.string().min(1))
    .optional()
    .describe(
      'Tools it may use without a permission prompt (it runs unattended: other mutating tools fail).',
    ),
  skills: z
    .array(z.string().min(1))
    .optional()
    .describe("Capability keywords for its card's skill (how a2a_delegate finds it by capability)."),
  target: z
    .string()
    .min(1)
    .default(LOCAL_TARGET)
    .describe(
      'Where it runs: local (this machine, default) or a [deploy.targets.<name>] target (needs [deploy] enabled = true).',
    ),
};

export const deployAgentInput = () =>
  z.strictObject({
    action: z
      .enum(['deploy', 'stop', 'status', 'list', 'remove'])
      .default('deploy')
      .describe(
        'deploy (start it), stop, status (probe its health now), list (every deployed agent), remove (stop and forget).',
      ),
    name: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Name of the deployed agent (letters, digits, - and _); a2a_delegate reaches it by this name. Required except for list.',
      ),
    ...agentFields,
  });

export const deployAgent = defineTool({
  name: 'deploy_agent',
  family: 'workflow',
  tag: 'workflow',
  description:
    'Deploy a named agent (agent kind, model, tool policy) as a long-running svc HTTP service that serves A2A, with its own token and data dir, so a2a_delegate can hand it tasks by name. Also stop, status, list and remove. Targets other than local need [deploy] enabled.',
  input: deployAgentInput,
  mutates: true,
  surfaces: {
    mcp: 'svc_deploy_agent',
    cli: [
      {
        command: 'deploy agent',
        args: ['name'],
        fixed: { action: 'deploy' },
        description: 'deploy a named agent as a svc service (--tools takes JSON: {"allow":[…]})',
        prepare: (input) => parseJsonOption(input, 'tools'),
      },
      {
        command: 'deploy stop',
        args: ['name'],
        fixed: { action: 'stop' },
        description: 'stop a deployed agent',
      },
      {
        command: 'deploy status',
        args: ['name'],
        fixed: { action: 'status' },
        description: "probe a deployed agent's health",
      },
      { command: 'deploy list', fixed: { action: 'list' }, description: 'list deployed agents' },
      {
        command: 'deploy remove',
        args: ['name'],
        fixed: { action: 'remove' },
        description: 'stop and forget a deployed agent',
      },
    ],
  },
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    if (input.action === 'list') return { deployments: await app.deploy.list() };
    const name = requireName(input.name, input.action);
    switch (input.action) {
      case 'deploy':
        return app.deploy.deploy(await checkedDeployInput(ctx, { ...input, name }), { signal: ctx.signal });
      case 'stop':
        return app.deploy.stop(name, { signal: ctx.signal });
      case 'status':
        return app.deploy.status(name);
      case 'remove':
        return app.deploy.remove(name);
      default: {
        const never: never = input.action;
        throw new SvcError('invalid_input', `action: unknown action ${String(never)}`);
      }
    }
  },
});

export const deployFleetInput = () =>
  z.strictObject({
    action: z
      .enum(['deploy', 'stop', 'status', 'list', 'remove'])
      .default('deploy')
      .describe('deploy every agent of the fleet, or stop, status, list or remove the fleet.'),
    fleet: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/)
      .describe('Fleet name; its agents are recorded with it.'),
    agents: z
      .array(z.strictObject({ name: z.string().min(1).describe('Name of this agent.'), ...agentFields }))
      .max(20)
      .optional()
      .describe('The agents to deploy (action deploy): each a named agent, as deploy_agent takes it.'),
  });

export const deployFleet = defineTool({
  name: 'deploy_fleet',
  family: 'workflow',
  tag: 'workflow',
  description:
    'Deploy a fleet: several named agents at once, each a long-running svc service reachable by name through a2a_delegate. Also stop, status, list or remove the whole fleet. Targets other than local need [deploy] enabled.',
  input: deployFleetInput,
  mutates: true,
  surfaces: {
    mcp: 'svc_deploy_fleet',
    cli: {
      command: 'deploy fleet',
      args: ['fleet'],
      description: 'deploy, stop, status, list or remove a fleet (--agents takes a JSON array)',
      prepare: (input) => parseJsonOption(input, 'agents'),
    },
  },
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const members = () => app.deploy.list({ fleet: input.fleet });
    if (input.action === 'list') return { fleet: input.fleet, deployments: await members() };
    if (input.action !== 'deploy') {
      if (input.agents)
        throw new SvcError(
          'invalid_input',
          `agents: only action deploy takes agents; ${input.action} acts on the fleet's recorded agents`,
        );
      const results = [];
      for (const member of await members()) {
        try {
          const result =
            input.action === 'stop'
              ? await app.deploy.stop(member.name)
              : input.action === 'status'
                ? await app.deploy.status(member.name)
                : await app.deploy.remove(member.name);
          results.push({ name: member.name, ok: true, result });
        } catch (error) {
          results.push({
            name: member.name,
            ok: false,
            error: SvcError.is(error) ? error.message : String(error),
          });
        }
      }
      if (results.length === 0)
        throw new SvcError('not_found', `fleet: no deployed agents in fleet "${input.fleet}"`);
      return { fleet: input.fleet, action: input.action, ok: results.every((r) => r.ok), results };
    }
    if (!input.agents?.length)
      throw new SvcError('invalid_input', 'agents: give the agents of the fleet (each with a name)');
    const names = input.agents.map((a) => a.name);
    const duplicate = names.find((n, i) => names.indexOf(n) !== i);
    if (duplicate) throw new SvcError('invalid_input', `agents: the name "${duplicate}" appears twice`);
    // Check every member first: a bad entry must not leave half a fleet running.
    const checked = [];
    for (const agent of input.agents)
      checked.push(await checkedDeployInput(ctx, { ...agent, fleet: input.fleet }));
    const results: { name: string; ok: boolean; deployment?: Deployment; error?: string }[] = [];
    for (const agent of checked) {
      try {
        results.push({
          name: agent.name,
          ok: true,
          deployment: await app.deploy.deploy(agent, { signal: ctx.signal }),
        });
      } catch (error) {
        results.push({
          name: agent.name,
          ok: false,
          error: SvcError.is(error) ? error.message : String(error),
        });
      }
    }
    return { fleet: input.fleet, action: 'deploy', ok: results.every((r) => r.ok), results };
  },
});

/** CLI: an object or array option arrives as text (commander splits arrays on commas). */
function parseJsonOption(input: Record<string, unknown>, key: string): Record<string, unknown> {
  const raw = input[key];
  if (raw === undefined) return input;
  const text = Array.isArray(raw) ? raw.join(',') : String(raw);
  try {
    return { ...input, [key]: JSON.parse(text) };
  } catch {
    throw new SvcError('invalid_input', `--${key}: expected JSON, got ${JSON.stringify(text.slice(0, 80))}`);
  }
}

function requireName(name: string | undefined, action: string): string {
  if (!name) throw new SvcError('invalid_input', `name: action ${action} needs the name of a deployed agent`);
  return name;
}

/** Validate what the deployed process would otherwise reject at start-up, with field names. */
async function checkedDeployInput(
  ctx: ToolContext,
  input: Omit<DeployInput, 'agent' | 'target'> & { agent: string; target: string },
): Promise<DeployInput> {
  const app: ToolHost = ctx.app;
  app.deploy.target(input.target);
  agentKind(app.config, input.agent, 'primary');
  if (input.model)
    await app.models.resolve({ selector: input.model, sessionId: ctx.sessionId, signal: ctx.signal });
  const known = new Set(app.tools.gates().map((gate) => gate.tool.name));
  for (const [field, list] of [
    ['tools.allow', input.tools?.allow],
    ['tools.deny', input.tools?.deny],
    ['allowed_tools', input.allowed_tools],
  ] as const) {
    if (!list) continue;
    const problems = allowlistProblems(list, field);
    if (problems.length) throw new SvcError('invalid_input', problems[0]);
    const unknown = list.filter((tool) => !known.has(tool));
    if (unknown.length)
      throw new SvcError(
        'invalid_input',
        `${field}: unknown tool(s) ${unknown.join(', ')}; see list_tool_capabilities`,
      );
  }
  return input;
}

export const remoteTools = [a2aDelegate, deleteA2aTask, deployAgent, deployFleet] as AnyTool[];
