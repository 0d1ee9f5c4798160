/**
 * Operating pack activation through the native tools. Pins:
 * - the five pack tools exist only with the gate on and a controller (TOOLS-41, CFG-18);
 * - activation by name, path and preset id, and clearing, with last_action and preset id (OPMODE-05/06/26/28/29/31, CFG-19);
 * - every snapshot field of the spec and its type (OPMODE-01..12, 20);
 * - a failed activation keeps the previous pack and reports validation_failed with diagnostics (OPMODE-09);
 * - get_operating_mode is read-only and defaults to the tool-context session (OPMODE-39/40).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SvcError } from '../../src/errors';
import { OPERATING_MODE_STATES } from '../../src/packs/snapshot';
import { invokeTool } from '../../src/tools/core/call-tool';
import { makeTestApp } from '../helpers/make-test-app';
import { BROKEN_PACK, expectNoMarkers, ON, PRESETS, packFiles, packsApp } from './fixtures';

const PACK_TOOLS = [
  'session_set_pack',
  'session_clear_pack',
  'session_list_packs',
  'session_get_active_pack',
  'get_operating_mode',
];

const agent = (sessionId?: string) => ({ surface: 'agent' as const, sessionId });

describe('operating pack tools and activation', () => {
  it('TOOLS-41 / CFG-18: with options.operating_packs false all five pack tools are absent', async () => {
    const app = await makeTestApp({ files: packFiles() });
    for (const name of PACK_TOOLS) {
      expect(app.tools.get(name), name).toBeUndefined();
      const gate = app.tools.gates().find((g) => g.tool.name === name);
      expect(gate).toMatchObject({ registered: false, reason: 'options.operating_packs is false' });
      await expect(invokeTool(app, name, {}, agent())).rejects.toMatchObject({ code: 'not_found' });
    }
    const funnel = app.funnel();
    expect(funnel.filter((e) => PACK_TOOLS.includes(e.name)).every((e) => e.removed_by === 'gate')).toBe(
      true,
    );
  });

  it('TOOLS-41: with the gate on but no session pack controller the tools are absent too', async () => {
    const app = await makeTestApp({ files: packFiles(), config: ON, packs: false });
    expect(app.packs).toBeUndefined();
    for (const name of PACK_TOOLS) {
      expect(app.tools.get(name), name).toBeUndefined();
      expect(app.tools.gates().find((g) => g.tool.name === name)?.reason).toBe(
        'no session pack controller in this runtime',
      );
    }
  });

  it('TOOLS-41 / CFG-18: with the gate on and a controller all five are registered', async () => {
    const app = await packsApp();
    for (const name of PACK_TOOLS) expect(app.tools.get(name), name).toBeDefined();
    expect(app.tools.get('session_set_pack')?.mutates).toBe(true);
    expect(app.tools.get('get_operating_mode')?.mutates).toBe(false);
  });

  it('OPMODE-26 / OPMODE-28 / OPMODE-03: session_set_pack activates a pack by name', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    const result = await invokeTool(
      app,
      'session_set_pack',
      { pack_path_or_name: 'review' },
      agent(session.id),
    );
    expect(result).toEqual({ status: 'activated', session_id: session.id, pack_name: 'review' });
    const snap = await invokeTool(app, 'get_operating_mode', {}, agent(session.id));
    expect(snap).toMatchObject({
      session_id: session.id,
      state: 'active',
      active_operating_pack: 'review',
      operating_mode_preset_id: '',
      pack_manifest_path: join(app.workspace, '.svc/packs/review/pack.toml'),
      last_action: 'activate',
    });
  });

  it('OPMODE-06: activation by path leaves operating_mode_preset_id empty', async () => {
    const app = await packsApp({
      files: packFiles({ 'elsewhere/solo/pack.toml': 'name = "solo"\n[prompt]\npreamble = "hi"\n' }),
    });
    const session = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'elsewhere/solo' }, agent(session.id));
    const snap = await invokeTool(app, 'get_operating_mode', { session_id: session.id }, agent());
    expect(snap).toMatchObject({
      state: 'active',
      active_operating_pack: 'solo',
      operating_mode_preset_id: '',
      pack_manifest_path: join(app.workspace, 'elsewhere/solo/pack.toml'),
      has_prompt_preamble: true,
    });
    // An absolute path to the file works the same way.
    const other = await app.sessions.create();
    await invokeTool(
      app,
      'session_set_pack',
      { pack_path_or_name: join(app.workspace, 'elsewhere/solo/pack.toml') },
      agent(other.id),
    );
    expect((await app.packs!.snapshot(other.id)).active_operating_pack).toBe('solo');
  });

  it('CFG-19 / OPMODE-05: activation by preset id echoes the id and applies its overrides', async () => {
    const app = await packsApp({ config: PRESETS });
    const session = await app.sessions.create();
    const result = await invokeTool(
      app,
      'session_set_pack',
      { pack_path_or_name: 'careful' },
      agent(session.id),
    );
    expect(result).toEqual({ status: 'activated', session_id: session.id, pack_name: 'careful' });
    const snap = await app.packs!.snapshot(session.id);
    expect(snap).toMatchObject({
      state: 'active',
      active_operating_pack: 'review',
      operating_mode_preset_id: 'careful',
      choreography: 'plan_then_execute',
      skills: ['code-review'],
    });
    expect(await app.packs!.choreography(session.id)).toBe('plan_then_execute');
  });

  it('CFG-19: a preset whose overrides do not validate fails with a preset diagnostic', async () => {
    const app = await packsApp({ config: PRESETS });
    const session = await app.sessions.create();
    await expect(
      invokeTool(app, 'session_set_pack', { pack_path_or_name: 'badpreset' }, agent(session.id)),
    ).rejects.toMatchObject({ code: 'invalid_input' });
    const snap = await app.packs!.snapshot(session.id);
    expect(snap.state).toBe('validation_failed');
    expect(snap.diagnostics).toEqual([
      {
        section: 'preset',
        field: 'operating_mode_presets.badpreset.overrides.polcy',
        level: 'error',
        message: expect.stringContaining('unknown override key'),
      },
    ]);
    await expect(
      invokeTool(app, 'session_set_pack', { pack_path_or_name: 'missing' }, agent(session.id)),
    ).rejects.toMatchObject({ code: 'invalid_input' });
    expect((await app.packs!.snapshot(session.id)).diagnostics[0]).toMatchObject({
      section: 'preset',
      field: 'operating_mode_presets.missing.pack',
    });
  });

  it('OPMODE-29 / OPMODE-31 / OPMODE-04: session_clear_pack clears the pack', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'review' }, agent(session.id));
    const cleared = await invokeTool(app, 'session_clear_pack', {}, agent(session.id));
    expect(cleared).toEqual({ status: 'cleared', session_id: session.id });
    const snap = await app.packs!.snapshot(session.id);
    expect(snap).toMatchObject({
      state: 'enabled_inactive',
      active_operating_pack: '',
      operating_mode_preset_id: '',
      last_action: 'clear',
      hook_count: 0,
      has_prompt_preamble: false,
    });
    expect(snap).not.toHaveProperty('pack_manifest_path');
  });

  it('OPMODE-01 / OPMODE-02 / OPMODE-04 / OPMODE-07 / OPMODE-10 / OPMODE-20: a fresh session has every field, no manifest path and a UTC evidence time', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    const snap = (await invokeTool(app, 'get_operating_mode', {}, agent(session.id))) as Record<
      string,
      unknown
    >;
    expect(snap).toEqual({
      session_id: session.id,
      enabled: true,
      state: 'enabled_inactive',
      active_operating_pack: '',
      operating_mode_preset_id: '',
      diagnostics: [],
      last_evidence_at: '2026-11-22T12:00:00.000Z',
      skills: [],
      hook_count: 0,
      policy_rules: 0,
      task_rules: 0,
      skill_rules: 0,
      choreography: '',
      has_prompt_preamble: false,
    });
    expect(OPERATING_MODE_STATES).toContain(snap.state);
    expect(snap.last_evidence_at).toMatch(/Z$/);
    expect(new Date(snap.last_evidence_at as string).toISOString()).toBe(snap.last_evidence_at);
  });

  it('OPMODE-11 / OPMODE-12: the active pack is summarized by counts and names only', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'review' }, agent(session.id));
    const snap = await app.packs!.snapshot(session.id);
    expect(snap).toMatchObject({
      skills: ['code-review', 'testing'],
      hook_count: 2,
      policy_rules: 1,
      task_rules: 1,
      skill_rules: 1,
      choreography: 'executor_reviewer',
      has_prompt_preamble: true,
    });
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'strict' }, agent(session.id));
    expect(await app.packs!.snapshot(session.id)).toMatchObject({
      has_prompt_preamble: false,
      policy_rules: 2,
    });
    expectNoMarkers(JSON.stringify(snap));
  });

  it('OPMODE-09 / OPMODE-57: an invalid pack is not applied; diagnostics name section and field, never values', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'review' }, agent(session.id));
    const error = (await invokeTool(
      app,
      'session_set_pack',
      { pack_path_or_name: 'elsewhere/broken' },
      agent(session.id),
    ).catch((e: unknown) => e)) as SvcError;
    expect(error).toMatchObject({ code: 'invalid_input', status: 400 });
    expect(error.message).toContain('pack_path_or_name: pack "elsewhere/broken" failed validation');
    const snap = await app.packs!.snapshot(session.id);
    expect(snap.state).toBe('validation_failed');
    // The previous pack stays in force.
    expect(snap.active_operating_pack).toBe('review');
    expect(snap.last_action).toBe('activate');
    expect(snap.unavailable_reason).toContain('failed validation');
    expect(snap.diagnostics.map((d) => [d.section, d.field, d.level])).toEqual([
      ['skills', 'skills', 'error'],
      ['hooks', 'hooks[0].event', 'error'],
      ['policy', 'policy[0].effect', 'error'],
    ]);
    for (const d of snap.diagnostics)
      expect(Object.keys(d).sort()).toEqual(['field', 'level', 'message', 'section']);
    expectNoMarkers(JSON.stringify(snap));
    expectNoMarkers(error.message + JSON.stringify(error.details));
    // A good activation clears the failure.
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'strict' }, agent(session.id));
    expect(await app.packs!.snapshot(session.id)).toMatchObject({ state: 'active', diagnostics: [] });
    expect(BROKEN_PACK).toContain('effect');
  });

  it('OPMODE-57: an unknown pack name or session fails with a clear message', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    await expect(
      invokeTool(app, 'session_set_pack', { pack_path_or_name: 'nope' }, agent(session.id)),
    ).rejects.toThrow(
      'pack_path_or_name: no preset, pack or manifest matches "nope"; see session_list_packs',
    );
    await expect(
      invokeTool(app, 'session_set_pack', { session_id: 'ses_x', pack_path_or_name: 'review' }, agent()),
    ).rejects.toThrow('session_id: no session "ses_x"');
    await expect(
      invokeTool(app, 'session_set_pack', { pack_path_or_name: 'review' }, agent()),
    ).rejects.toThrow('session_id: required');
  });

  it('OPMODE-39 / OPMODE-40: get_operating_mode is read-only and defaults to the tool-context session', async () => {
    const app = await packsApp();
    const a = await app.sessions.create();
    const b = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'review' }, agent(a.id));
    const rowBefore = app.db.prepare('SELECT * FROM session_operating_packs').all();
    const first = await invokeTool(app, 'get_operating_mode', {}, agent(a.id));
    const second = await invokeTool(app, 'get_operating_mode', {}, agent(a.id));
    expect(second).toEqual(first);
    expect(first).toMatchObject({ session_id: a.id, active_operating_pack: 'review' });
    expect(app.db.prepare('SELECT * FROM session_operating_packs').all()).toEqual(rowBefore);
    expect(await invokeTool(app, 'get_operating_mode', { session_id: b.id }, agent(a.id))).toMatchObject({
      session_id: b.id,
      active_operating_pack: '',
    });
    await expect(invokeTool(app, 'get_operating_mode', {}, agent())).rejects.toThrow('session_id: required');
  });

  it('lists workspace and user packs (workspace shadows user) and presets', async () => {
    const app = await packsApp({
      config: PRESETS,
      globalConfig: {},
    });
    // A user pack, and one that the workspace shadows.
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const userPacks = join(app.env.XDG_CONFIG_HOME!, 'svc', 'packs');
    mkdirSync(join(userPacks, 'mine'), { recursive: true });
    writeFileSync(join(userPacks, 'mine', 'pack.toml'), 'name = "mine"\ndescription = "user pack"\n');
    mkdirSync(join(userPacks, 'review'), { recursive: true });
    writeFileSync(join(userPacks, 'review', 'pack.toml'), 'name = "review"\n');
    const listed = (await invokeTool(app, 'session_list_packs', {}, agent())) as {
      packs: { name: string; source: string; valid: boolean; errors: number }[];
      presets: { id: string; resolves: boolean }[];
    };
    expect(listed.packs.map((p) => [p.name, p.source, p.valid])).toEqual([
      ['mine', 'user', true],
      ['review', 'workspace', true],
      ['strict', 'workspace', true],
    ]);
    expect(listed.presets.map((p) => [p.id, p.resolves])).toEqual([
      ['badpreset', true],
      ['careful', true],
      ['missing', false],
    ]);
    const session = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'mine' }, agent(session.id));
    expect((await app.packs!.snapshot(session.id)).active_operating_pack).toBe('mine');
  });

  it('session_get_active_pack describes the pack in force with metadata only', async () => {
    const app = await packsApp();
    const session = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'review' }, agent(session.id));
    const details = await invokeTool(app, 'session_get_active_pack', {}, agent(session.id));
    expect(details).toMatchObject({
      session_id: session.id,
      active_operating_pack: 'review',
      source: 'workspace',
      skills: ['code-review', 'testing'],
      hooks: [
        { event: 'tool.finished', timeout_seconds: 30 },
        { event: 'run.finished', timeout_seconds: 30 },
      ],
      policy: { mode: 'denylist', allow_rules: 0, deny_rules: 1 },
      task_rules: ['tests-first'],
      skill_rules: 1,
      choreography: 'executor_reviewer',
      has_prompt_preamble: true,
      recent_hook_runs: [],
    });
    expectNoMarkers(JSON.stringify(app.redactor.value(details)));
  });
});
