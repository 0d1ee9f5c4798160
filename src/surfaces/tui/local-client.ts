/**
 * The in-process TUI client: the same `TuiClient` contract as the HTTP transport, served
 * directly from the App (sessions, bus, tool registry, and the agent's session API).
 * Capabilities that other parts provide (the agent loop, the credential store, provider status)
 * are looked up on the App when called, so they start working as soon as they are wired.
 * @module
 */
import type { App } from '../../app';
import { SvcError } from '../../errors';
import type { Session } from '../../sessions/session-store';
import { invokeTool } from '../../tools/invoke';
import type {
  ClientInfo,
  EventSubscription,
  HistoryMessage,
  ModelChoice,
  PermissionDecision,
  PermissionPrompt,
  ProviderRow,
  SendResult,
  SessionSummary,
  SubscribeOptions,
  ToolCallOptions,
  ToolResult,
  TuiClient,
} from './client';
import { modelsFromConfig, modelsFromTool, providersFromConfig, providersFromTool } from './provider-rows';
import { readoutText } from './readout-text';

/**
 * What this client needs of the agent's session API (`app.agent`, issue 4: `AgentService` in
 * src/agent/types.ts on the agent branch). Structural until it lands on main; each method is
 * checked at call time.
 */
export interface AgentSessionApi {
  send?(input: { sessionId: string; prompt: string; origin?: string }): unknown;
  enqueue?(input: { sessionId: string; prompt: string; origin?: string }): unknown;
  cancel?(sessionId: string, options?: { reason?: string }): unknown;
  pendingPermissions?(sessionId?: string):
    | PermissionPrompt[]
    | (Omit<PermissionPrompt, 'run_id' | 'details'> & {
        run_id: string | null;
        details: Record<string, unknown> | null;
      })[];
  answerPermission?(requestId: string, decision: PermissionDecision, by?: string): unknown;
  /** Marks an operator as attached, so permission requests wait for an answer. */
  attach?(sessionId: string, client: string): () => void;
  summarize?(sessionId: string): Promise<unknown>;
}

/** Credential store of the providers domain (issue 3). */
interface CredentialStoreLike {
  set(provider: string, secret: string): Promise<unknown> | unknown;
}

export function createLocalClient(app: App): TuiClient {
  const agent = (): AgentSessionApi | undefined =>
    ((app as unknown as { agent?: AgentSessionApi }).agent ?? app.services.agent) as
      | AgentSessionApi
      | undefined;
  const needAgent = <K extends keyof AgentSessionApi>(method: K): NonNullable<AgentSessionApi[K]> => {
    const fn = agent()?.[method];
    if (!fn)
      throw new SvcError(
        'unavailable',
        'the agent loop is not available in this build (svc run / the session API are not wired yet)',
      );
    return (fn as (...args: unknown[]) => unknown).bind(agent()) as NonNullable<AgentSessionApi[K]>;
  };
  const hasTool = (name: string) => app.tools.get(name) !== undefined;

  const client: TuiClient = {
    info(): ClientInfo {
      return { target: app.workspace, transport: 'local', agent: Boolean(agent()?.send) };
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
      return sendResult(await needAgent('send')({ sessionId, prompt: text, origin: 'tui' }));
    },
    async enqueue(sessionId, text) {
      const api = agent();
      if (api?.enqueue)
        return sendResult(await api.enqueue({ sessionId, prompt: text, origin: 'tui' }), true);
      // The queue_enqueue tool is the same queue (spec: same queue as ctrl+enter and /enqueue).
      if (hasTool('queue_enqueue')) {
        const value = await invokeTool(
          app,
          'queue_enqueue',
          { session_id: sessionId, prompt: text },
          { surface: 'tui', sessionId },
        );
        return sendResult(value, true);
      }
      return sendResult(await needAgent('enqueue')({ sessionId, prompt: text, origin: 'tui' }), true);
    },
    async cancel(sessionId) {
      await needAgent('cancel')(sessionId, { reason: 'cancelled from the TUI' });
    },
    async pendingPermissions(sessionId) {
      const fn = agent()?.pendingPermissions;
      if (!fn) return [];
      return (await fn.call(agent(), sessionId)).map((p) => ({
        session_id: p.session_id,
        request_id: p.request_id,
        tool: p.tool,
        title: p.title,
        ...(p.run_id ? { run_id: p.run_id } : {}),
        ...(p.details ? { details: p.details } : {}),
      }));
    },
    async answerPermission(sessionId, requestId, decision) {
      void sessionId;
      await needAgent('answerPermission')(requestId, decision, 'tui');
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
      const detach = agent()?.attach?.(sessionId, 'tui');
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
          detach?.();
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
      const tool = app.tools.get(name);
      if (!tool) throw new SvcError('unavailable', `${name} is not available in this build`);
      const value = await invokeTool(app, name, input, {
        surface: 'tui',
        sessionId: options.sessionId,
        signal: options.signal,
      });
      return { value, text: readoutText(tool, value, input) };
    },
    async listModels(): Promise<ModelChoice[]> {
      if (hasTool('list_models')) {
        const { value } = await client.callTool('list_models', {});
        const rows = modelsFromTool(value);
        if (rows.length) return rows;
      }
      return modelsFromConfig(app.config);
    },
    async setSessionModel(sessionId, selector) {
      if (hasTool('set_session_model')) {
        await invokeTool(
          app,
          'set_session_model',
          { session_id: sessionId, model: selector },
          { surface: 'tui', sessionId },
        );
        return summary(app.sessions.require(sessionId));
      }
      return summary(app.sessions.update(sessionId, { model: selector }));
    },
    async providerStatus(): Promise<ProviderRow[]> {
      if (hasTool('get_provider_status')) {
        const { value } = await client.callTool('get_provider_status', {});
        const rows = providersFromTool(value);
        if (rows.length) return rows;
      }
      return providersFromConfig(app.config);
    },
    async storeApiKey(provider, key) {
      if (!/^[A-Za-z0-9._-]+$/.test(provider))
        throw new SvcError('invalid_input', `provider: "${provider}" is not a provider id`);
      if (!key.trim()) throw new SvcError('invalid_input', 'api key: empty; paste the key and press enter');
      const store = ((app as unknown as { credentials?: CredentialStoreLike }).credentials ??
        app.services.credentials) as CredentialStoreLike | undefined;
      if (!store?.set)
        throw new SvcError(
          'unavailable',
          `the credential store is not available in this build; set api_key in [providers.${provider}] of svc.toml or the provider's env var`,
        );
      app.redactor.add(key.trim());
      await store.set(provider, key.trim());
      app.reloadConfig();
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
