/**
 * MCP servers for the client tests, on 127.0.0.1:0: streamable HTTP (`/mcp`) and legacy SSE
 * (`/sse` + `/messages`), optionally protected by OAuth with a fake authorization server
 * (metadata, dynamic client registration, authorization code + PKCE S256, refresh tokens).
 * The authorize endpoint approves at once and redirects to the client's callback, so a test
 * plays the browser by fetching the authorization URL. Everything closes with the test.
 * @module
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import {
  createServer,
  type Server as HttpServer,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  isInitializeRequest,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { onTestFinished } from 'vitest';

export interface FakeMcpHttpOptions {
  name?: string;
  /** Require a bearer token issued by the fake authorization server. */
  oauth?: boolean;
  /** Require this header on every MCP request (static auth via `headers`). */
  requireHeader?: { name: string; value: string };
  /** The `authorization_endpoint` the authorization server's metadata names (default its own). */
  authorizationEndpoint?: string;
  /** Fields that replace those of the authorization server's metadata (e.g. `token_endpoint`). */
  metadata?: Record<string, unknown>;
  /** Pad the authorization server's metadata with this many bytes. */
  metadataPadding?: number;
  /** The `authorization_servers` the protected resource metadata names (default the fake's). */
  authorizationServers?: string[];
  /** Awaited before a dynamic client registration is answered (a slow registration). */
  beforeRegister?: () => Promise<void>;
  /** The token endpoint answers every request with this. */
  tokenError?: { status: number; body: string; contentType?: string };
  /** Answer POSTs with plain JSON instead of an event stream. */
  jsonResponse?: boolean;
  /** Also list `big`, whose result is a text of `bytes` characters. */
  bigTool?: boolean;
}

export interface FakeMcpHttpServer {
  /** Streamable HTTP endpoint. */
  url: string;
  /** Legacy SSE endpoint. */
  sseUrl: string;
  /** The authorization server's issuer (oauth only). */
  issuer?: string;
  /** Tool calls received, in order. */
  calls: { tool: string; args: unknown; authorization?: string }[];
  oauthLog: { registrations: number; authorizations: number; codeExchanges: number; refreshes: number };
  /** The `code` of every authorization-code request the token endpoint received. */
  codesPosted: string[];
  /** Invalidate every access token issued so far (refresh tokens stay valid). */
  revokeAccessTokens(): void;
  /** Invalidate every refresh token issued so far. */
  revokeRefreshTokens(): void;
  close(): Promise<void>;
}

export async function fakeMcpHttpServer(options: FakeMcpHttpOptions = {}): Promise<FakeMcpHttpServer> {
  const calls: FakeMcpHttpServer['calls'] = [];
  const oauthLog = { registrations: 0, authorizations: 0, codeExchanges: 0, refreshes: 0 };
  const validAccess = new Set<string>();
  const codesPosted: string[] = [];
  const as = options.oauth
    ? await fakeAuthorizationServer(validAccess, oauthLog, codesPosted, options)
    : undefined;

  const makeServer = (authorization?: () => string | undefined) => {
    const server = new Server(
      { name: options.name ?? 'fake-http', version: '2.0.0' },
      { capabilities: { tools: {} } },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        {
          name: 'ping',
          description: 'Answer pong.',
          inputSchema: { type: 'object', properties: { who: { type: 'string' } } },
          annotations: { readOnlyHint: true },
        },
        ...(options.bigTool
          ? [
              {
                name: 'big',
                description: 'Answer a long text.',
                inputSchema: { type: 'object', properties: { bytes: { type: 'number' } } },
              },
            ]
          : []),
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      calls.push({
        tool: request.params.name,
        args: request.params.arguments,
        authorization: authorization?.(),
      });
      if (request.params.name === 'big')
        return { content: [{ type: 'text', text: 'x'.repeat(Number(request.params.arguments?.bytes)) }] };
      return {
        content: [{ type: 'text', text: `pong ${String(request.params.arguments?.who ?? '')}`.trim() }],
      };
    });
    return server;
  };

  const streamable = new Map<string, StreamableHTTPServerTransport>();
  const sse = new Map<string, SSEServerTransport>();
  let base = '';
  let lastAuthorization: string | undefined;

  const http = createServer(async (request, response) => {
    try {
      const url = new URL(request.url ?? '/', base);
      if (url.pathname.startsWith('/.well-known/oauth-protected-resource')) {
        if (!as) return send(response, 404, { error: 'not found' });
        return send(response, 200, {
          resource: `${base}/mcp`,
          authorization_servers: options.authorizationServers ?? [as.issuer],
        });
      }
      if (as) {
        const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
        if (!token || !validAccess.has(token)) {
          response.writeHead(401, {
            'content-type': 'application/json',
            'www-authenticate': `Bearer error="invalid_token", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
          });
          response.end(JSON.stringify({ error: 'invalid_token' }));
          return;
        }
      }
      if (
        options.requireHeader &&
        request.headers[options.requireHeader.name.toLowerCase()] !== options.requireHeader.value
      ) {
        return send(response, 401, { error: 'missing header' });
      }
      lastAuthorization = request.headers.authorization;
      if (url.pathname === '/mcp') {
        const sessionId = request.headers['mcp-session-id'] as string | undefined;
        const body = request.method === 'POST' ? JSON.parse((await readBody(request)) || 'null') : undefined;
        let transport = sessionId ? streamable.get(sessionId) : undefined;
        if (!transport) {
          if (sessionId || !isInitializeRequest(body)) return send(response, 400, { error: 'no session' });
          const created = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            enableJsonResponse: options.jsonResponse,
            onsessioninitialized: (id) => {
              streamable.set(id, created);
            },
          });
          transport = created;
          await makeServer(() => lastAuthorization).connect(created);
        }
        await transport.handleRequest(request, response, body);
        return;
      }
      if (url.pathname === '/sse' && request.method === 'GET') {
        const transport = new SSEServerTransport('/messages', response);
        sse.set(transport.sessionId, transport);
        response.on('close', () => sse.delete(transport.sessionId));
        await makeServer(() => lastAuthorization).connect(transport);
        return;
      }
      if (url.pathname === '/messages' && request.method === 'POST') {
        const transport = sse.get(url.searchParams.get('sessionId') ?? '');
        if (!transport) return send(response, 404, { error: 'no session' });
        await transport.handlePostMessage(request, response);
        return;
      }
      send(response, 404, { error: 'not found' });
    } catch (error) {
      if (!response.headersSent) send(response, 500, { error: String(error) });
    }
  });
  base = await listen(http);

  const close = async () => {
    for (const t of streamable.values()) await t.close().catch(() => {});
    for (const t of sse.values()) await t.close().catch(() => {});
    await closeServer(http);
    await as?.close();
  };
  onTestFinished(close);
  return {
    url: `${base}/mcp`,
    sseUrl: `${base}/sse`,
    issuer: as?.issuer,
    calls,
    oauthLog,
    codesPosted,
    revokeAccessTokens: () => validAccess.clear(),
    revokeRefreshTokens: () => as?.refreshTokens.clear(),
    close,
  };
}

interface Client {
  client_id: string;
  redirect_uris: string[];
}

async function fakeAuthorizationServer(
  validAccess: Set<string>,
  log: FakeMcpHttpServer['oauthLog'],
  codesPosted: string[],
  options: FakeMcpHttpOptions,
): Promise<{ issuer: string; refreshTokens: Set<string>; close(): Promise<void> }> {
  const clients = new Map<string, Client>();
  const codes = new Map<string, { clientId: string; challenge: string; redirectUri: string }>();
  const refreshTokens = new Set<string>();
  let issuer = '';
  const issue = () => {
    const access = `at_${randomBytes(12).toString('hex')}`;
    const refresh = `rt_${randomBytes(12).toString('hex')}`;
    validAccess.add(access);
    refreshTokens.add(refresh);
    return { access_token: access, token_type: 'Bearer', expires_in: 3600, refresh_token: refresh };
  };
  const server = createServer(async (request, response) => {
    const url = new URL(request.url ?? '/', issuer);
    if (url.pathname === '/.well-known/oauth-authorization-server') {
      return send(response, 200, {
        issuer,
        authorization_endpoint: options.authorizationEndpoint ?? `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        registration_endpoint: `${issuer}/register`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none'],
        ...options.metadata,
        ...(options.metadataPadding ? { padding: 'x'.repeat(options.metadataPadding) } : {}),
      });
    }
    if (url.pathname === '/register' && request.method === 'POST') {
      const metadata = JSON.parse(await readBody(request)) as { redirect_uris?: string[] };
      await options.beforeRegister?.();
      log.registrations++;
      const client = {
        client_id: `client_${randomBytes(6).toString('hex')}`,
        redirect_uris: metadata.redirect_uris ?? [],
      };
      clients.set(client.client_id, client);
      return send(response, 201, {
        ...metadata,
        ...client,
        client_id_issued_at: Math.floor(Date.now() / 1000),
        token_endpoint_auth_method: 'none',
      });
    }
    if (url.pathname === '/authorize') {
      const q = url.searchParams;
      const client = clients.get(q.get('client_id') ?? '');
      const redirectUri = q.get('redirect_uri') ?? '';
      if (!client?.redirect_uris.includes(redirectUri))
        return send(response, 400, { error: 'invalid_client' });
      if (q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) {
        return send(response, 400, { error: 'invalid_request', error_description: 'PKCE S256 required' });
      }
      log.authorizations++;
      const code = `code_${randomBytes(8).toString('hex')}`;
      codes.set(code, { clientId: client.client_id, challenge: q.get('code_challenge')!, redirectUri });
      const target = new URL(redirectUri);
      target.searchParams.set('code', code);
      if (q.get('state')) target.searchParams.set('state', q.get('state')!);
      response.writeHead(302, { location: target.href }).end();
      return;
    }
    if (url.pathname === '/token' && request.method === 'POST') {
      const form = new URLSearchParams(await readBody(request));
      if (form.get('grant_type') === 'authorization_code') codesPosted.push(form.get('code') ?? '');
      if (options.tokenError) {
        const { status, body, contentType } = options.tokenError;
        response.writeHead(status, { 'content-type': contentType ?? 'application/json' }).end(body);
        return;
      }
      if (form.get('grant_type') === 'authorization_code') {
        const entry = codes.get(form.get('code') ?? '');
        const verifier = form.get('code_verifier') ?? '';
        const challenge = createHash('sha256').update(verifier).digest('base64url');
        if (!entry || entry.clientId !== form.get('client_id') || entry.challenge !== challenge) {
          return send(response, 400, { error: 'invalid_grant' });
        }
        codes.delete(form.get('code')!);
        log.codeExchanges++;
        return send(response, 200, issue());
      }
      if (form.get('grant_type') === 'refresh_token') {
        const token = form.get('refresh_token') ?? '';
        if (!refreshTokens.has(token)) return send(response, 400, { error: 'invalid_grant' });
        refreshTokens.delete(token);
        log.refreshes++;
        return send(response, 200, issue());
      }
      return send(response, 400, { error: 'unsupported_grant_type' });
    }
    send(response, 404, { error: 'not found' });
  });
  issuer = await listen(server);
  return { issuer, refreshTokens, close: () => closeServer(server) };
}

function send(response: ServerResponse, status: number, body: unknown) {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk) => {
      text += chunk;
    });
    request.on('end', () => resolvePromise(text));
    request.on('error', reject);
  });
}

function listen(server: HttpServer): Promise<string> {
  return new Promise((resolvePromise) => {
    server.listen(0, '127.0.0.1', () =>
      resolvePromise(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    );
  });
}

function closeServer(server: HttpServer): Promise<void> {
  return new Promise((resolvePromise) => {
    server.close(() => resolvePromise());
    server.closeAllConnections();
  });
}

/** Plays the browser: follows the authorization URL to the loopback callback. */
export async function approveInBrowser(authorizationUrl: string): Promise<number> {
  const answer = await fetch(authorizationUrl, { redirect: 'manual' });
  const location = answer.headers.get('location');
  if (answer.status !== 302 || !location)
    throw new Error(`authorize answered ${answer.status}: ${await answer.text()}`);
  const callback = await fetch(location);
  await callback.text();
  return callback.status;
}
