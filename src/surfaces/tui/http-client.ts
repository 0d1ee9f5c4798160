/**
 * The attach transport: the same `TuiClient` over a running `svc service start http`. Session
 * calls use the session API routes, events come from the SSE stream with Last-Event-ID replay,
 * and slash-command readouts use each tool's own HTTP binding from the registry (the route the
 * server mounts for that tool), so a tool that gains an HTTP binding works here with no change.
 * @module
 */
import { SvcError, type SvcErrorCode } from '../../errors';
import type { AnyTool, HttpBinding } from '../../tools/core/define-tool';
import { allTools } from '../../tools/index';
import { SESSION_ROUTES } from '../../tools/session-routes';
import type { ClientInfo, EventSubscription, ModelChoice, ProviderRow, TuiClient } from './client';
import { missingTool } from './client';
import { modelsFromTool, providersFromTool } from './provider-rows';
import { readoutText } from './readout-text';
import {
  HISTORY_LIMIT,
  historyMessage,
  listOf,
  permissionPrompt,
  sendResult,
  toSummary,
  unwrap,
} from './shapes';
import { readEventStream } from './sse';

/** The session API routes this transport uses (issue 5): the one list, shared with the server. */
export { SESSION_ROUTES };

export interface HttpClientOptions {
  url: string;
  token?: string;
  fetch?: typeof fetch;
  tools?: readonly AnyTool[];
}

export function createHttpClient(options: HttpClientOptions): TuiClient {
  const base = options.url.replace(/\/+$/, '');
  const doFetch = options.fetch ?? globalThis.fetch;
  const tools = new Map((options.tools ?? allTools).map((t) => [t.name, t]));
  const auth: Record<string, string> = options.token ? { authorization: `Bearer ${options.token}` } : {};
  const streams = new Set<AbortController>();

  async function request(
    route: string,
    params: Record<string, string> = {},
    body?: unknown,
    query?: Record<string, unknown>,
  ) {
    const [method, template] = route.split(' ');
    let path = template.replace(/:([a-z_]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v === undefined || v === null) continue;
      search.set(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
    }
    if ([...search].length) path += `?${search}`;
    let response: Response;
    try {
      response = await doFetch(`${base}${path}`, {
        method,
        headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      throw new SvcError('unavailable', `cannot reach ${base}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    const text = await response.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (!response.ok) throw httpError(response.status, method, template, json, text);
    return json;
  }

  const client: TuiClient = {
    info(): ClientInfo {
      return { target: base, transport: 'http', agent: true };
    },
    async listSessions(opts = {}) {
      const value = await request(SESSION_ROUTES.list, {}, undefined, {
        limit: opts.limit ?? 50,
        roots_only: true,
      });
      return listOf(value, 'sessions').map(toSummary);
    },
    async createSession(input = {}) {
      return toSummary(unwrap(await request(SESSION_ROUTES.create, {}, input), 'session'));
    },
    async getSession(id) {
      return toSummary(unwrap(await request(SESSION_ROUTES.get, { id }), 'session'));
    },
    async messages(id) {
      const value = await request(SESSION_ROUTES.messages, { id }, undefined, { limit: HISTORY_LIMIT });
      return listOf(value, 'messages').map(historyMessage);
    },
    async sendPrompt(id, text) {
      return sendResult(await request(SESSION_ROUTES.send, { id }, { prompt: text }));
    },
    async enqueue(id, text) {
      return sendResult(await request(SESSION_ROUTES.enqueue, { id }, { prompt: text }), true);
    },
    async cancel(id) {
      await request(SESSION_ROUTES.cancel, { id }, {});
    },
    async pendingPermissions(id) {
      return listOf(await request(SESSION_ROUTES.permissions, { id }), 'permissions').map(permissionPrompt);
    },
    async answerPermission(id, requestId, decision) {
      await request(SESSION_ROUTES.answer, { id, request_id: requestId }, { decision });
    },
    subscribe(sessionId, listener, opts = {}): EventSubscription {
      const controller = new AbortController();
      streams.add(controller);
      const path = SESSION_ROUTES.events.split(' ')[1].replace(':id', encodeURIComponent(sessionId));
      void readEventStream({
        url: `${base}${path}`,
        headers: auth,
        lastEventId: opts.afterId,
        signal: controller.signal,
        fetch: doFetch,
        onEvent: listener,
        onStatus: opts.onStatus,
      }).finally(() => streams.delete(controller));
      return { close: () => controller.abort() };
    },
    toolForCli(command) {
      for (const tool of tools.values()) {
        if (tool.surfaces?.http && [tool.surfaces.cli ?? []].flat().some((b) => b.command === command))
          return tool.name;
      }
      return undefined;
    },
    async callTool(name, input, opts = {}) {
      const tool = tools.get(name);
      const binding = tool ? pickBinding(tool, input) : undefined;
      if (!tool || !binding) {
        throw missingTool(
          name,
          `${name} is not reachable over attach (the server has no HTTP route for it); run it on the server host: svc ${cliOf(tool) ?? name}`,
        );
      }
      const merged = {
        ...(opts.sessionId && !('session_id' in input) ? sessionDefault(tool, opts.sessionId) : {}),
        ...input,
      };
      const params: Record<string, string> = {};
      const rest: Record<string, unknown> = { ...merged };
      for (const [param, field] of Object.entries(binding.params ?? {})) {
        params[param] = String(rest[field] ?? '');
        delete rest[field];
      }
      for (const key of Object.keys(binding.fixed ?? {})) delete rest[key];
      const route = `${binding.method} ${binding.path}`;
      const value =
        binding.method === 'GET' || binding.method === 'DELETE'
          ? await request(route, params, undefined, rest)
          : await request(route, params, rest);
      return { value, text: readoutText(tool, value, merged) };
    },
    async listModels(): Promise<ModelChoice[]> {
      return modelsFromTool(await request('GET /v1/models'), await client.providerStatus());
    },
    async setSessionModel(id, selector) {
      return toSummary(unwrap(await request(SESSION_ROUTES.update, { id }, { model: selector }), 'session'));
    },
    async providerStatus(): Promise<ProviderRow[]> {
      return providersFromTool(await request('GET /v1/provider-status'));
    },
    async storeApiKey(provider) {
      throw new SvcError(
        'unavailable',
        `keys are stored on the server host: run svc auth there, or set the key for ${provider} in its svc.toml`,
      );
    },
    async close() {
      for (const controller of streams) controller.abort();
      streams.clear();
    },
  };
  return client;
}

/** The binding whose fixed fields match the input (routes like `{ action: 'list' }`). */
function pickBinding(tool: AnyTool, input: Record<string, unknown>): HttpBinding | undefined {
  const http = tool.surfaces?.http;
  const bindings = Array.isArray(http) ? http : http ? [http] : [];
  return (
    bindings.find((b) => Object.entries(b.fixed ?? {}).every(([k, v]) => input[k] === v) && b.fixed) ??
    bindings.find((b) => !b.fixed)
  );
}

function sessionDefault(tool: AnyTool, sessionId: string): Record<string, unknown> {
  const shape = (tool.input as unknown as { shape?: Record<string, unknown> }).shape;
  return shape && 'session_id' in shape ? { session_id: sessionId } : {};
}

function cliOf(tool: AnyTool | undefined): string | undefined {
  return [tool?.surfaces?.cli ?? []].flat()[0]?.command;
}

const CODES = new Set<string>([
  'invalid_input',
  'config_error',
  'not_found',
  'unauthorized',
  'forbidden',
  'conflict',
  'unavailable',
  'rate_limited',
  'timeout',
  'cancelled',
  'internal',
]);

function httpError(status: number, method: string, path: string, json: unknown, text: string): SvcError {
  const error = (json as { error?: unknown } | undefined)?.error;
  const message =
    typeof error === 'string'
      ? error
      : typeof (error as { message?: unknown })?.message === 'string'
        ? (error as { message: string }).message
        : text.trim().slice(0, 200) || `HTTP ${status}`;
  const type = (error as { type?: string } | undefined)?.type;
  const code: SvcErrorCode =
    type && CODES.has(type)
      ? (type as SvcErrorCode)
      : status === 401
        ? 'unauthorized'
        : status === 403
          ? 'forbidden'
          : status === 404
            ? 'not_found'
            : status === 503
              ? 'unavailable'
              : status === 400
                ? 'invalid_input'
                : status === 409
                  ? 'conflict'
                  : 'internal';
  if (status === 404 && message === '404 Not Found')
    return new SvcError('unavailable', `the server has no route ${method} ${path} (older svc?)`, {
      status,
      details: { reason: 'tool_missing', route: `${method} ${path}` },
    });
  if (status === 401)
    return new SvcError('unauthorized', `${message}: pass --token or set SVC_HTTP_TOKEN`, { status });
  return new SvcError(code, message, { status });
}
