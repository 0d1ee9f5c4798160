/**
 * Multiplayer coordination dashboard: golden shape (spec, Resources → dashboard readout) and the
 * full error table of the route (spec, Errors → Dashboard route). Pins:
 * - exactly the spec's top-level keys; operator_runtime only for a known session;
 * - constants and maturity labels; filters_applied echo;
 * - 400 / 401 / 503 / 500 / 200-with-warning rows;
 * - HTTP, tool and CLI --json return the same JSON except generated_at_unix.
 */
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { createHttpApp } from '../../src/surfaces/http/index';
import { invokeTool } from '../../src/tools/core/call-tool';
import { getMultiplayerCoordinationDashboard } from '../../src/tools/readouts';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { maskVolatile, viaCli, viaHttp } from '../helpers/surfaces';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const ROUTE = '/v1/multiplayer-coordination-dashboard';
const CORPUS = join(__dirname, '../../src/readouts/multiplayer/corpus');

async function get(
  app: App,
  query = '',
  init: { token?: string; allowNoAuth?: boolean; bearer?: string } = {},
) {
  const hono = createHttpApp(app, {
    token: init.token,
    allowNoAuth: init.allowNoAuth ?? init.token === undefined,
  });
  const response = await hono.request(`${ROUTE}${query}`, {
    headers: init.bearer ? { authorization: `Bearer ${init.bearer}` } : {},
  });
  const text = await response.text();
  return { status: response.status, text, json: () => JSON.parse(text) };
}

async function appWithCorpus(mutate: (dir: string) => void) {
  const ws = tmpWorkspace();
  const dir = join(ws, 'corpus');
  mkdirSync(dir);
  cpSync(CORPUS, dir, { recursive: true });
  mutate(dir);
  return makeTestApp({ workspace: ws, env: isolatedEnv(ws, { SVC_MULTIPLAYER_CORPUS_DIR: dir }) });
}

describe('dashboard readout shape', () => {
  it('DASH-40/DASH-16/DASH-01/DASH-05/DASH-07/DASH-08/DASH-10/DASH-11/DASH-14/DASH-15/DASH-20/DASH-21/DASH-22/DASH-23/DASH-24/DASH-25/DASH-26/DASH-27/DASH-53: session-less readout has exactly the spec fields', async () => {
    const app = await makeTestApp();
    const res = await get(app);
    expect(res.status).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(
      [
        'schema_version',
        'generated_at_unix',
        'filters_applied',
        'reference_traces',
        'live_export',
        'conformance_profile',
        'mutation_boundary',
        'coordination_posture_note',
        'warnings',
      ].sort(),
    );
    expect(body.schema_version).toBe('svc.multiplayer_coordination_dashboard.v1');
    expect(body.filters_applied).toEqual({ recent_runs_limit: 5 });
    expect(body.reference_traces).toHaveLength(4);
    expect(
      body.reference_traces.filter((t: { scenario_kind: string }) => t.scenario_kind === 'concurrent'),
    ).toHaveLength(2);
    expect(
      body.reference_traces.filter(
        (t: { scenario_kind: string }) => t.scenario_kind === 'sequential_handoff',
      ),
    ).toHaveLength(2);
    expect(body.live_export).toEqual({
      available: true,
      cli_command: 'svc stigmergy multiplayer export',
      maturity_label: 'code_backed',
      notes: 'runtime export is code-backed and redacted; it is not a live SaaS dashboard',
    });
    expect(body.conformance_profile).toEqual({
      profile_id: 'multiplayer_reference_trace_corpus',
      maturity_label: 'reference_corpus',
      corpus_valid: true,
    });
    expect(body.mutation_boundary).toBe(
      'read-only dashboard; it does not authorize coordination or mutation',
    );
    expect(body.coordination_posture_note).toBe(
      'reference traces supply product scenarios; conformance supplies the trust contract',
    );
    expect(body.warnings).toEqual([]);
  });

  it('DASH-06: generated_at_unix is integer UTC seconds', async () => {
    const app = await makeTestApp();
    const body = (await get(app)).json();
    expect(Number.isInteger(body.generated_at_unix)).toBe(true);
    expect(body.generated_at_unix).toBe(Math.floor(app.clock.now() / 1000));
  });

  it('DASH-17/DASH-18/DASH-19/DASH-38: rows are summaries with basename, counts and title only when the fixture has one', async () => {
    const app = await makeTestApp();
    const rows = (await get(app)).json().reference_traces as Record<string, unknown>[];
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual([
        'actor_count',
        'fixture_file',
        'maturity_label',
        'scenario_kind',
        'step_count',
        'title',
        'trace_id',
      ]);
      expect(String(row.fixture_file)).not.toMatch(/[/\\]/);
      const fixture = JSON.parse(readFileSync(join(CORPUS, String(row.fixture_file)), 'utf8'));
      expect(row).toMatchObject({
        trace_id: fixture.trace_id,
        step_count: fixture.steps.length,
        actor_count: fixture.actors.length,
        title: fixture.title,
        maturity_label: 'reference_corpus',
      });
    }
    const noTitle = await appWithCorpus((dir) => {
      const file = join(dir, readdirSync(dir)[0]);
      const trace = JSON.parse(readFileSync(file, 'utf8'));
      delete trace.title;
      writeFileSync(file, JSON.stringify(trace));
    });
    const row = (await get(noTitle)).json().reference_traces[0];
    expect('title' in row).toBe(false);
  });

  it('DASH-09/DASH-41/DASH-54: filters echo session_id only when given; empty session_id is session-less', async () => {
    const app = await makeTestApp();
    const session = await app.sessions.create();
    const scoped = (await get(app, `?session_id=${session.id}&recent_runs_limit=2`)).json();
    expect(scoped.filters_applied).toEqual({ recent_runs_limit: 2, session_id: session.id });
    const empty = (await get(app, '?session_id=')).json();
    expect(empty.filters_applied).toEqual({ recent_runs_limit: 5 });
    expect('operator_runtime' in empty).toBe(false);
  });

  it('DASH-12/DASH-28/DASH-29/DASH-30/DASH-31/DASH-32/DASH-33/DASH-34/DASH-35/DASH-36/DASH-37/DASH-64: a known session gets operator_runtime with seven checks, even with an empty ledger', async () => {
    const app = await makeTestApp();
    const session = await app.sessions.create();
    const body = (await get(app, `?session_id=${session.id}`)).json();
    const runtime = body.operator_runtime;
    expect(runtime).toBeDefined();
    expect(runtime.schema_version).toBe(1);
    expect(typeof runtime.profile).toBe('string');
    expect(runtime.profile.length).toBeGreaterThan(0);
    expect(runtime.session_id).toBe(session.id);
    expect(Object.keys(runtime.checks)).toEqual([
      'actor_identity',
      'authority_boundary',
      'workspace_state',
      'runtime_evidence',
      'handoff_recovery',
      'interruptibility',
      'boundary_honesty',
    ]);
    for (const check of Object.values(runtime.checks) as {
      status: string;
      summary: string;
      sources: Record<string, unknown>[];
    }[]) {
      expect(['present', 'partial', 'advisory', 'missing']).toContain(check.status);
      expect(check.summary.length).toBeGreaterThan(0);
      expect(check.sources.length).toBeGreaterThan(0);
      for (const source of check.sources)
        expect(Object.keys(source).sort()).toEqual(['durability', 'kind', 'name', 'summary']);
    }
    expect(runtime.checks.actor_identity.status).toBe('partial');
    expect(runtime.recent_runs).toEqual([]);
    expect(runtime.warnings).toContain('no_recent_runs');
    for (const w of runtime.warnings)
      expect([
        'session_unknown',
        'no_recent_runs',
        'workspace_claims_advisory',
        'minimal_mcp_only',
      ]).toContain(w);
  });

  it('DASH-32: workspace_state turns advisory with only soft claims, and boundary_honesty reflects an MCP-only runtime', async () => {
    const app = await makeTestApp();
    const session = await app.sessions.create();
    await app.claims.acquire({ session_id: session.id, paths: ['src/'], mode: 'soft', ttl_seconds: 60 });
    let runtime = (await get(app, `?session_id=${session.id}`)).json().operator_runtime;
    expect(runtime.checks.workspace_state.status).toBe('advisory');
    expect(runtime.warnings).toContain('workspace_claims_advisory');
    expect(runtime.checks.boundary_honesty.status).toBe('present');
    app.runtime.mcpOnly = true;
    runtime = (await get(app, `?session_id=${session.id}`)).json().operator_runtime;
    expect(runtime.checks.boundary_honesty.status).toBe('missing');
    expect(runtime.warnings).toContain('minimal_mcp_only');
  });

  it('DASH-02/DASH-03/DASH-04/EVT-32/GEN-10: reading changes nothing: no claims, no events', async () => {
    const app = await makeTestApp();
    const session = await app.sessions.create();
    const before = await app.bus.lastId(session.id);
    await get(app, `?session_id=${session.id}`);
    await invokeTool(
      app,
      'get_multiplayer_coordination_dashboard',
      { session_id: session.id },
      { surface: 'agent' },
    );
    expect(await app.claims.list({ include_inactive: true })).toEqual([]);
    expect(await app.bus.lastId(session.id)).toBe(before);
  });
});

describe('dashboard route errors', () => {
  it('DASH-58: a recent_runs_limit that is not an integer gives 400 invalid recent_runs_limit', async () => {
    const app = await makeTestApp();
    for (const bad of ['abc', '2.5', '-1']) {
      const res = await get(app, `?recent_runs_limit=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.text).toContain('invalid recent_runs_limit');
    }
  });

  it('AUTH-45/AUTH-46/AUTH-47/AUTH-48: 401 missing or wrong bearer with a token; 401 authentication required without; 200 with AllowNoAuth', async () => {
    const app = await makeTestApp();
    expect((await get(app, '', { token: 'tok-123456789' })).status).toBe(401);
    expect((await get(app, '', { token: 'tok-123456789', bearer: 'wrong' })).status).toBe(401);
    expect((await get(app, '', { token: 'tok-123456789', bearer: 'tok-123456789' })).status).toBe(200);
    const noToken = await get(app, '', { allowNoAuth: false });
    expect(noToken.status).toBe(401);
    expect(noToken.text).toContain('authentication required');
    expect((await get(app, '', { allowNoAuth: true })).status).toBe(200);
  });

  it('DASH-59: 503 App not ready before readiness', async () => {
    const app = await makeTestApp({ ready: false });
    const res = await get(app);
    expect(res.status).toBe(503);
    expect(res.text).toContain('App not ready');
  });

  it('DASH-60: a corpus that cannot be parsed gives 500', async () => {
    const app = await appWithCorpus((dir) => writeFileSync(join(dir, readdirSync(dir)[0]), '{ not json'));
    expect((await get(app)).status).toBe(500);
  });

  it('DASH-27/DASH-61: a corpus that fails validation gives 200 with corpus_valid false and a warning', async () => {
    const app = await appWithCorpus((dir) => {
      const file = join(dir, 'handoff-review-02.json');
      const trace = JSON.parse(readFileSync(file, 'utf8'));
      trace.steps[0].actor = 'ghost';
      writeFileSync(file, JSON.stringify(trace));
    });
    const res = await get(app);
    expect(res.status).toBe(200);
    const body = res.json();
    expect(body.conformance_profile.corpus_valid).toBe(false);
    expect(body.warnings.join(' ')).toMatch(/corpus_invalid: .*actor "ghost" is not declared/);
  });

  it('DASH-61: a corpus with three fixtures is invalid too', async () => {
    const app = await appWithCorpus((dir) => {
      const { rmSync } = require('node:fs') as typeof import('node:fs');
      rmSync(join(dir, 'concurrent-claims-01.json'));
    });
    const body = (await get(app)).json();
    expect(body.reference_traces).toHaveLength(3);
    expect(body.conformance_profile.corpus_valid).toBe(false);
  });

  it('DASH-13/DASH-63: an unknown session gives 200 with an operator_runtime_unavailable warning and no operator_runtime', async () => {
    const app = await makeTestApp();
    const res = await get(app, '?session_id=ses_nobody');
    expect(res.status).toBe(200);
    const body = res.json();
    expect('operator_runtime' in body).toBe(false);
    expect(body.warnings).toEqual(['operator_runtime_unavailable: session_unknown']);
  });

  it('DASH-62: with the session service down, 200 with a warning and no operator_runtime', async () => {
    const ws = tmpWorkspace({ files: { blocker: 'not a directory' } });
    const app = await makeTestApp({ workspace: ws, dataDir: join(ws, 'blocker') });
    const res = await get(app, '?session_id=ses_1');
    expect(res.status).toBe(200);
    const body = res.json();
    expect('operator_runtime' in body).toBe(false);
    expect(body.warnings[0]).toMatch(/^session_service_unavailable: /);
  });

  it('DASH-65: no recommendation ledger does not make the dashboard 503', async () => {
    const ws = tmpWorkspace({ files: { blocker: 'x' } });
    const app = await makeTestApp({ workspace: ws, dataDir: join(ws, 'blocker') });
    expect((await get(app)).status).toBe(200);
  });
});

describe('dashboard surfaces', () => {
  it('DASH-42/DASH-43/DASH-44/DASH-46/DASH-56: HTTP, agent tool and CLI --json give the same JSON except generated_at_unix', async () => {
    const app = await makeTestApp();
    const session = await app.sessions.create();
    const input = { session_id: session.id, recent_runs_limit: 3 };
    const binding = getMultiplayerCoordinationDashboard.surfaces!.http as never;
    const http = await viaHttp(app, binding, input);
    const tool = await invokeTool(app, 'get_multiplayer_coordination_dashboard', input, {
      surface: 'agent',
      sessionId: session.id,
    });
    const cli = await viaCli(app, getMultiplayerCoordinationDashboard.surfaces!.cli as never, input);
    expect(cli.code, cli.stderr).toBe(0);
    expect(maskVolatile(http.body)).toEqual(maskVolatile(tool));
    expect(maskVolatile(cli.json)).toEqual(maskVolatile(tool));
    expect((cli.json as { operator_runtime: { session_id: string } }).operator_runtime.session_id).toBe(
      session.id,
    );
    expect(
      (cli.json as { filters_applied: { recent_runs_limit: number } }).filters_applied.recent_runs_limit,
    ).toBe(3);
  });

  it('DASH-42/DASH-56: operator_runtime does not depend on the surfaces mounted in the reading process', async () => {
    // `svc stigmergy multiplayer dashboard --json` runs in a detached process while the HTTP route
    // runs in the server (surfaces {http}); both read the same full app runtime.
    const app = await makeTestApp();
    const session = await app.sessions.create();
    const detached = (await get(app, `?session_id=${session.id}`)).json();
    app.runtime.surfaces.add('http');
    app.runtime.server = true;
    const server = (await get(app, `?session_id=${session.id}`)).json();
    expect(maskVolatile(server)).toEqual(maskVolatile(detached));
    expect(server.operator_runtime.checks.authority_boundary.status).toBe('present');
    app.runtime.mcpOnly = true;
    const mcp = (await get(app, `?session_id=${session.id}`)).json();
    expect(mcp.operator_runtime.checks.authority_boundary.status).toBe('partial');
    expect(mcp.operator_runtime.checks.boundary_honesty.status).toBe('missing');
  });

  it('DASH-45: without --json the CLI prints a tabular summary, not JSON', async () => {
    const app = await makeTestApp();
    const out = await viaCli(app, getMultiplayerCoordinationDashboard.surfaces!.cli as never, {}, []);
    expect(out.code).toBe(0);
    expect(() => JSON.parse(out.stdout)).toThrow();
    expect(out.stdout).toContain('REFERENCE TRACE');
    expect(out.stdout).toContain('concurrent-claims-01');
  });

  it('DASH-66/DASH-67: in a server process before the HTTP server starts, the agent tool returns parity_getter_unavailable', async () => {
    const app = await makeTestApp();
    app.runtime.server = true;
    const result = await invokeTool(app, 'get_multiplayer_coordination_dashboard', {}, { surface: 'agent' });
    expect(result).toEqual({
      error_code: 'parity_getter_unavailable',
      message: expect.any(String),
      suggested_tools: ['operator_cognition_readout', 'get_task_aggregate'],
      http_route: '/v1/multiplayer-coordination-dashboard',
    });
    app.runtime.surfaces.add('http');
    expect(
      await invokeTool(app, 'get_multiplayer_coordination_dashboard', {}, { surface: 'agent' }),
    ).toHaveProperty('schema_version');
  });

  it('DASH-55: a detached process (no server) falls back to the direct read model', async () => {
    const app = await makeTestApp();
    expect(
      await invokeTool(app, 'get_multiplayer_coordination_dashboard', {}, { surface: 'agent' }),
    ).toHaveProperty('reference_traces');
  });
});

describe('dashboard over real runs', () => {
  it('DASH-33/DASH-12: after real runs, operator_runtime shows the family runs, capped by recent_runs_limit', async () => {
    const { agentApp } = await import('../helpers/agent-harness');
    const { reply } = await import('../helpers/fake-provider');
    const { app } = await agentApp([reply().text('one'), reply().text('two'), reply().text('three')]);
    const session = await app.agent.createSession({ title: 'dash' });
    for (const prompt of ['a', 'b', 'c']) await app.agent.run({ sessionId: session.id, prompt });
    const full = (await get(app, `?session_id=${session.id}&recent_runs_limit=5`)).json().operator_runtime;
    expect(full.recent_runs).toHaveLength(3);
    expect(full.checks.actor_identity.status).toBe('present');
    expect(full.checks.runtime_evidence.status).toBe('present');
    expect(full.warnings).not.toContain('no_recent_runs');
    expect(full.recent_runs[0]).toMatchObject({
      session_id: session.id,
      status: 'completed',
      family_session_id: session.id,
    });
    const capped = (await get(app, `?session_id=${session.id}&recent_runs_limit=1`)).json().operator_runtime;
    expect(capped.recent_runs).toHaveLength(1);
  });
});

describe('runtime export', () => {
  it('DASH-39/CLI-16: export --json prints the full trace of real runs, edits, claims and handoffs, redacted', async () => {
    const { agentApp } = await import('../helpers/agent-harness');
    const { reply } = await import('../helpers/fake-provider');
    const { app } = await agentApp(
      [
        reply().toolCall('write', { path: 'notes.md', content: 'SECRET-PROMPT-WORDS are not exported\n' }),
        reply().text('wrote it'),
      ],
      { config: undefined, extraConfig: { permissions: { allowed_tools: ['write'] } } },
    );
    const session = await app.agent.createSession({ title: 'export' });
    await app.claims.acquire({ session_id: session.id, paths: ['notes.md'], mode: 'hard', ttl_seconds: 60 });
    await app.agent.run({ sessionId: session.id, prompt: 'please write SECRET-PROMPT-WORDS to notes.md' });
    const cli = await viaCli(app, { command: 'stigmergy multiplayer export' }, {});
    expect(cli.code, cli.stderr).toBe(0);
    const out = cli.json as any;
    expect(out.schema_version).toBe('svc.multiplayer_trace_export.v1');
    expect(out.trace.actors).toContainEqual({
      id: `session:${session.id}`,
      type: 'agent',
      session: session.id,
    });
    const actions = out.trace.steps.map((s: { action: string }) => s.action);
    expect(actions).toEqual(expect.arrayContaining(['claim.acquire', 'run.start', 'file.edit', 'run.end']));
    expect(out.trace.steps.find((s: { action: string }) => s.action === 'file.edit').paths).toEqual([
      'notes.md',
    ]);
    expect(out.valid).toBe(true);
    expect(JSON.stringify(out)).not.toContain('SECRET-PROMPT-WORDS');
    const text = await viaCli(app, { command: 'stigmergy multiplayer export' }, {}, []);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('file.edit');
  });

  it('--strict exits 1 and says why when there is no evidence', async () => {
    const app = await makeTestApp();
    const strict = await viaCli(app, { command: 'stigmergy multiplayer export' }, { strict: true }, []);
    expect(strict.code).toBe(1);
    expect(strict.stdout).toContain('strict check failed');
    expect(strict.stdout).toContain('no coordination evidence');
    const lax = await viaCli(app, { command: 'stigmergy multiplayer export' }, {});
    expect(lax.code).toBe(0);
  });
});
