/**
 * Contract rules that cross parts of the product, each checked on the real surfaces:
 * provider recovery on the SSE stream, runtime_features flags, the family filter of the agent
 * runs route, the config tool's actions, the inspect routes, /v1/ prefixes, the release-notes
 * rule for compat fields, provider-status on every surface, the MCP operating-mode tool failing
 * closed, and identifiers in the records tools return.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { createHttpApp } from '../../src/surfaces/http/index';
import { createMcpServer } from '../../src/surfaces/mcp/server';
import { invokeTool } from '../../src/tools/core/call-tool';
import { VERSION } from '../../src/version';
import { agentApp } from '../helpers/agent-harness';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { viaCli } from '../helpers/surfaces';
import { sseReader } from '../http/sse-reader';

const call = (app: App, name: string, input: Record<string, unknown> = {}, sessionId?: string) =>
  invokeTool(app, name, input, { surface: 'agent', sessionId }) as Promise<any>;

describe('events across parts', () => {
  it('EVT-10: provider_recovery.changed reaches the SSE stream when rate-limit recovery crosses providers', async () => {
    const alpha = await fakeProvider([
      reply().httpError(
        429,
        { error: { message: 'tpm exceeded', type: 'rate_limit' } },
        { 'retry-after': '0' },
      ),
    ]);
    const beta = await fakeProvider([reply().text('served by beta')]);
    const app = await makeTestApp({
      config: {
        providers: {
          alpha: { type: 'openai-compat', base_url: alpha.url, api_key: 'alpha-key-000000000' },
          beta: { type: 'openai-compat', base_url: beta.url, api_key: 'beta-key-0000000000' },
        },
        models: { large: 'alpha/fast' },
        options: { tpm_recovery: { provider_model_fallback: ['alpha/fast', 'beta/big'] } },
      },
    });
    const session = await app.agent.createSession({ title: 'recovery' });
    const hono = createHttpApp(app, { allowNoAuth: true });
    const controller = new AbortController();
    const stream = sseReader(
      await hono.request(`/v1/sessions/${session.id}/events`, { signal: controller.signal }),
    );
    expect((await stream.next(5000)).event).toBe('connected');
    const result = await app.agent.run({ sessionId: session.id, prompt: 'hi' });
    expect(result.status).toBe('completed');
    let recovery: any;
    for (let i = 0; i < 200 && !recovery; i++) {
      const event = await stream.next(5000);
      if (event.event === 'provider_recovery.changed') recovery = event.json;
    }
    expect(recovery).toMatchObject({ from: 'alpha/fast', to: 'beta/big', session_id: session.id });
    controller.abort();
    await stream.cancel();
  });

  it('EVT-34/EVT-35: runtime_features reports the dashboard and cognition api/tool flags as wired', async () => {
    const app = await makeTestApp();
    const detached = (await call(app, 'runtime_features')).features;
    expect(detached).toMatchObject({
      multiplayer_coordination_dashboard_tool: true,
      operator_cognition_tool: true,
      multiplayer_coordination_dashboard_api: false,
      operator_cognition_api: false,
    });
    app.runtime.surfaces.add('http');
    const served = (await call(app, 'runtime_features')).features;
    expect(served).toMatchObject({
      multiplayer_coordination_dashboard_api: true,
      operator_cognition_api: true,
    });
  });
});

describe('routes', () => {
  it('HTTP-04: GET /v1/agent-runs?family_session_id returns the parent and child rows', async () => {
    const { app } = await agentApp([
      reply().toolCall('agent', { description: 'look', prompt: 'say hi', agent: 'explore' }),
      reply().text('child says hi'),
      reply().text('parent done'),
    ]);
    const parent = await app.agent.createSession({ title: 'parent' });
    await app.agent.run({ sessionId: parent.id, prompt: 'delegate' });
    const hono = createHttpApp(app, { allowNoAuth: true });
    const body = (await (await hono.request(`/v1/agent-runs?family_session_id=${parent.id}`)).json()) as {
      runs: { session_id: string; parent_run_id: string | null }[];
    };
    const sessions = new Set(body.runs.map((r) => r.session_id));
    expect(sessions.size).toBe(2);
    expect(body.runs.some((r) => r.parent_run_id !== null)).toBe(true);
    expect(body.runs.some((r) => r.parent_run_id === null && r.session_id === parent.id)).toBe(true);
  });

  it('TOOLS-64/TOOLS-66: GET /v1/workflow-tools and /v1/primitive-tools serve the same data as their tools', async () => {
    const app = await makeTestApp();
    const hono = createHttpApp(app, { allowNoAuth: true });
    for (const [path, tool] of [
      ['/v1/workflow-tools', 'get_workflow_tools_status'],
      ['/v1/primitive-tools', 'get_primitive_tools_status'],
    ] as const) {
      const response = await hono.request(path);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual(JSON.parse(JSON.stringify(await call(app, tool))));
    }
  });

  it('VER-01: every HTTP route the registry and the server declare is under /v1/ (but /healthz)', async () => {
    const app = await makeTestApp();
    const spec = (await (
      await createHttpApp(app, { allowNoAuth: true }).request('/v1/openapi.json')
    ).json()) as { paths: Record<string, unknown> };
    const paths = Object.keys(spec.paths);
    expect(paths.length).toBeGreaterThan(20);
    const outside = paths.filter(
      (p) => !p.startsWith('/v1/') && p !== '/healthz' && !p.startsWith('/.well-known/') && p !== '/a2a',
    );
    expect(outside).toEqual([]);
  });
});

describe('config tool', () => {
  it('TOOLS-31: config accepts read, set, unset, reload, validate and refresh', async () => {
    const app = await makeTestApp();
    expect((await call(app, 'config', { action: 'read', key: 'options.max_steps' })).fields[0]).toMatchObject(
      { key: 'options.max_steps', value: 50 },
    );
    const set = await call(app, 'config', { action: 'set', key: 'options.max_steps', value: 12 });
    expect(set.fields[0]).toMatchObject({ value: 12, source: join(app.workspace, 'svc.toml') });
    expect(app.config.options.max_steps).toBe(12);
    expect((await call(app, 'config', { action: 'validate' })).valid).toBe(true);
    await call(app, 'config', { action: 'set', key: 'options.disabled_tools', value: ['bash'] });
    const refreshed = await call(app, 'config', { action: 'refresh' });
    expect(refreshed.action).toBe('refresh');
    expect(app.funnel().find((e) => e.name === 'bash')?.removed_by).toBe('disabled_tools');
    const unset = await call(app, 'config', { action: 'unset', key: 'options.max_steps' });
    expect(unset.changed).toBe(true);
    expect((await call(app, 'config', { action: 'reload' })).action).toBe('reload');
    expect(app.config.options.max_steps).toBe(50);
  });

  it('TOOLS-31/TOOLS-40: set refuses what the full config load would reject, leaving svc.toml untouched', async () => {
    const app = await makeTestApp();
    await call(app, 'config', { action: 'set', key: 'options.max_steps', value: 12 });
    const file = join(app.workspace, 'svc.toml');
    const before = readFileSync(file, 'utf8');
    // Each passes the schema but would make every later command fail to load the config.
    await expect(
      call(app, 'config', { action: 'set', key: 'permissions.allowed_tools', value: ['set_config'] }),
    ).rejects.toThrowError(/refusing to write permissions\.allowed_tools: .*use "config".*unchanged/);
    await expect(
      call(app, 'config', { action: 'set', key: 'providers.openai.api_key', value: '${SVC_TEST_UNSET_VAR}' }),
    ).rejects.toThrowError(
      /refusing to write providers\.openai\.api_key: .*SVC_TEST_UNSET_VAR is not set.*unchanged/,
    );
    expect(readFileSync(file, 'utf8')).toBe(before);
    expect((await call(app, 'config', { action: 'reload' })).action).toBe('reload');
    expect(app.config.options.max_steps).toBe(12);
  });
});

describe('read surfaces', () => {
  it('AUTH-52: provider-status reports configured, ready, ambiguous and refreshed on the CLI, HTTP and the TUI tool path', async () => {
    const app = await makeTestApp({
      env: { HOME: '/nonexistent', PATH: process.env.PATH, OPENAI_API_KEY: 'sk-test-openai-000000000000' },
      config: { providers: { openai: { api_key: 'sk-other-openai-1111111111111' } } },
    });
    const hono = createHttpApp(app, { allowNoAuth: true });
    const http = (await (await hono.request('/v1/provider-status')).json()) as any;
    const cli = await viaCli(app, { command: 'config show-provider-status' }, {});
    const tui = await invokeTool(app, 'get_provider_status', {}, { surface: 'tui' });
    for (const payload of [http, cli.json, JSON.parse(JSON.stringify(tui))]) {
      const openai = (payload.providers as any[]).find((p) => p.id === 'openai');
      expect(openai).toMatchObject({ configured: true, ready: true, ambiguous: true });
      expect(openai).toHaveProperty('refreshed');
    }
  });

  it('VER-05: the release notes state the versioning and deprecation policy, and /healthz reports the version', async () => {
    const notes = readFileSync(join(__dirname, '../..', 'CHANGELOG.md'), 'utf8');
    expect(notes).toMatch(/## Versioning and deprecation \(policy\)/);
    expect(notes).toMatch(/\/v2\//);
    expect(notes).toMatch(/schema_version/);
    const app = await makeTestApp();
    const res = await createHttpApp(app, { allowNoAuth: false }).request('/healthz');
    expect(res.status).toBe(200);
    expect(((await res.json()) as { version: string }).version).toBe(VERSION);
  });

  it('VER-03: the docs say how an ignored compat field becomes honored (moved to honored, with a release note)', () => {
    const root = join(__dirname, '../..');
    const notes = readFileSync(join(root, 'CHANGELOG.md'), 'utf8');
    expect(notes).toMatch(/honored/i);
    expect(notes).toMatch(/temperature|top_p|max_tokens/);
    expect(existsSync(join(root, 'docs/compat.md'))).toBe(true);
  });
});

describe('MCP', () => {
  it('OPMODE-23: the MCP operating-mode tool fails closed (a tool error, never disabled/unavailable) when packs are off', async () => {
    // Started with packs on (startup refuses otherwise: OPMODE-43), then the gate closes on reload.
    const app = await makeTestApp({
      config: {
        options: { operating_packs: true },
        services: { mcp: { exposed_tools: ['svc_get_operating_mode'] } },
      },
    });
    const session = await app.sessions.create();
    const server = createMcpServer(app, { sessionId: session.id, exposedTools: ['svc_get_operating_mode'] });
    await call(app, 'config', { action: 'set', key: 'options.operating_packs', value: false });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(clientSide);
    const result = (await client.callTool({ name: 'svc_get_operating_mode', arguments: {} })) as {
      isError?: boolean;
      content: { text: string }[];
    };
    expect(result.isError).toBe(true);
    expect(result.content[0].text).not.toMatch(/"state"\s*:\s*"(disabled|unavailable)"/);
    await client.close();
  });
});

describe('records', () => {
  it('TOOLS-01: tools that create records return their identifiers', async () => {
    const app = await makeTestApp({ git: true, files: { 'a.txt': 'a\n' } });
    const session = await call(app, 'create_session', { title: 'ids' });
    expect(session.session.id ?? session.id).toMatch(/^ses_/);
    const sessionId = session.session?.id ?? session.id;
    expect(
      (await call(app, 'checkpoint_create', { name: 'cp' }, sessionId)).id ??
        (await call(app, 'checkpoint_list')).checkpoints[0].id,
    ).toBeTruthy();
    const claim = await call(app, 'workspace_claim', { action: 'acquire', paths: ['a.txt'] }, sessionId);
    expect(claim.claim.id).toMatch(/^clm_/);
    const marker = await call(
      app,
      'leave_marker',
      { action: 'create', path: 'a.txt', message: 'note' },
      sessionId,
    );
    expect(marker.marker.id).toMatch(/^mrk_/);
    const plan = await call(app, 'set_plan_artifact', { markdown: '# plan\n- step' }, sessionId);
    expect(JSON.stringify(plan)).toContain(sessionId);
    const job = await call(app, 'schedule', {
      action: 'create',
      name: 'nightly',
      cron: '0 3 * * *',
      prompt: 'check',
      session_id: sessionId,
    });
    expect(JSON.stringify(job)).toMatch(/"id":"[^"]+"/);
  });
});
