/**
 * The in-process TUI client: the same `TuiClient` contract as the HTTP transport, over the same
 * tools: sessions, messages, the queue, permission requests and readouts go through `callTool`
 * (the attached client reaches the same tools through their HTTP routes), and both map the
 * answers with `shapes.ts`, so a call returns the same shape on either. Events come from the bus
 * (the attached client reads the SSE stream of the same bus).
 * @module
 */
import type { App } from '../../app';
import { storeKey } from '../../providers/credentials';
import { callTool, invokeTool } from '../../tools/core/call-tool';
import type {
  ClientInfo,
  EventSubscription,
  ModelChoice,
  ProviderRow,
  SubscribeOptions,
  ToolCallOptions,
  ToolResult,
  TuiClient,
} from './client';
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

export function createLocalClient(app: App): TuiClient {
  /** A tool's value through the one call path (the same tools the attached client reaches over HTTP). */
  const call = (name: string, input: Record<string, unknown>) =>
    invokeTool(app, name, input, { surface: 'tui' });

  const client: TuiClient = {
    info(): ClientInfo {
      return { target: app.workspace, transport: 'local', agent: true };
    },
    async listSessions(options = {}) {
      const value = await call('list_sessions', { limit: options.limit ?? 50, roots_only: true });
      return listOf(value, 'sessions').map(toSummary);
    },
    async createSession(input = {}) {
      return toSummary(unwrap(await call('create_session', { ...input }), 'session'));
    },
    async getSession(sessionId) {
      return toSummary(unwrap(await call('get_session', { session_id: sessionId }), 'session'));
    },
    async messages(sessionId) {
      const value = await call('message', { action: 'list', session_id: sessionId, limit: HISTORY_LIMIT });
      return listOf(value, 'messages').map(historyMessage);
    },
    async sendPrompt(sessionId, text) {
      return sendResult(await call('message', { action: 'send', session_id: sessionId, text }));
    },
    async enqueue(sessionId, text) {
      // The session queue that queue_enqueue and get_prompt_queue_status read (TOOLS-49).
      return sendResult(await call('queue_enqueue', { session_id: sessionId, prompt: text }), true);
    },
    async cancel(sessionId) {
      await call('cancel_session_run', { session_id: sessionId });
    },
    async pendingPermissions(sessionId) {
      const value = await call('list_permission_requests', { session_id: sessionId });
      return listOf(value, 'permissions').map(permissionPrompt);
    },
    async answerPermission(sessionId, requestId, decision) {
      await call('answer_permission', { session_id: sessionId, request_id: requestId, decision });
    },
    async subscribe(sessionId, listener, options: SubscribeOptions = {}): Promise<EventSubscription> {
      // Subscribe first, then replay, then drop duplicates: no event falls in the gap. Without
      // afterId only new events are delivered (the caller loads history itself): the bus delivers
      // an event once it is stored, so the listener gets exactly those stored from now on.
      const afterId = options.afterId;
      let lastId = afterId ?? 0;
      const buffered: Parameters<typeof listener>[0][] = [];
      let replaying = afterId !== undefined;
      let closed = false;
      const deliver = (event: Parameters<typeof listener>[0]) => {
        if (closed || event.id <= lastId) return;
        lastId = event.id;
        listener(event);
      };
      // An attached operator: the agent's permission requests wait for this TUI's answer.
      const detach = app.agent.attach(sessionId, 'tui');
      const unsubscribe = app.bus.subscribe(sessionId, (event) => {
        if (replaying) buffered.push(event);
        else deliver(event);
      });
      if (afterId !== undefined) {
        try {
          for (const event of (await app.bus.replay(sessionId, afterId)).events) deliver(event);
        } catch (error) {
          unsubscribe();
          detach();
          throw error;
        } finally {
          replaying = false;
        }
        for (const event of buffered.splice(0)) deliver(event);
      }
      options.onStatus?.('connected');
      return {
        close() {
          closed = true;
          unsubscribe();
          detach();
          options.onStatus?.('closed');
        },
      };
    },
    toolForCli(command) {
      return app.tools
        .registered()
        .find((t) => [t.surfaces?.cli ?? []].flat().some((b) => b.command === command))?.name;
    },
    async callTool(name, input, options: ToolCallOptions = {}): Promise<ToolResult> {
      const outcome = await callTool(app, name, input, {
        surface: 'tui',
        sessionId: options.sessionId,
        signal: options.signal,
      });
      if (outcome.ok) return { value: outcome.value, text: readoutText(outcome.tool, outcome.value, input) };
      // A gated tool says why it is off (`tool X is not registered: <gate reason>`).
      if (outcome.stage === 'gate' || outcome.stage === 'unknown')
        throw missingTool(name, outcome.error.message);
      throw outcome.error;
    },
    async listModels(): Promise<ModelChoice[]> {
      const { value } = await client.callTool('list_models', {});
      return modelsFromTool(value, await client.providerStatus());
    },
    async setSessionModel(sessionId, selector) {
      return toSummary(
        unwrap(await call('update_session', { session_id: sessionId, model: selector }), 'session'),
      );
    },
    async localModel() {
      try {
        const model = await app.models.resolve({ signal: AbortSignal.timeout(3000) });
        return model.source === 'local_server' ? model.selector : undefined;
      } catch {
        return undefined;
      }
    },
    async providerStatus(): Promise<ProviderRow[]> {
      const { value } = await client.callTool('get_provider_status', {});
      return providersFromTool(value);
    },
    async storeApiKey(provider, key) {
      // The same one way as `svc auth token <provider> --token-stdin`: the durable credential
      // store, and the keychain:<provider> sentinel in svc.toml, where readiness finds it.
      storeKey(app, { provider, key, kind: 'api_key', by: 'svc tui' });
    },
    async close() {},
  };
  return client;
}
