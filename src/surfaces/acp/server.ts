/**
 * `svc acp`: svc as an Agent Client Protocol agent (JSON-RPC 2.0, one message per line on
 * stdio), the way editors such as Zed launch agents. Built on the official SDK
 * (`@agentclientprotocol/sdk`); every call goes through the one session API (`app.agent`):
 *
 * - `initialize`, `session/new`, `session/load` (replays the stored conversation),
 * - `session/prompt`: sends the prompt and streams `session/update` notifications from the
 *   session's bus events (message and thought chunks, tool calls with their status, kind,
 *   locations and diffs, the plan from the todo list and the staged plan) until the run ends,
 * - `session/cancel`, and permission requests relayed to the client as
 *   `session/request_permission` (the client is attached, so the agent waits for its answer),
 * - `providers/list`: model picker rows from `app.providers`, unavailable providers included.
 *
 * stdout carries protocol frames only; logs go to the log file.
 * @module
 */
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk/unstable';
import type { App } from '../../app';
import { toSvcError } from '../../errors';
import type { SessionEvent } from '../../events/bus';
import type { SessionEventPayloads } from '../../events/types';
import type { Logger } from '../../log';
import type { PermissionDecision } from '../../permissions/permission-service';
import { callTool, invokeTool } from '../../tools/core/call-tool';
import { VERSION } from '../../version';
import {
  markdownPlan,
  promptText,
  providerInfo,
  replayUpdates,
  stopReason,
  todoPlan,
  toolKind,
  toolLocations,
} from './mapping';

export interface AcpServerOptions {
  /** The App of a workspace (the cwd of `session/new` and `session/load`). */
  appFor(cwd: string): Promise<App>;
  /** The launch workspace's app: `providers/list` and logs. */
  app: App;
  log: Logger;
}

/** Permission options offered to the client, and the svc decision each one means. */
const PERMISSION_OPTIONS: {
  optionId: string;
  name: string;
  kind: acp.PermissionOptionKind;
  decision: PermissionDecision;
}[] = [
  { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once', decision: 'allow_once' },
  {
    optionId: 'allow_session',
    name: 'Allow for this session',
    kind: 'allow_always',
    decision: 'allow_session',
  },
  { optionId: 'deny', name: 'Deny', kind: 'reject_once', decision: 'deny' },
];

interface OpenSession {
  app: App;
  detach(): void;
  /** Outstanding permission requests to the client, by svc request id. */
  asks: Map<string, AbortController>;
}

/** The agent side of one ACP connection. */
export function createAcpAgent(options: AcpServerOptions): { agent: acp.AgentApp; close(): void } {
  const { log } = options;
  const sessions = new Map<string, OpenSession>();

  const open = async (sessionId: string, cwd: string): Promise<OpenSession> => {
    const existing = sessions.get(sessionId);
    if (existing) return existing;
    const app = await options.appFor(cwd);
    const session: OpenSession = {
      app,
      // An attached client: the agent's permission requests wait for its answer.
      detach: app.agent.attach(sessionId, 'acp'),
      asks: new Map(),
    };
    sessions.set(sessionId, session);
    return session;
  };
  const require = (sessionId: string): OpenSession => {
    const session = sessions.get(sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(sessionId);
    return session;
  };

  const agent = acp
    .agent({ name: 'svc' })
    .onRequest('initialize', () => ({
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: true,
        promptCapabilities: { image: false, audio: false, embeddedContext: true },
        mcpCapabilities: { http: false, sse: false },
        providers: {},
      },
      agentInfo: { name: 'svc', title: 'svc', version: VERSION },
      authMethods: [],
    }))
    .onRequest('session/new', ({ params }) =>
      guard(async () => {
        const app = await options.appFor(params.cwd);
        ignoredMcpServers(log, params.mcpServers);
        const session = app.agent.createSession({ title: '' });
        await open(session.id, params.cwd);
        log.info('acp session opened', { session_id: session.id, workspace: app.workspace });
        return { sessionId: session.id };
      }),
    )
    .onRequest('session/load', ({ params, client }) =>
      guard(async () => {
        const app = await options.appFor(params.cwd);
        if (!app.sessions.get(params.sessionId)) throw acp.RequestError.sessionNotFound(params.sessionId);
        ignoredMcpServers(log, params.mcpServers);
        await open(params.sessionId, params.cwd);
        for (const update of replayUpdates(app.sessions.messages(params.sessionId), app.workspace))
          await client.notify('session/update', { sessionId: params.sessionId, update });
        return {};
      }),
    )
    .onRequest('session/prompt', ({ params, client }) =>
      guard(async () => {
        const session = require(params.sessionId);
        const text = promptText(params.prompt);
        if (!text) throw acp.RequestError.invalidParams(undefined, 'prompt: no text in the prompt blocks');
        return await runTurn(session, params.sessionId, text, client, log);
      }),
    )
    .onNotification('session/cancel', ({ params }) => {
      const session = sessions.get(params.sessionId);
      if (!session) return;
      for (const ask of session.asks.values()) ask.abort();
      try {
        session.app.agent.cancel(params.sessionId, { reason: 'cancelled by the ACP client' });
      } catch (error) {
        log.warn('acp cancel failed', { error });
      }
    })
    .onRequest('providers/list', () =>
      guard(async () => {
        const { providers } = options.app;
        return {
          providers: providers.entries().map((entry) => providerInfo(entry, providers.readiness(entry))),
        };
      }),
    );

  return {
    agent,
    close() {
      for (const session of sessions.values()) {
        for (const ask of session.asks.values()) ask.abort();
        session.detach();
      }
      sessions.clear();
    },
  };

  async function runTurn(
    session: OpenSession,
    sessionId: string,
    text: string,
    client: acp.AgentContext,
    log: Logger,
  ): Promise<acp.PromptResponse> {
    const { app } = session;
    // Notifications go out in event order, and all of them before the prompt's response.
    let chain: Promise<unknown> = Promise.resolve();
    const update = (u: acp.SessionUpdate) => {
      chain = chain
        .then(() => client.notify('session/update', { sessionId, update: u }))
        .catch((error) => log.warn('acp update failed', { error }));
    };
    let runId: string | undefined;
    const early: SessionEvent[] = [];
    const diffs = new Map<string, acp.ToolCallContent[]>();
    const running: { id: string; tool: string }[] = [];

    const onEvent = (event: SessionEvent) => {
      const p = event.payload as Record<string, unknown>;
      if (!runId) {
        early.push(event);
        return;
      }
      if (typeof p.run_id === 'string' && p.run_id !== runId) return;
      switch (event.type) {
        case 'message.delta': {
          const e = p as SessionEventPayloads['message.delta'];
          update({
            sessionUpdate: e.part === 'reasoning' ? 'agent_thought_chunk' : 'agent_message_chunk',
            content: { type: 'text', text: e.delta },
          });
          return;
        }
        case 'tool.started': {
          const e = p as SessionEventPayloads['tool.started'];
          running.push({ id: e.tool_call_id, tool: e.tool });
          update({
            sessionUpdate: 'tool_call',
            toolCallId: e.tool_call_id,
            title: e.title || e.tool,
            kind: toolKind(e.tool),
            status: 'in_progress',
            locations: toolLocations(e.tool, e.title, app.workspace),
          });
          return;
        }
        case 'file.changed': {
          const e = p as SessionEventPayloads['file.changed'];
          const call = [...running].reverse().find((c) => c.tool === e.tool);
          const diff = call ? fileDiff(app, sessionId, e.path) : undefined;
          if (call && diff) diffs.set(call.id, [...(diffs.get(call.id) ?? []), diff]);
          return;
        }
        case 'tool.finished': {
          const e = p as SessionEventPayloads['tool.finished'];
          const at = running.findIndex((c) => c.id === e.tool_call_id);
          if (at !== -1) running.splice(at, 1);
          update({
            sessionUpdate: 'tool_call_update',
            toolCallId: e.tool_call_id,
            status: e.is_error ? 'failed' : 'completed',
            content: [
              ...(diffs.get(e.tool_call_id) ?? []),
              ...(e.summary
                ? [{ type: 'content' as const, content: { type: 'text' as const, text: e.summary } }]
                : []),
            ],
          });
          if (e.tool === 'todos' && !e.is_error)
            update({ sessionUpdate: 'plan', entries: todoPlan(app.ws.todos.get(sessionId).todos) });
          return;
        }
        case 'plan.updated': {
          const e = p as SessionEventPayloads['plan.updated'];
          void planEntries(app, sessionId, e.has_plan).then((entries) =>
            update({ sessionUpdate: 'plan', entries }),
          );
          return;
        }
        case 'permission.requested':
          askClient(p as SessionEventPayloads['permission.requested']);
          return;
        case 'permission.resolved': {
          // Answered elsewhere (the TUI, an HTTP client): stop waiting for this client.
          const e = p as SessionEventPayloads['permission.resolved'];
          session.asks.get(e.request_id)?.abort();
          return;
        }
        default:
          return;
      }
    };

    const askClient = (e: SessionEventPayloads['permission.requested']) => {
      const pending = app.agent.pendingPermissions(sessionId).find((r) => r.request_id === e.request_id);
      const toolCallId = pending?.tool_call_id ?? `permission-${e.request_id}`;
      const diff = typeof e.details?.diff === 'string' ? e.details.diff : undefined;
      const command = typeof e.details?.command === 'string' ? e.details.command : undefined;
      const shown = diff
        ? `\`\`\`diff\n${diff}\n\`\`\``
        : command
          ? `\`\`\`sh\n${command}\n\`\`\``
          : undefined;
      const cancel = new AbortController();
      session.asks.set(e.request_id, cancel);
      chain = chain.then(() => {
        // Not awaited by the chain: updates keep flowing while the client decides.
        void client
          .request(
            'session/request_permission',
            {
              sessionId,
              toolCall: {
                toolCallId,
                title: e.title,
                kind: toolKind(e.tool),
                status: 'pending',
                ...(shown ? { content: [{ type: 'content', content: { type: 'text', text: shown } }] } : {}),
              },
              options: PERMISSION_OPTIONS.map(({ decision: _, ...o }) => o),
            },
            { cancellationSignal: cancel.signal, stopWaitingOnCancel: true },
          )
          .then(
            (response) => {
              const { outcome } = response as acp.RequestPermissionResponse;
              const decision =
                outcome.outcome === 'selected'
                  ? (PERMISSION_OPTIONS.find((o) => o.optionId === outcome.optionId)?.decision ?? 'deny')
                  : 'deny';
              answer(e.request_id, decision);
            },
            (error) => {
              if (!cancel.signal.aborted) {
                log.warn('acp permission request failed', { error });
                answer(e.request_id, 'deny');
              }
            },
          )
          .finally(() => session.asks.delete(e.request_id));
      });
    };
    const answer = (requestId: string, decision: PermissionDecision) => {
      // Through answer_permission, like every client. First answer wins: another client (or a
      // cancel) may have answered it already.
      void callTool(
        app,
        'answer_permission',
        { session_id: sessionId, request_id: requestId, decision },
        { surface: 'acp', sessionId },
      ).then((outcome) => {
        if (!outcome.ok) log.debug('acp permission answer not taken', { error: outcome.error });
      });
    };

    const unsubscribe = app.agent.subscribe(sessionId, onEvent);
    try {
      const sent = app.agent.send({ sessionId, prompt: text, origin: 'acp' });
      runId = sent.run_id;
      for (const event of early.splice(0)) onEvent(event);
      if (!app.sessions.require(sessionId).title)
        update({ sessionUpdate: 'session_info_update', title: text.split('\n')[0].slice(0, 80) });
      const result = await app.agent.wait(sent.run_id);
      await chain;
      const title = app.sessions.require(sessionId).title;
      if (title)
        await client.notify('session/update', {
          sessionId,
          update: { sessionUpdate: 'session_info_update', title },
        });
      const reason = stopReason(result);
      if (!reason) {
        throw new acp.RequestError(-32603, result.error ?? `the run ${result.status}`, {
          run_id: result.run_id,
          status: result.status,
          reason: result.reason,
        });
      }
      return {
        stopReason: reason,
        usage: {
          inputTokens: result.usage.input_tokens,
          outputTokens: result.usage.output_tokens,
          totalTokens: result.usage.input_tokens + result.usage.output_tokens,
          ...(result.usage.reasoning_tokens ? { thoughtTokens: result.usage.reasoning_tokens } : {}),
          ...(result.usage.cached_input_tokens ? { cachedReadTokens: result.usage.cached_input_tokens } : {}),
        },
        _meta: {
          svc: { run_id: result.run_id, steps: result.steps, cost: result.cost, model: result.model },
        },
      };
    } finally {
      unsubscribe();
    }
  }
}

/** The latest recorded change of a file in this session, as an ACP diff. */
function fileDiff(app: App, sessionId: string, path: string): acp.ToolCallContent | undefined {
  const changes = app.ws.history.list({ sessionId, path });
  const last = changes[changes.length - 1];
  const change = last ? app.ws.history.get(last.id) : undefined;
  if (!change || change.after === null) return undefined;
  return {
    type: 'diff',
    path: resolve(app.workspace, path),
    oldText: change.before,
    newText: change.after,
  };
}

/** The staged plan's list items (read like the TUI reads it: an operator client's direct call). */
async function planEntries(app: App, sessionId: string, hasPlan: boolean): Promise<acp.PlanEntry[]> {
  if (!hasPlan) return [];
  try {
    const plan = (await invokeTool(
      app,
      'get_plan',
      { session_id: sessionId },
      { surface: 'acp', sessionId },
    )) as {
      plan?: { markdown?: string } | null;
      markdown?: string;
    };
    return markdownPlan(plan.plan?.markdown ?? plan.markdown ?? '');
  } catch {
    return [];
  }
}

function ignoredMcpServers(log: Logger, servers: readonly unknown[]): void {
  if (servers.length)
    log.warn('acp: client MCP servers are not used; configure [mcp.<id>] in svc.toml instead', {
      count: servers.length,
    });
}

/** SvcErrors become JSON-RPC errors with the svc code in `data` (messages are already redacted). */
async function guard<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof acp.RequestError) throw error;
    const e = toSvcError(error);
    const code = e.code === 'invalid_input' ? -32602 : e.code === 'not_found' ? -32002 : -32603;
    throw new acp.RequestError(code, e.message, {
      code: e.code,
      ...(e.details ? { details: e.details } : {}),
    });
  }
}

/** Serve one ACP connection on a pair of byte streams (stdin/stdout) until the client goes away. */
export async function serveAcp(
  options: AcpServerOptions & {
    input: NodeJS.ReadableStream;
    output: NodeJS.WritableStream;
    /** Aborting closes the connection (SIGTERM, SIGINT). */
    signal?: AbortSignal;
  },
): Promise<void> {
  const { agent, close } = createAcpAgent(options);
  const stream = acp.ndJsonStream(
    Writable.toWeb(options.output as Writable) as WritableStream<Uint8Array>,
    Readable.toWeb(options.input as Readable) as ReadableStream<Uint8Array>,
  );
  const connection = agent.connect(stream);
  const stop = () => connection.close();
  options.signal?.addEventListener('abort', stop, { once: true });
  try {
    await connection.closed;
  } finally {
    options.signal?.removeEventListener('abort', stop);
    close();
  }
}

/** The workspace key of a cwd (symlinks resolved), for reusing one App per workspace. */
export function workspaceKey(cwd: string): string {
  try {
    return realpathSync(resolve(cwd));
  } catch {
    return resolve(cwd);
  }
}
