/**
 * The two TuiClient transports over a real App: the in-process client (sessions, bus replay,
 * tools by name, the queue) and the HTTP client against the real HTTP surface. Pins DASH-69,
 * COG-15, TOOLS-49 and AUTH-15 on real services.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/surfaces/http/index';
import { COMMANDS } from '../../src/surfaces/tui/commands';
import { createHttpClient } from '../../src/surfaces/tui/http-client';
import { createLocalClient } from '../../src/surfaces/tui/local-client';
import { toSessionEvent } from '../../src/surfaces/tui/sse';
import { invokeTool } from '../../src/tools/core/call-tool';
import { allTools } from '../../src/tools/index';
import { agentApp } from '../helpers/agent-harness';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';

describe('local TUI client', () => {
  it('DASH-69: the dashboard works in process with no HTTP server (direct read model, no parity getter)', async () => {
    const app = await makeTestApp();
    const client = createLocalClient(app);
    const session = await client.createSession({ title: 'dash' });
    expect(app.runtime.surfaces.has('http')).toBe(false);
    const { value } = await client.callTool(
      'get_multiplayer_coordination_dashboard',
      { session_id: session.id },
      { sessionId: session.id },
    );
    const v = value as Record<string, any>;
    expect(v.error_code).toBeUndefined();
    expect(v.schema_version).toBe('svc.multiplayer_coordination_dashboard.v1');
    expect(v.filters_applied).toEqual({ recent_runs_limit: 5, session_id: session.id });
    expect(v.operator_runtime.session_id).toBe(session.id);
  });

  it('COG-15: /cognition reads the same payload as the HTTP readout', async () => {
    const app = await makeTestApp();
    const local = createLocalClient(app);
    const hono = createHttpApp(app, { token: 't' });
    const remote = createHttpClient({
      url: 'http://svc.test',
      token: 't',
      fetch: (async (url: string, init?: RequestInit) =>
        hono.request(String(url), init)) as typeof globalThis.fetch,
    });
    const viaTui = await local.callTool('operator_cognition_readout', {});
    const viaHttp = await (
      await hono.request('/v1/operator-cognition', { headers: { authorization: 'Bearer t' } })
    ).json();
    const mask = (v: unknown) =>
      JSON.parse(JSON.stringify(v).replace(/"generated_at(_unix)?":\d+/g, '"generated_at":0'));
    expect(mask(viaTui.value)).toEqual(mask(viaHttp));
    expect(mask((await remote.callTool('operator_cognition_readout', {})).value)).toEqual(mask(viaHttp));
    // The view text is the CLI's rendering of that payload.
    expect(viaTui.text).toContain('operator cognition');
  });

  it('answers unavailable, not a crash, for a tool this build does not have', async () => {
    const app = await makeTestApp();
    await expect(createLocalClient(app).callTool('no_such_tool_in_this_build', {})).rejects.toMatchObject({
      code: 'unavailable',
    });
  });

  it('subscribes without replay by default, and replays after an id on request', async () => {
    const app = await makeTestApp();
    const client = createLocalClient(app);
    const session = await client.createSession();
    app.bus.publish(session.id, 'state.changed', { session_id: session.id, state: 'running' });
    const live: string[] = [];
    const replayed: string[] = [];
    const a = await client.subscribe(session.id, (e) => live.push(e.type));
    const b = await client.subscribe(session.id, (e) => replayed.push(e.type), { afterId: 0 });
    app.bus.publish(session.id, 'state.changed', { session_id: session.id, state: 'idle' });
    a.close();
    b.close();
    expect(live).toEqual(['state.changed']);
    expect(replayed).toEqual(['session.created', 'state.changed', 'state.changed']);
  });

  it('TOOLS-49: /enqueue and ctrl+enter use the same queue as queue_enqueue', async () => {
    // The agent's session API is wired (app.agent): while a run is active, the TUI enqueues into
    // the session's queue, which queue_enqueue and get_prompt_queue_status share.
    const provider = await fakeProvider([reply().hang()]);
    const app = await makeTestApp({
      config: {
        providers: { fake: { type: 'openai-compat', base_url: provider.url } },
        models: { large: 'fake/m1' },
      },
    });
    const client = createLocalClient(app);
    const session = await client.createSession();
    expect(await client.sendPrompt(session.id, 'long task')).toMatchObject({ queued: false });
    const fromTui = await client.enqueue(session.id, 'next task');
    expect(fromTui).toMatchObject({ queued: true, queue_length: 1, run_id: expect.stringMatching(/^run_/) });
    await invokeTool(
      app,
      'queue_enqueue',
      { session_id: session.id, prompt: 'after that' },
      { surface: 'mcp' },
    );
    const status = (await invokeTool(
      app,
      'get_prompt_queue_status',
      { session_id: session.id },
      {
        surface: 'tui',
      },
    )) as { sessions: { items: { run_id: string; preview: string; origin: string }[] }[] };
    expect(status.sessions[0].items).toEqual([
      expect.objectContaining({ run_id: fromTui.run_id, preview: 'next task', origin: 'tui' }),
      expect.objectContaining({ preview: 'after that', origin: 'mcp' }),
    ]);
    await app.agent.cancel(session.id, { clearQueue: true });
  });

  it('AUTH-15: /model <name> sets the session model the resolver uses next turn', async () => {
    const app = await makeTestApp({
      config: {
        providers: { fake: { type: 'openai-compat', base_url: 'http://127.0.0.1:9/v1' } },
        models: { large: 'fake/m1' },
      },
    });
    const client = createLocalClient(app);
    const session = await client.createSession();
    const updated = await client.setSessionModel(session.id, 'fake/m2');
    expect(updated.model).toBe('fake/m2');
    const resolved = await app.models.resolve({
      sessionModel: (await app.sessions.require(session.id)).model,
    });
    expect(resolved.selector).toBe('fake/m2');
    // The providers' list_models and get_provider_status tools back the dialogs (catalog rows too).
    // Ready providers' models first, each marked with its provider's readiness.
    const models = await client.listModels();
    expect(models[0]).toEqual({
      selector: 'fake/m1',
      provider: 'fake',
      name: 'm1',
      context_window: undefined,
      ready: true,
    });
    expect(models).toContainEqual(
      expect.objectContaining({ selector: 'anthropic/claude-sonnet-4-5-20250929', ready: false }),
    );
    expect(await client.providerStatus()).toContainEqual(
      expect.objectContaining({
        id: 'fake',
        ready: true,
        detail: 'loopback http://127.0.0.1:9/v1 (no key needed)',
      }),
    );
  });

  it('drives app.agent: the prompt, the permission request with its diff, the answer, the events', async () => {
    const { app, provider } = await agentApp(
      [
        reply().toolCall('view', { path: 'a.txt' }),
        reply().toolCall('edit', { path: 'a.txt', old_string: 'one', new_string: 'two' }),
        reply().text('done'),
      ],
      { files: { 'a.txt': 'one\n' } },
    );
    const client = createLocalClient(app);
    const session = await client.createSession();
    const events: string[] = [];
    // Subscribing attaches the TUI: the agent's permission request waits for its answer.
    const subscription = await client.subscribe(session.id, (e) => events.push(e.type));
    const sent = await client.sendPrompt(session.id, 'edit a.txt');
    expect(sent).toMatchObject({ queued: false, run_id: expect.stringMatching(/^run_/) });
    const pending = await until(async () => (await client.pendingPermissions(session.id))[0]);
    expect(pending).toMatchObject({ session_id: session.id, tool: 'edit', run_id: sent.run_id });
    expect(pending.tool_call_id).toEqual(expect.any(String));
    expect(String(pending.details?.diff)).toContain('+two');
    await client.answerPermission(session.id, pending.request_id, 'allow_once');
    const result = await app.agent.wait(sent.run_id!);
    expect(result).toMatchObject({ status: 'completed', text: 'done' });
    expect(readFileSync(join(app.workspace, 'a.txt'), 'utf8')).toBe('two\n');
    expect(events).toEqual(
      expect.arrayContaining([
        'run.started',
        'permission.requested',
        'permission.resolved',
        'tool.finished',
        'run.finished',
      ]),
    );
    subscription.close();
    expect(provider.unexpected).toEqual([]);
  });

  it('cancels the active run (esc) through app.agent', async () => {
    const { app } = await agentApp([reply().hang()]);
    const client = createLocalClient(app);
    const session = await client.createSession();
    const sent = await client.sendPrompt(session.id, 'take your time');
    await until(async () => (await app.agent.state(session.id)).state === 'running' || undefined);
    await client.cancel(session.id);
    expect((await app.agent.wait(sent.run_id!)).status).toBe('cancelled');
  });

  it('stores a pasted API key in the credential store, where readiness finds it', async () => {
    const app = await makeTestApp();
    const client = createLocalClient(app);
    expect((await client.providerStatus()).find((p) => p.id === 'groq')).toMatchObject({ ready: false });
    await client.storeApiKey('groq', '  gsk-test-key-0123456789  ');
    expect(app.providers.store.get('groq')).toMatchObject({
      kind: 'api_key',
      value: 'gsk-test-key-0123456789',
    });
    const groq = (await client.providerStatus()).find((p) => p.id === 'groq');
    expect(groq).toMatchObject({ ready: true, auth: 'api_key' });
    expect(JSON.stringify(groq)).not.toContain('gsk-test-key');
    await expect(client.storeApiKey('no-such-provider', 'k')).rejects.toMatchObject({ code: 'not_found' });
    await expect(client.storeApiKey('claude-code', 'k')).rejects.toMatchObject({ code: 'invalid_input' });
    await expect(client.storeApiKey('groq', '  ')).rejects.toMatchObject({ code: 'invalid_input' });
  });
});

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('HTTP TUI client', () => {
  it('calls a readout through its tool HTTP binding and maps errors to SvcErrors', async () => {
    const app = await makeTestApp();
    const hono = createHttpApp(app, { token: 't' });
    const fetch = ((url: string, init?: RequestInit) =>
      hono.request(String(url), init)) as typeof globalThis.fetch;
    const client = createHttpClient({ url: 'http://svc.test/', token: 't', fetch });
    const status = await client.callTool('config_status', {});
    expect((status.value as { workspace: string }).workspace).toBe(app.workspace);
    const wrong = createHttpClient({ url: 'http://svc.test', token: 'nope', fetch });
    await expect(wrong.callTool('config_status', {})).rejects.toMatchObject({ code: 'unauthorized' });
    await expect(client.callTool('checkpoint_get', { id: 'ckpt_x' })).rejects.toMatchObject({
      code: 'unavailable',
    });
    await expect(client.storeApiKey('fake', 'k')).rejects.toMatchObject({ code: 'unavailable' });
  });

  it('every slash command reaches its tool over attach: each one has an HTTP binding', () => {
    // Issue 9: both transports are the same TUI code, so everything the TUI can do, an HTTP client
    // can do. The model picker reads GET /v1/models and PATCHes the session instead of its tools.
    const viaOwnRoute = new Set(['list_models', 'set_session_model']);
    const tools = new Map(allTools.map((t) => [t.name, t]));
    const missing = COMMANDS.flatMap((c) =>
      (c.tools ?? [])
        .filter((name) => !viaOwnRoute.has(name))
        .filter((name) => !tools.get(name)?.surfaces?.http)
        .map((name) => `/${c.name}: ${name}`),
    );
    expect(missing).toEqual([]);
  });

  it('/pack, /tools, /capabilities, /agent_kinds, /undo, /mcp, /approve and /compact work over attach', async () => {
    const app = await makeTestApp({
      files: {
        '.svc/packs/review/pack.toml': 'name = "review"\n[[policy]]\ntool = "bash"\neffect = "deny"\n',
      },
      config: { options: { operating_packs: true } },
      git: true,
    });
    const session = await app.sessions.create();
    const hono = createHttpApp(app, { token: 't' });
    const fetch = ((url: string, init?: RequestInit) =>
      hono.request(String(url), init)) as typeof globalThis.fetch;
    const client = createHttpClient({ url: 'http://svc.test', token: 't', fetch });
    const opts = { sessionId: session.id };
    const packs = (await client.callTool('session_list_packs', {}, opts)).value as {
      packs: { name: string }[];
    };
    expect(packs.packs.map((p) => p.name)).toEqual(['review']);
    await client.callTool('session_set_pack', { pack_path_or_name: 'review' }, opts);
    const tools = (await client.callTool('list_tool_capabilities', {}, opts)).value as {
      tools: { name: string; effective: boolean }[];
    };
    expect(tools.tools.find((t) => t.name === 'bash')?.effective).toBe(false);
    expect((await client.callTool('capabilities', {}, opts)).value).toHaveProperty('version');
    expect((await client.callTool('list_agent_kinds', {}, opts)).value).toHaveProperty('kinds');
    expect((await client.callTool('checkpoint_list', {}, opts)).value).toBeDefined();
    expect((await client.callTool('mcp_status', { wait_ms: 0 }, opts)).value).toBeDefined();
    await expect(client.callTool('approve_plan', {}, opts)).rejects.toThrow(/no plan to approve/);
    // No provider here: the route is reached and the tool itself answers (an empty session).
    const compact = await client.callTool('summarize_session', {}, opts).catch((e: Error) => e);
    expect(String((compact as Error).message)).not.toMatch(/not reachable over attach/);
  });

  it('reads SSE events as the bus envelope or as typed payloads', () => {
    expect(toSessionEvent('7', 'state.changed', JSON.stringify({ session_id: 's', state: 'idle' }))).toEqual({
      id: 7,
      session_id: 's',
      type: 'state.changed',
      payload: { session_id: 's', state: 'idle' },
      created_at: 0,
    });
    expect(
      toSessionEvent(
        '9',
        undefined,
        JSON.stringify({
          id: 9,
          session_id: 's',
          type: 'run.started',
          payload: { run_id: 'r' },
          created_at: 5,
        }),
      ),
    ).toMatchObject({ id: 9, type: 'run.started', payload: { run_id: 'r' } });
    expect(toSessionEvent('1', undefined, 'not json')).toBeUndefined();
  });
});
