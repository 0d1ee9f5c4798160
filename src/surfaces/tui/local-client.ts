/**
 * The in-process TUI client: the same `TuiClient` contract as the HTTP transport, served
 * directly from the App: sessions, the bus, the tool registry, the agent's session API
 * (`app.agent`, src/agent/types.ts) and the providers domain (`app.providers`: status rows and
 * the credential store).
 * @module
 */
import type { App } from '../../app';
import { SvcError } from '../../errors';
import type { PendingPermission } from '../../permissions/permission-service';
import type { Session } from '../../sessions/session-store';
import { callTool, invokeTool } from '../../tools/core/call-tool';
import type {
  ClientInfo,
  EventSubscription,
  HistoryMessage,
  ModelChoice,
  PermissionPrompt,
  ProviderRow,
  SendResult,
  SessionSummary,
  SubscribeOptions,
  ToolCallOptions,
  ToolResult,
  TuiClient,
} from './client';
import { missingTool } from './client';
import { modelsFromTool, providersFromTool } from './provider-rows';
import { readoutText } from './readout-text';

export function createLocalClient(app: App): TuiClient {
  const client: TuiClient = {
    info(): ClientInfo {
      return { target: app.workspace, transport: 'local', agent: true };
    },
    async listSessions(options = {}) {
      return app.sessions.list({ limit: options.limit ?? 50, parent_id: null }).map(summary);
    },
    async createSession(input = {}) {
      return summary(app.sessions.create({ title: input.title ?? '', model: input.model ?? null }));
    },
    async getSession(sessionId) {
      return summary(app.sessions.require(sessionId));
    },
    async messages(sessionId) {
      return app.sessions
        .messages(sessionId)
        .map((m): HistoryMessage => ({ id: m.id, role: m.role, run_id: m.run_id, parts: m.parts }));
    },
    async sendPrompt(sessionId, text) {
      return sendResult(app.agent.send({ sessionId, prompt: text, origin: 'tui' }));
    },
    async enqueue(sessionId, text) {
      // The session queue that queue_enqueue and get_prompt_queue_status read (TOOLS-49).
      return sendResult(app.agent.enqueue({ sessionId, prompt: text, origin: 'tui' }), true);
    },
    async cancel(sessionId) {
      app.agent.cancel(sessionId, { reason: 'cancelled from the TUI' });
    },
    async pendingPermissions(sessionId) {
      return app.agent.pendingPermissions(sessionId).map(permissionPrompt);
    },
    async answerPermission(_sessionId, requestId, decision) {
      app.agent.answerPermission(requestId, decision, 'tui');
    },
    subscribe(sessionId, listener, options: SubscribeOptions = {}): EventSubscription {
      // Subscribe first, then replay, then drop duplicates: no event falls in the gap. Without
      // afterId only new events are delivered (the caller loads history itself).
      let lastId = options.afterId ?? app.bus.lastId(sessionId);
      const buffered: Parameters<typeof listener>[0][] = [];
      let replaying = true;
      const deliver = (event: Parameters<typeof listener>[0]) => {
        if (event.id <= lastId) return;
        lastId = event.id;
        listener(event);
      };
      // An attached operator: the agent's permission requests wait for this TUI's answer.
      const detach = app.agent.attach(sessionId, 'tui');
      const unsubscribe = app.bus.subscribe(sessionId, (event) => {
        if (replaying) buffered.push(event);
        else deliver(event);
      });
      try {
        for (const event of app.bus.replay(sessionId, lastId).events) deliver(event);
      } finally {
        replaying = false;
      }
      for (const event of buffered) deliver(event);
      options.onStatus?.('connected');
      return {
        close() {
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
      await invokeTool(
        app,
        'set_session_model',
        { session_id: sessionId, model: selector },
        { surface: 'tui', sessionId },
      );
      return summary(app.sessions.require(sessionId));
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
      const id = provider.trim();
      const secret = key.trim();
      if (!/^[a-z0-9][a-z0-9._-]*$/.test(id))
        throw new SvcError(
          'invalid_input',
          `provider: "${provider}" is not a provider id (lowercase letters, digits, . _ -)`,
        );
      if (!secret) throw new SvcError('invalid_input', 'api key: empty; paste the key and press enter');
      const entry = app.providers.entry(id);
      if (!entry)
        throw new SvcError(
          'not_found',
          `provider: unknown provider "${id}"; add [providers.${id}] to svc.toml first (/provider-status lists them)`,
        );
      if (entry.auth === 'vendor_cli' || entry.auth === 'acp' || entry.auth === 'local')
        throw new SvcError(
          'invalid_input',
          `provider: ${id} takes no API key (${entry.auth === 'local' ? 'a local server' : 'the child agent keeps its own login'})`,
        );
      app.redactor.add(secret);
      // The same credential store as `svc auth token <provider> --token-stdin`: readiness finds it.
      app.providers.store.set(id, {
        kind: 'api_key',
        value: secret,
        stored_by: 'svc tui',
        stored_at: new Date(app.clock.now()).toISOString(),
      });
    },
    async close() {},
  };
  return client;
}

export function summary(session: Session): SessionSummary {
  return {
    id: session.id,
    title: session.title,
    model: session.model,
    mode: session.mode,
    agent: session.agent,
    parent_id: session.parent_id,
    prompt_tokens: session.prompt_tokens,
    completion_tokens: session.completion_tokens,
    cost: session.cost,
    created_at: session.created_at,
    updated_at: session.updated_at,
  };
}

/** A pending request of the permission service, as the dialog shows it. */
export function permissionPrompt(p: PendingPermission): PermissionPrompt {
  return {
    session_id: p.session_id,
    request_id: p.request_id,
    tool: p.tool,
    title: p.title,
    ...(p.run_id ? { run_id: p.run_id } : {}),
    ...(p.tool_call_id ? { tool_call_id: p.tool_call_id } : {}),
    ...(p.details ? { details: p.details } : {}),
  };
}

/** Lenient: the agent answers with a run handle or a queue position. */
export function sendResult(value: unknown, queuedDefault = false): SendResult {
  const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const run = (v.run ?? {}) as Record<string, unknown>;
  const runId = (v.run_id ?? run.id) as string | undefined;
  const queued =
    typeof v.queued === 'boolean'
      ? v.queued
      : v.status === 'queued'
        ? true
        : v.status === 'running'
          ? false
          : queuedDefault;
  const length =
    v.queue_length ?? v.length ?? v.position ?? (v.queue as { length?: number } | undefined)?.length;
  return {
    ...(typeof runId === 'string' ? { run_id: runId } : {}),
    queued,
    ...(typeof length === 'number' ? { queue_length: length } : {}),
  };
}
