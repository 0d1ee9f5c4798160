/**
 * An active pack changes what the agent gets. Pins:
 * - deny rules remove tools in the funnel's agent_policy stage; allow rules make an allowlist;
 * - the preamble (and task rules) reach the session's prompt sections, for that session only;
 * - hooks run on bus events in the workspace, with a minimal environment (no secrets), the
 *   event on stdin and a timeout; outcomes are recorded without the command;
 * - a persisted reference hydrates in a new App on the same data dir (OPMODE-32), or reports
 *   hydration_failed; an unusable database reports persistence_unavailable;
 * - the state transitions documented in docs/operating-mode.md (OPMODE-25).
 */
import { readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { invokeTool } from '../../src/tools/core/call-tool';
import { isolatedEnv, makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import {
  ENV_SECRET,
  expectNoMarkers,
  HOOK_MARKER,
  http,
  ON,
  PREAMBLE_MARKER,
  packFiles,
  packsApp,
  TASK_MARKER,
  toml,
} from './fixtures';

const agent = (sessionId?: string) => ({ surface: 'agent' as const, sessionId });
const entry = async (app: App, sessionId: string, name: string) =>
  app.funnel(await app.funnelContext(sessionId)).find((e) => e.name === name)!;
const sections = async (app: App, sessionId: string) =>
  (await Promise.all(app.promptSections.map((section) => section(sessionId)))).filter((s) => s !== undefined);

describe('an applied operating pack', () => {
  it('removes a denied tool from the funnel in the agent_policy stage, for its session only', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    const other = await app.sessions.create();
    expect((await entry(app, session.id, 'config')).effective).toBe(true);
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'review' }, agent(session.id));
    expect(await entry(app, session.id, 'config')).toMatchObject({
      effective: false,
      removed_by: 'agent_policy',
      reason: 'pack review: denied by the operating pack policy',
    });
    expect((await entry(app, session.id, 'get_config')).effective).toBe(true);
    expect((await entry(app, other.id, 'config')).effective).toBe(true);
    // The funnel report never shows the rule's reason text.
    expectNoMarkers(JSON.stringify(app.funnel(await app.funnelContext(session.id))));
    await invokeTool(app, 'session_clear_pack', {}, agent(session.id));
    expect((await entry(app, session.id, 'config')).effective).toBe(true);
  });

  it('with any allow rule the pack is an allowlist, and deny wins over allow', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'strict' }, agent(session.id));
    const effective = app
      .funnel(await app.funnelContext(session.id))
      .filter((e) => e.effective)
      .map((e) => e.name);
    expect(effective.length).toBeGreaterThan(0);
    expect(effective.every((name) => name.startsWith('get_'))).toBe(true);
    expect(effective).toContain('get_operating_mode');
    expect(effective).not.toContain('get_config');
    expect(await entry(app, session.id, 'config')).toMatchObject({
      removed_by: 'agent_policy',
      reason: 'pack strict: not in the operating pack allowlist',
    });
    expect((await entry(app, session.id, 'get_config')).reason).toBe(
      'pack strict: denied by the operating pack policy',
    );
  });

  it('adds the preamble and task rules to the prompt sections of its session only', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    const other = await app.sessions.create();
    expect(await sections(app, session.id)).toEqual([]);
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'review' }, agent(session.id));
    const [section] = await sections(app, session.id);
    expect(section.source).toBe('pack review');
    expect(section.text).toContain(`${PREAMBLE_MARKER}: review every diff before writing.`);
    expect(section.text).toContain(
      `- tests-first: ${TASK_MARKER}: write the failing test first. (applies when: fixing a bug)`,
    );
    expect(section.text).toContain('Skills this operating pack relies on: code-review, testing.');
    expect(section.text).toContain('- use testing when a change touches src/');
    expect(await sections(app, other.id)).toEqual([]);
    await invokeTool(app, 'session_clear_pack', {}, agent(session.id));
    expect(await sections(app, session.id)).toEqual([]);
  });

  it('applies nothing once options.operating_packs is turned off', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'review' }, agent(session.id));
    await invokeTool(app, 'config', { action: 'set', key: 'options.operating_packs', value: false }, agent());
    expect(app.tools.get('get_operating_mode')).toBeUndefined();
    expect(await sections(app, session.id)).toEqual([]);
    expect((await entry(app, session.id, 'config')).effective).toBe(true);
  });

  it('runs hooks on bus events in the workspace with a minimal environment and records the outcome', async () => {
    const workspace = tmpWorkspace({ files: packFiles() });
    const env = isolatedEnv(workspace, { DEPLOY_API_KEY: ENV_SECRET, GITHUB_TOKEN: 'ghp_notinherited' });
    const app = await makeTestApp({ workspace, env, config: ON });
    const session = await app.sessions.create();
    const other = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'review' }, agent(session.id));

    app.bus.publish(session.id, 'tool.finished', {
      session_id: session.id,
      run_id: 'run_1',
      tool_call_id: 'c1',
      tool: 'edit',
      is_error: false,
      duration_ms: 3,
      summary: 'edited a file',
    });
    app.bus.publish(other.id, 'tool.finished', { session_id: other.id, tool: 'view' });
    app.bus.publish(session.id, 'message.delta', { session_id: session.id, delta: 'x' });
    app.bus.publish(session.id, 'run.finished', {
      session_id: session.id,
      run_id: 'run_1',
      status: 'completed',
      steps: 1,
      usage: { input_tokens: 1, output_tokens: 1 },
      cost: 0,
    });
    await app.packs!.hooksIdle();

    expect(readFileSync(join(workspace, 'hook.log'), 'utf8')).toBe(
      `${HOOK_MARKER} tool.finished edit ${session.id}\n`,
    );
    const hookEnv = readFileSync(join(workspace, 'hook-env.txt'), 'utf8');
    expect(hookEnv).toContain(`SVC_SESSION_ID=${session.id}`);
    expect(hookEnv).toContain('SVC_HOOK_EVENT=run.finished');
    expect(hookEnv).toContain('SVC_PACK=review');
    expect(hookEnv).toContain(`PATH=${env.PATH}`);
    expect(hookEnv).not.toContain(ENV_SECRET);
    expect(hookEnv).not.toContain('DEPLOY_API_KEY');
    expect(hookEnv).not.toContain('ghp_notinherited');
    const stdin = JSON.parse(readFileSync(join(workspace, 'hook-stdin.json'), 'utf8'));
    expect(stdin).toMatchObject({ type: 'run.finished', session_id: session.id, pack: 'review' });
    expect(stdin.payload).toMatchObject({ status: 'completed', run_id: 'run_1' });

    const runs = app.db
      .prepare(
        'SELECT session_id, pack_name, hook_index, event, status, exit_code FROM pack_hook_runs ORDER BY id',
      )
      .all();
    expect(runs).toEqual([
      {
        session_id: session.id,
        pack_name: 'review',
        hook_index: 0,
        event: 'tool.finished',
        status: 'ok',
        exit_code: 0,
      },
      {
        session_id: session.id,
        pack_name: 'review',
        hook_index: 1,
        event: 'run.finished',
        status: 'ok',
        exit_code: 0,
      },
    ]);
    const details = (await invokeTool(app, 'session_get_active_pack', {}, agent(session.id))) as {
      recent_hook_runs: unknown[];
    };
    expect(details.recent_hook_runs).toHaveLength(2);
    // The log records outcomes, never the command.
    const logged = app.memoryLog.records.filter((r) => r.message === 'pack hook finished');
    expect(logged).toHaveLength(2);
    expectNoMarkers(JSON.stringify(app.memoryLog.records));
    expectNoMarkers(JSON.stringify(app.redactor.value(details)));
  });

  it('records failed and timed-out hooks, filters tool hooks by tool, and stops after clear', async () => {
    const pack = toml({
      name: 'hooky',
      hooks: [
        { event: 'tool.started', tool: 'bash', command: 'echo started >> tool.log' },
        { event: 'tool.finished', command: 'exit 3' },
        { event: 'run.started', command: 'sleep 5', timeout_seconds: 1 },
      ],
    });
    const app = await packsApp({ files: packFiles({ '.svc/packs/hooky/pack.toml': pack }) });
    const session = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'hooky' }, agent(session.id));
    app.bus.publish(session.id, 'tool.started', { session_id: session.id, tool: 'view' });
    app.bus.publish(session.id, 'tool.started', { session_id: session.id, tool: 'bash' });
    app.bus.publish(session.id, 'tool.finished', { session_id: session.id, tool: 'bash' });
    app.bus.publish(session.id, 'run.started', { session_id: session.id, run_id: 'r' });
    await app.packs!.hooksIdle();
    expect(readFileSync(join(app.workspace, 'tool.log'), 'utf8')).toBe('started\n');
    const runs = app.db
      .prepare('SELECT hook_index, status, exit_code FROM pack_hook_runs ORDER BY id')
      .all() as {
      hook_index: number;
      status: string;
      exit_code: number | null;
    }[];
    expect(runs.map((r) => [r.hook_index, r.status])).toEqual([
      [0, 'ok'],
      [1, 'failed'],
      [2, 'timeout'],
    ]);
    expect(runs[1].exit_code).toBe(3);

    await invokeTool(app, 'session_clear_pack', {}, agent(session.id));
    app.bus.publish(session.id, 'tool.started', { session_id: session.id, tool: 'bash' });
    await app.packs!.hooksIdle();
    expect(readFileSync(join(app.workspace, 'tool.log'), 'utf8')).toBe('started\n');
  });

  it('OPMODE-32: a new App on the same data dir hydrates the persisted pack on read (last_action hydrate)', async () => {
    const first = await packsApp();
    const session = await first.sessions.create();
    await invokeTool(first, 'session_set_pack', { pack_path_or_name: 'review' }, agent(session.id));
    await first.close();

    const app = await makeTestApp({ workspace: first.workspace, env: first.env });
    const snap = await invokeTool(app, 'get_operating_mode', { session_id: session.id }, agent());
    expect(snap).toMatchObject({
      state: 'active',
      active_operating_pack: 'review',
      last_action: 'hydrate',
      hook_count: 2,
      has_prompt_preamble: true,
    });
    // Applied for real, not only reported.
    expect((await sections(app, session.id))[0].text).toContain(PREAMBLE_MARKER);
    expect((await entry(app, session.id, 'config')).removed_by).toBe('agent_policy');
    // Hydration is recorded once; later reads do not rewrite it.
    const row = app.db.prepare('SELECT last_action, updated_at FROM session_operating_packs').get();
    await invokeTool(app, 'get_operating_mode', { session_id: session.id }, agent());
    expect(app.db.prepare('SELECT last_action, updated_at FROM session_operating_packs').get()).toEqual(row);
  });

  it('OPMODE-32: after a restart the policy applies even before anyone reads the snapshot', async () => {
    const first = await packsApp();
    const session = await first.sessions.create();
    await invokeTool(first, 'session_set_pack', { pack_path_or_name: 'review' }, agent(session.id));
    await first.close();
    const app = await makeTestApp({ workspace: first.workspace, env: first.env });
    expect((await entry(app, session.id, 'config')).removed_by).toBe('agent_policy');
    expect((await app.packs!.snapshot(session.id)).last_action).toBe('hydrate');
  });

  it('OPMODE-08: a pack that cannot be hydrated reports hydration_failed and applies nothing until it is back', async () => {
    const first = await packsApp();
    const session = await first.sessions.create();
    await invokeTool(first, 'session_set_pack', { pack_path_or_name: 'review' }, agent(session.id));
    await first.close();
    const manifest = join(first.workspace, '.svc/packs/review/pack.toml');
    renameSync(manifest, `${manifest}.bak`);

    const app = await makeTestApp({ workspace: first.workspace, env: first.env });
    const snap = await app.packs!.snapshot(session.id);
    expect(snap).toMatchObject({
      state: 'hydration_failed',
      active_operating_pack: '',
      pack_manifest_path: manifest,
      last_action: 'hydrate',
      hook_count: 0,
      diagnostics: [
        { section: 'pack', field: 'pack.toml', level: 'error', message: 'cannot read the manifest (ENOENT)' },
      ],
    });
    expect(snap.unavailable_reason).toBe(
      `pack "review" could not be hydrated from ${manifest}: pack.toml: cannot read the manifest (ENOENT)`,
    );
    expect(await sections(app, session.id)).toEqual([]);
    expect((await entry(app, session.id, 'config')).effective).toBe(true);

    renameSync(`${manifest}.bak`, manifest);
    expect(await app.packs!.snapshot(session.id)).toMatchObject({
      state: 'active',
      active_operating_pack: 'review',
    });
    expect((await entry(app, session.id, 'config')).removed_by).toBe('agent_policy');
  });

  it('OPMODE-08: an unusable database gives persistence_unavailable on read and 503 on activation', async () => {
    const workspace = tmpWorkspace({
      files: { ...packFiles(), 'not-a-dir': 'a file where the data dir should be' },
    });
    const app = await makeTestApp({ workspace, dataDir: join(workspace, 'not-a-dir'), config: ON });
    const snap = await invokeTool(app, 'get_operating_mode', { session_id: 'ses_0001' }, agent());
    expect(snap).toMatchObject({
      session_id: 'ses_0001',
      state: 'persistence_unavailable',
      active_operating_pack: '',
    });
    expect((snap as { unavailable_reason: string }).unavailable_reason).toContain('is not a directory');
    const routes = http(app);
    const got = await routes.get('?session_id=ses_0001');
    expect(got.status).toBe(200);
    expect(((await got.json()) as { state: string }).state).toBe('persistence_unavailable');
    expect((await routes.post({ session_id: 'ses_0001', pack_path_or_name: 'review' })).status).toBe(503);
    // The agent's prompt and funnel still work: no pack applies.
    expect(await sections(app, 'ses_0001')).toEqual([]);
  });

  it('OPMODE-25: the documented transitions, in order', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    const state = async () => await app.packs!.snapshot(session.id);
    const set = (ref: string) =>
      invokeTool(app, 'session_set_pack', { pack_path_or_name: ref }, agent(session.id)).catch(
        () => undefined,
      );
    expect(await state()).toMatchObject({ state: 'enabled_inactive' });
    expect(await state()).not.toHaveProperty('last_action');
    await set('nope');
    expect(await state()).toMatchObject({
      state: 'validation_failed',
      active_operating_pack: '',
      last_action: 'activate',
    });
    await set('review');
    expect(await state()).toMatchObject({
      state: 'active',
      active_operating_pack: 'review',
      last_action: 'activate',
    });
    await set('elsewhere/broken');
    expect(await state()).toMatchObject({ state: 'validation_failed', active_operating_pack: 'review' });
    await invokeTool(app, 'session_clear_pack', {}, agent(session.id));
    expect(await state()).toMatchObject({ state: 'enabled_inactive', last_action: 'clear', diagnostics: [] });
    await set('strict');
    expect(await state()).toMatchObject({ state: 'active', active_operating_pack: 'strict' });
  });
});
