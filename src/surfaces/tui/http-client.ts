/**
 * The attach transport: the same `TuiClient` over a running `svc service start http`. Session
 * calls use the session API routes, events come from the SSE stream with Last-Event-ID replay,
 * and slash-command readouts use each tool's own HTTP binding from the registry (the route the
 * server mounts for that tool), so a tool that gains an HTTP binding works here with no change.
 * @module
 */
import { SvcError } from '../../errors';
import type { AnyTool } from '../../tools/core/define-tool';
import { allTools } from '../../tools/index';
import { SESSION_ROUTES } from '../../tools/session-routes';
import type { ClientInfo, EventSubscription, ModelChoice, ProviderRow, TuiClient } from './client';
import { createHttpRequest } from './http-request';
import { callToolOverHttp, toolForCli } from './http-tools';
import { modelsFromTool, providersFromTool } from './provider-rows';
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

  const request = createHttpRequest({ base, fetch: doFetch, auth });

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
    async subscribe(sessionId, listener, opts = {}): Promise<EventSubscription> {
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
    toolForCli: (command) => toolForCli(tools, command),
    callTool: (name, input, opts = {}) => callToolOverHttp(request, tools, name, input, opts),
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
