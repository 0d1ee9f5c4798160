/**
 * `svc service start mcp`: a minimal MCP-only runtime bound to one session, over stdio (stdout
 * carries only protocol frames) or streamable HTTP on a loopback address.
 * @module
 */
import type { Readable, Writable } from 'node:stream';
import type { App } from '../../app';
import { SvcError } from '../../errors';
import { isLoopbackHost } from '../http/server';
import { servedTools } from './exposed-tools';
import { startMcpHttp } from './http-transport';
import { createMcpServer } from './server';
import { StrictStdioServerTransport } from './stdio-transport';

export type McpTransportKind = 'stdio' | 'http';

export interface McpServiceOptions {
  transport?: McpTransportKind;
  /** Bind to this session; default a new session created for this server. */
  sessionId?: string;
  stdin?: Readable;
  stdout?: Writable;
  host?: string;
  port?: number;
  /** `bearer` requires the token; `none` serves without one. Default: `[services.mcp]`. */
  auth?: 'bearer' | 'none';
  token?: string;
}

export interface McpService {
  /** The bound session; reading it creates the server's own session when none exists yet. */
  readonly sessionId: string;
  /**
   * Set when `services.mcp.exposed_tools` is unset: which tools the read-only default serves and
   * how to widen the set (the CLI prints it on stderr).
   */
  notice?: string;
  transport: McpTransportKind;
  /** The streamable HTTP endpoint (http transport only). */
  url?: string;
  /** Set when the auth settings make every request fail (bearer without a token). */
  warning?: string;
  /** Resolves once the service has stopped (client gone, close() called). */
  closed: Promise<void>;
  close(): Promise<void>;
}

async function drain(inflight: Set<Promise<unknown>>): Promise<void> {
  await new Promise((r) => setImmediate(r));
  const deadline = Date.now() + 10_000;
  while (inflight.size && Date.now() < deadline) {
    await Promise.race([Promise.allSettled([...inflight]), new Promise((r) => setTimeout(r, 250))]);
  }
  await new Promise((r) => setImmediate(r));
}

export interface ServiceAuth {
  token?: string;
  allowNoAuth: boolean;
  warning?: string;
}

/**
 * The HTTP service's bearer rules (surfaces/http/server.ts), fed by flags first and
 * `[services.mcp]` second: a configured token is always required; without one, `--auth none`
 * (or `allow_no_auth`) lets requests pass on a loopback host only, and a non-loopback host is
 * refused at start.
 */
export function resolveServiceAuth(
  flags: { auth?: 'bearer' | 'none'; token?: string },
  config: { token?: string; allow_no_auth: boolean },
  host: string,
): ServiceAuth {
  if (flags.token === '') throw new SvcError('invalid_input', '--token: empty token');
  if (flags.token !== undefined && flags.auth === 'none') {
    throw new SvcError(
      'invalid_input',
      '--auth none conflicts with --token: a configured token is always required; drop one of them',
    );
  }
  const token = flags.token || config.token || undefined;
  const loopback = isLoopbackHost(host);
  if (!loopback && !token) {
    throw new SvcError(
      'config_error',
      `refusing to listen on ${host} without a token: set --token, [services.mcp].token or SVC_MCP_TOKEN` +
        ' (unauthenticated access is only allowed on a loopback host such as 127.0.0.1)',
    );
  }
  const allowNoAuth = loopback && (flags.auth !== undefined ? flags.auth === 'none' : config.allow_no_auth);
  const warning =
    !token && !allowNoAuth
      ? 'no token configured (--token, [services.mcp].token or SVC_MCP_TOKEN): every request gets 401 authentication required'
      : undefined;
  return { token, allowNoAuth, warning };
}

export async function startMcpService(app: App, options: McpServiceOptions = {}): Promise<McpService> {
  const log = app.log.child({ component: 'mcp-server' });
  const settings = app.config.services.mcp;
  const transport = options.transport ?? settings.transport;
  const { exposed, defaulted } = servedTools(app);
  const host = options.host ?? settings.host;
  const auth = transport === 'http' ? resolveServiceAuth(options, settings, host) : undefined;

  if (options.sessionId && !(await app.sessions.get(options.sessionId))) {
    throw new SvcError(
      'invalid_input',
      `--session-id: no session "${options.sessionId}"; see svc session list`,
    );
  }
  // No session until a tool reads one: listing tools or a status readout leaves the session list alone.
  let created = options.sessionId;
  // The id is reserved at once (a tool reads ctx.sessionId synchronously); the row is written by
  // the create call, which the SQLite store runs before it returns its promise.
  const boundSession = (): string => {
    if (created) return created;
    const id = app.ids.next('ses');
    created = id;
    app.sessions
      .create({ id, title: 'MCP server', metadata: { created_by: 'mcp_server' } })
      .catch((error: unknown) => {
        if (created === id) created = undefined;
        log.warn('mcp session could not be created', { error });
      });
    return id;
  };
  app.runtime.surfaces.add('mcp');
  app.runtime.server = true;
  app.runtime.mcpOnly = true;

  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolvePromise) => {
    resolveClosed = resolvePromise;
  });
  const teardown: (() => Promise<void>)[] = [];
  let closing = false;
  const close = async () => {
    if (closing) return closed;
    closing = true;
    for (const step of teardown.reverse()) {
      try {
        await step();
      } catch (error) {
        log.warn('mcp service teardown failed', { error });
      }
    }
    log.info('mcp server stopped', { session_id: created });
    resolveClosed();
  };

  let url: string | undefined;
  if (transport === 'stdio') {
    const stdin = options.stdin ?? process.stdin;
    const stdout = options.stdout ?? process.stdout;
    const inflight = new Set<Promise<unknown>>();
    const server = createMcpServer(app, {
      sessionId: boundSession,
      exposed,
      trackCall: (call) => {
        inflight.add(call);
        void call.finally(() => inflight.delete(call)).catch(() => {});
      },
    });
    // Like the SDK's stdio transport, but a line that is not JSON(-RPC) is answered (-32700/-32600).
    const stdio = new StrictStdioServerTransport(stdin, stdout);
    // The SDK transport does not watch for end of input: a host that goes away closes stdin.
    // Requests already read still get their answers (bounded), then the service stops.
    const onEnd = () => void drain(inflight).then(close);
    stdin.once('end', onEnd);
    stdin.once('close', onEnd);
    stdout.once('error', onEnd);
    server.onclose = onEnd;
    teardown.push(async () => {
      stdin.off('end', onEnd);
      stdin.off('close', onEnd);
      server.onclose = undefined;
      await server.close();
    });
    await server.connect(stdio);
  } else {
    const http = await startMcpHttp({
      host,
      port: options.port ?? settings.port ?? 0,
      token: auth?.token,
      allowNoAuth: auth?.allowNoAuth ?? false,
      makeServer: () => createMcpServer(app, { sessionId: boundSession, exposed }),
      log,
      limits: settings,
    });
    url = http.url;
    teardown.push(() => http.close());
  }

  app.runtime.ready = true;
  log.info('mcp server started', {
    session_id: created,
    default_tools: defaulted,
    transport,
    url,
    exposed_tools: exposed.map((e) => e.mcpName),
  });
  const notice = defaulted ? defaultNotice(exposed.map((e) => e.mcpName)) : undefined;
  return {
    get sessionId() {
      return boundSession();
    },
    notice,
    transport,
    url,
    warning: auth?.warning,
    closed,
    close,
  };
}

function defaultNotice(names: string[]): string {
  return (
    `services.mcp.exposed_tools is unset: serving the ${names.length} read-only tools (${names.join(', ')}). ` +
    'To choose the set, list MCP tool names in [services.mcp] exposed_tools in svc.toml (names: svc tools, docs/mcp.md); exposed_tools = [] serves none.'
  );
}
