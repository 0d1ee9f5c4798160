/**
 * svc served as an A2A agent (config `[a2a] enabled = true`): the agent card, and the JSON-RPC
 * methods `message/send`, `tasks/get` and `tasks/cancel` over the one session API (`app.agent`).
 * A task is an agent run (task id = run id); a context is a session, so follow-up messages with
 * the same `contextId` continue the same conversation. Surface-free: the HTTP routes in
 * `src/surfaces/a2a/routes.ts` pass parsed bodies in and send the returned objects out.
 * @module
 */
import { agentKind } from '../agent/agent-kinds';
import type { AgentService, RunResult } from '../agent/types';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { Logger } from '../log';
import type { Redactor } from '../redact';
import type { RunLedger } from '../runs/run-ledger';
import type { SessionStore } from '../sessions/session-store';
import type { Clock } from '../util/ids';
import { VERSION } from '../version';
import {
  A2A_PROTOCOL_VERSION,
  messageSchema,
  partsText,
  RPC_ERRORS,
  RPC_PATH,
  type TaskState,
} from './a2a-wire';
import type { RemoteAgents } from './delegation';
import type { ServedTask, ServedTaskRepository } from './served-task-repository';

type RpcId = string | number | null;

export interface RpcResponse {
  jsonrpc: '2.0';
  id: RpcId;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** What serving A2A reads (a ToolHost, the App, satisfies it). */
export interface A2aAgentHost {
  readonly config: Config;
  readonly agent: Pick<AgentService, 'send' | 'wait' | 'cancelRun' | 'result'>;
  readonly runs: Pick<RunLedger, 'require'>;
  readonly sessions: Pick<SessionStore, 'get'>;
  readonly remote: Pick<RemoteAgents, 'served'>;
  readonly clock: Clock;
  readonly redactor: Redactor;
  readonly log: Logger;
}

/** The host's services plus the served-tasks repository (the App's, on its store). */
interface Served {
  host: A2aAgentHost;
  tasks: ServedTaskRepository;
}

/** The agent card of this process, with its JSON-RPC endpoint under `baseUrl`. */
export function buildAgentCard(app: { readonly config: Config }, baseUrl: string): Record<string, unknown> {
  const a2a = app.config.a2a;
  const kind = agentKind(app.config, a2a.agent, 'primary');
  const skills = a2a.skills.length
    ? a2a.skills.map((skill) => ({
        id: skill.id,
        name: skill.name ?? skill.id,
        description: skill.description ?? kind.description,
        tags: skill.tags,
        ...(skill.examples ? { examples: skill.examples } : {}),
      }))
    : [
        {
          id: kind.id,
          name: kind.id,
          description: kind.description,
          tags: [kind.id, 'coding', 'workspace'],
        },
      ];
  return {
    protocolVersion: A2A_PROTOCOL_VERSION,
    name: a2a.name ?? 'svc',
    description: a2a.description ?? kind.description,
    url: `${baseUrl.replace(/\/$/, '')}${RPC_PATH}`,
    preferredTransport: 'JSONRPC',
    version: VERSION,
    provider: { organization: 'svc', url: baseUrl },
    capabilities: { streaming: false, pushNotifications: false, stateTransitionHistory: false },
    // spec, HTTP server authentication: every route but /healthz needs the bearer token.
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    security: [{ bearer: [] }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills,
  };
}

/** Handle one parsed JSON-RPC request body. Never throws: failures are JSON-RPC errors. */
export async function handleA2aRpc(
  app: A2aAgentHost,
  body: unknown,
  signal: AbortSignal,
): Promise<RpcResponse> {
  const served: Served = { host: app, tasks: app.remote.served };
  const request = body as { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown } | null;
  const id: RpcId =
    request && (typeof request.id === 'string' || typeof request.id === 'number') ? request.id : null;
  if (!request || typeof request !== 'object' || Array.isArray(request)) {
    return rpcError(null, RPC_ERRORS.invalidRequest, 'Invalid Request: expected a JSON-RPC 2.0 object');
  }
  if (request.jsonrpc !== '2.0' || typeof request.method !== 'string') {
    return rpcError(
      id,
      RPC_ERRORS.invalidRequest,
      'Invalid Request: jsonrpc must be "2.0" and method a string',
    );
  }
  const params = (request.params ?? {}) as Record<string, unknown>;
  try {
    switch (request.method) {
      case 'message/send':
        return { jsonrpc: '2.0', id, result: await sendMessage(served, params, signal) };
      case 'tasks/get':
        return { jsonrpc: '2.0', id, result: await getTask(served, params) };
      case 'tasks/cancel':
        return { jsonrpc: '2.0', id, result: await cancelTask(served, params) };
      case 'message/stream':
      case 'tasks/resubscribe':
        return rpcError(
          id,
          RPC_ERRORS.unsupportedOperation,
          `${request.method}: this agent does not stream (capabilities.streaming is false)`,
        );
      case 'tasks/pushNotificationConfig/set':
      case 'tasks/pushNotificationConfig/get':
      case 'tasks/pushNotificationConfig/list':
      case 'tasks/pushNotificationConfig/delete':
        return rpcError(id, RPC_ERRORS.pushNotSupported, 'push notifications are not supported');
      default:
        return rpcError(id, RPC_ERRORS.methodNotFound, `Method not found: ${request.method}`);
    }
  } catch (error) {
    if (error instanceof RpcFailure) return rpcError(id, error.code, error.message);
    if (SvcError.is(error)) {
      const code = error.code === 'invalid_input' ? RPC_ERRORS.invalidParams : RPC_ERRORS.internal;
      return rpcError(id, code, app.redactor.string(error.message));
    }
    app.log.error('a2a request failed', { method: request.method, error });
    return rpcError(id, RPC_ERRORS.internal, 'Internal error');
  }
}

class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

async function sendMessage(
  { host: app, tasks }: Served,
  params: Record<string, unknown>,
  signal: AbortSignal,
) {
  const parsed = messageSchema().safeParse(params.message);
  if (!parsed.success)
    throw new RpcFailure(RPC_ERRORS.invalidParams, 'params.message: expected an A2A message with parts');
  const message = parsed.data;
  const text = partsText(message.parts).trim();
  if (!text) throw new RpcFailure(RPC_ERRORS.invalidParams, 'params.message.parts: no text part to work on');
  const configuration = (params.configuration ?? {}) as { blocking?: unknown };
  const blocking = configuration.blocking !== false;
  const a2a = app.config.a2a;

  const contextId = message.contextId ?? undefined;
  const known = contextId ? await servedByContext({ host: app, tasks }, contextId) : undefined;
  const sent = await app.agent.send({
    sessionId: known?.session_id,
    prompt: text,
    agent: a2a.agent,
    model: a2a.model,
    origin: 'a2a',
    title: `A2A: ${text.split('\n')[0].slice(0, 60)}`,
  });
  const served: ServedTask = {
    task_id: sent.run_id,
    context_id: contextId ?? sent.session_id,
    session_id: sent.session_id,
  };
  await tasks.insert(served, app.clock.now());
  app.log.info('a2a task accepted', { task_id: served.task_id, session_id: served.session_id, blocking });

  if (blocking) {
    const limit = AbortSignal.timeout(a2a.max_wait_seconds * 1000);
    try {
      await app.agent.wait(sent.run_id, { signal: AbortSignal.any([signal, limit]) });
    } catch (error) {
      // Waited long enough (or the client went away): answer with the task as it stands.
      if (!limit.aborted && !signal.aborted) throw error;
    }
  }
  return await taskOf(app, served);
}

async function getTask(context: Served, params: Record<string, unknown>) {
  return await taskOf(context.host, await requireServed(context, params));
}

async function cancelTask(context: Served, params: Record<string, unknown>) {
  const app = context.host;
  const served = await requireServed(context, params);
  const run = await app.runs.require(served.task_id);
  if (run.status !== 'queued' && run.status !== 'running') {
    throw new RpcFailure(
      RPC_ERRORS.taskNotCancelable,
      `task ${served.task_id} is already ${stateOf(run.status)}`,
    );
  }
  await app.agent.cancelRun(served.task_id, 'cancelled by the A2A client');
  return await taskOf(app, served);
}

async function requireServed({ tasks }: Served, params: Record<string, unknown>): Promise<ServedTask> {
  if (typeof params.id !== 'string' || !params.id)
    throw new RpcFailure(RPC_ERRORS.invalidParams, 'params.id: give the task id');
  const row = await tasks.get(params.id);
  if (!row) throw new RpcFailure(RPC_ERRORS.taskNotFound, `Task not found: ${params.id}`);
  return row;
}

async function servedByContext(
  { host: app, tasks }: Served,
  contextId: string,
): Promise<ServedTask | undefined> {
  const row = await tasks.latestInContext(contextId);
  if (row && (await app.sessions.get(row.session_id))) return row;
  // A context this agent created is a session id.
  if (await app.sessions.get(contextId)) return { task_id: '', context_id: contextId, session_id: contextId };
  return undefined;
}

function stateOf(status: string): TaskState {
  switch (status) {
    case 'queued':
      return 'submitted';
    case 'running':
      return 'working';
    case 'completed':
      return 'completed';
    case 'cancelled':
      return 'canceled';
    case 'failed':
    case 'interrupted':
      return 'failed';
    default:
      return 'unknown';
  }
}

async function taskOf(app: A2aAgentHost, served: ServedTask) {
  const result: RunResult = await app.agent.result(served.task_id);
  const state = stateOf(result.status);
  const at = result.finished_at ?? result.started_at ?? app.clock.now();
  const text = state === 'failed' ? (result.error ?? result.reason ?? 'the run failed') : result.text;
  const agentMessage = (body: string) => ({
    kind: 'message',
    role: 'agent',
    messageId: `${served.task_id}-status`,
    taskId: served.task_id,
    contextId: served.context_id,
    parts: [{ kind: 'text', text: app.redactor.string(body) }],
  });
  return {
    kind: 'task',
    id: served.task_id,
    contextId: served.context_id,
    status: {
      state,
      timestamp: new Date(at).toISOString(),
      ...(text ? { message: agentMessage(text) } : {}),
    },
    artifacts:
      state === 'completed' && result.text
        ? [
            {
              artifactId: `${served.task_id}-result`,
              name: 'result',
              parts: [{ kind: 'text', text: app.redactor.string(result.text) }],
            },
          ]
        : [],
    metadata: {
      svc: {
        session_id: served.session_id,
        run_id: served.task_id,
        agent: result.agent,
        model: result.model,
        steps: result.steps,
        ...(result.reason ? { reason: result.reason } : {}),
      },
    },
  };
}

function rpcError(id: RpcId, code: number, message: string): RpcResponse {
  return { jsonrpc: '2.0', id, error: { code, message } };
}
