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
 * This file holds the connection and its handlers; a prompt turn is turn.ts (with turn-events.ts
 * and permission-relay.ts). stdout carries protocol frames only; logs go to the log file.
 * @module
 */
import { realpathSync } from 'node:fs';
import { isAbsolute, parse, resolve } from 'node:path';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk/unstable';
import type { App } from '../../app';
import { SvcError, toSvcError } from '../../errors';
import type { Logger } from '../../log';
import { VERSION } from '../../version';
import { createAppPool } from './app-pool';
import { promptText, providerInfo, replayUpdates } from './mapping';
import { runTurn } from './turn';
import type { OpenSession } from './turn-context';

export interface AcpServerOptions {
  /** Open the App of another workspace (a `workspaceKey`: the cwd of `session/new`, `session/load`). */
  openApp(workspace: string): Promise<App>;
  /** The launch workspace's app: `providers/list` and logs; always open. */
  app: App;
  log: Logger;
  /** The user's home directory: not a workspace a session may name. */
  home?: string;
  /** Most workspace Apps open at once, the launch one included (default 8). */
  maxApps?: number;
}

/** The agent side of one ACP connection. */
export function createAcpAgent(options: AcpServerOptions): { agent: acp.AgentApp; close(): Promise<void> } {
  const { log } = options;
  const sessions = new Map<string, OpenSession>();
  const pool = createAppPool({
    launch: { key: workspaceKey(options.app.workspace), app: options.app },
    open: options.openApp,
    busy: (key) => [...sessions.values()].some((s) => s.workspace === key && s.running > 0),
    onEvict: (key) => {
      for (const session of sessions.values()) {
        if (session.workspace !== key || session.evicted) continue;
        for (const ask of session.asks.values()) ask.abort();
        session.detach();
        session.evicted = true;
      }
    },
    max: options.maxApps,
    log,
  });
  const appFor = (cwd: string) => pool.acquire(checkedWorkspace(cwd, options.home));

  const open = async (sessionId: string, cwd: string): Promise<OpenSession> => {
    const existing = sessions.get(sessionId);
    if (existing) return existing;
    const workspace = checkedWorkspace(cwd, options.home);
    const app = await pool.acquire(workspace);
    const session: OpenSession = {
      workspace,
      app,
      // An attached client: the agent's permission requests wait for its answer.
      detach: app.agent.attach(sessionId, 'acp'),
      asks: new Map(),
      running: 0,
      evicted: false,
    };
    sessions.set(sessionId, session);
    return session;
  };
  /** The open session, its App reopened (and reattached) when the pool closed it meanwhile. */
  const require = async (sessionId: string): Promise<OpenSession> => {
    const session = sessions.get(sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(sessionId);
    const app = await pool.acquire(session.workspace);
    if (session.evicted || session.app !== app) {
      if (!session.evicted) session.detach();
      session.app = app;
      session.detach = app.agent.attach(sessionId, 'acp');
      session.evicted = false;
    }
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
        const app = await appFor(params.cwd);
        ignoredMcpServers(log, params.mcpServers);
        const session = await app.agent.createSession({ title: '' });
        await open(session.id, params.cwd);
        log.info('acp session opened', { session_id: session.id, workspace: app.workspace });
        return { sessionId: session.id };
      }),
    )
    .onRequest('session/load', ({ params, client }) =>
      guard(async () => {
        const app = await appFor(params.cwd);
        if (!(await app.sessions.get(params.sessionId)))
          throw acp.RequestError.sessionNotFound(params.sessionId);
        ignoredMcpServers(log, params.mcpServers);
        await open(params.sessionId, params.cwd);
        for (const update of replayUpdates(await app.sessions.messages(params.sessionId), app.workspace))
          await client.notify('session/update', { sessionId: params.sessionId, update });
        return {};
      }),
    )
    .onRequest('session/prompt', ({ params, client }) =>
      guard(async () => {
        const text = promptText(params.prompt);
        if (!text) throw acp.RequestError.invalidParams(undefined, 'prompt: no text in the prompt blocks');
        const session = await require(params.sessionId);
        session.running++;
        try {
          return await runTurn(session, params.sessionId, text, client, log);
        } finally {
          session.running--;
        }
      }),
    )
    .onNotification('session/cancel', async ({ params }) => {
      const session = sessions.get(params.sessionId);
      if (!session || session.evicted) return;
      for (const ask of session.asks.values()) ask.abort();
      try {
        await session.app.agent.cancel(params.sessionId, { reason: 'cancelled by the ACP client' });
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
    async close() {
      for (const session of sessions.values()) {
        for (const ask of session.asks.values()) ask.abort();
        if (!session.evicted) session.detach();
      }
      sessions.clear();
      await pool.close();
    },
  };
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
    await close();
  }
}

/**
 * The workspace key of a session's cwd, refused (invalid params) unless it is an absolute path
 * (ACP requires one) other than the filesystem root and the home directory itself.
 */
export function checkedWorkspace(cwd: string, home: string | undefined): string {
  if (typeof cwd !== 'string' || !isAbsolute(cwd)) {
    throw new SvcError('invalid_input', `cwd must be an absolute path (ACP), got ${JSON.stringify(cwd)}`);
  }
  const key = workspaceKey(cwd);
  if (key === parse(key).root) {
    throw new SvcError(
      'invalid_input',
      `cwd ${JSON.stringify(cwd)} is the filesystem root; open a project directory`,
    );
  }
  if (home && isAbsolute(home) && key === workspaceKey(home)) {
    throw new SvcError(
      'invalid_input',
      `cwd ${JSON.stringify(cwd)} is the home directory; open a project directory`,
    );
  }
  return key;
}

/** The workspace key of a cwd (symlinks resolved), for reusing one App per workspace. */
export function workspaceKey(cwd: string): string {
  try {
    return realpathSync(resolve(cwd));
  } catch {
    return resolve(cwd);
  }
}
