/**
 * Streamable HTTP for `svc service start mcp --transport http`: one SDK transport and one Server
 * per MCP session, behind the HTTP service's bearer rules (`surfaces/http/auth.ts`), on a
 * loopback address with DNS-rebinding protection.
 * @module
 */
import { randomUUID } from 'node:crypto';
import type { Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { Hono } from 'hono';
import { SvcError } from '../../errors';
import type { Logger } from '../../log';
import { readBodyCapped } from '../../util/read-body';
import { bearerAuth, openRouteRefusal } from '../http/auth';
import { type ConnectionLimits, connectionOptions, limitConnections } from '../http/connection-limits';

export const MCP_HTTP_PATH = '/mcp';

export interface McpHttpOptions {
  host: string;
  port: number;
  token?: string;
  allowNoAuth: boolean;
  /** A fresh Server for each MCP session. */
  makeServer: () => Server;
  log: Logger;
  /** `[services.mcp]`'s `max_connections` and `headers_timeout_seconds`. */
  limits: ConnectionLimits;
}

export interface McpHttpHandle {
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function startMcpHttp(options: McpHttpOptions): Promise<McpHttpHandle> {
  const transports = new Map<string, WebStandardStreamableHTTPServerTransport>();
  let allowedHosts: string[] = [];
  const hono = new Hono();
  // No bearer on /healthz, but with no token only a loopback Host, as the HTTP service (auth.ts).
  const tokenHint = '--token or SVC_MCP_TOKEN';
  const refuseHost = openRouteRefusal(() => options.token, undefined, tokenHint);
  hono.get('/healthz', (c) => refuseHost(c) ?? c.json({ ok: true }));
  hono.use(bearerAuth({ token: () => options.token, allowNoAuth: () => options.allowNoAuth, tokenHint }));
  hono.all(MCP_HTTP_PATH, async (c) => {
    const request = c.req.raw;
    const sessionId = request.headers.get('mcp-session-id');
    if (sessionId) {
      const transport = transports.get(sessionId);
      if (!transport) return rpcError(404, 'Session not found');
      if (request.method !== 'POST') return transport.handleRequest(request);
      const read = await readJson(request);
      return read instanceof Response ? read : transport.handleRequest(request, { parsedBody: read.body });
    }
    if (request.method !== 'POST') return rpcError(400, 'Bad Request: no valid mcp-session-id header');
    const read = await readJson(request);
    if (read instanceof Response) return read;
    const body = read.body;
    const initializing = Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body);
    if (!initializing) return rpcError(400, 'Bad Request: no valid mcp-session-id header');
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        transports.set(id, transport);
      },
      onsessionclosed: (id) => {
        transports.delete(id);
      },
      enableDnsRebindingProtection: true,
      allowedHosts,
    });
    transport.onclose = () => {
      if (transport.sessionId) transports.delete(transport.sessionId);
    };
    const server = options.makeServer();
    await server.connect(transport);
    return transport.handleRequest(request, { parsedBody: body });
  });

  const httpServer = await new Promise<ReturnType<typeof serve>>((resolvePromise, reject) => {
    const server = serve(
      {
        fetch: hono.fetch,
        hostname: options.host,
        port: options.port,
        serverOptions: connectionOptions(options.limits),
      },
      () => resolvePromise(server),
    );
    limitConnections(server as HttpServer, options.limits);
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        new SvcError(
          'unavailable',
          error.code === 'EADDRINUSE'
            ? `--port ${options.port}: address ${options.host}:${options.port} is already in use`
            : `cannot listen on ${options.host}:${options.port}: ${error.message}`,
          { cause: error },
        ),
      );
    });
  });
  const port = (httpServer.address() as AddressInfo).port;
  // The loopback names a client may address, as the HTTP service takes them ([::1] bracketed).
  const listening = options.host.includes(':') ? `[${options.host}]` : options.host;
  allowedHosts = [
    ...new Set([`${listening}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]),
  ];
  const url = `http://${listening}:${port}${MCP_HTTP_PATH}`;
  options.log.info('mcp http transport listening', { url });

  let closed = false;
  return {
    url,
    port,
    async close() {
      if (closed) return;
      closed = true;
      for (const transport of transports.values()) {
        try {
          await transport.close();
        } catch (error) {
          options.log.warn('mcp transport close failed', { error });
        }
      }
      transports.clear();
      await new Promise<void>((resolvePromise) => {
        httpServer.close(() => resolvePromise());
        (httpServer as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
    },
  };
}

/** The most an MCP client's request body may hold: a tool call's arguments, not a data set. */
export const MCP_MAX_BODY_BYTES = 10 * 1024 * 1024;

/**
 * A POST's JSON body, read no further than `MCP_MAX_BODY_BYTES` (a larger one is a 413, refused
 * by its declared length before it is read), or the error response.
 */
async function readJson(request: Request): Promise<{ body: unknown } | Response> {
  const tooBig = () =>
    rpcError(
      413,
      `Request body larger than ${MCP_MAX_BODY_BYTES} bytes: send smaller tool arguments (a large input belongs in a file in the workspace)`,
    );
  const declared = Number(request.headers.get('content-length') ?? 0);
  if (declared > MCP_MAX_BODY_BYTES) return tooBig();
  let text: string;
  try {
    const read = await readBodyCapped(request, MCP_MAX_BODY_BYTES);
    if (read.truncated) return tooBig();
    text = read.body.toString('utf8');
  } catch {
    return rpcError(400, 'Bad Request: the body could not be read', -32700);
  }
  try {
    return { body: JSON.parse(text) as unknown };
  } catch {
    return rpcError(400, 'Parse error: the body is not JSON', -32700);
  }
}

function rpcError(status: number, message: string, code = -32000): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json' },
  });
}
