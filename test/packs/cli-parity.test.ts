/**
 * `svc config show-operating-mode` and parity across surfaces. Pins:
 * - the text output names the gate, discovery counts, preset ids and the posture (OPMODE-17);
 * - `--json` is `{ posture, available_packs, pack_names, preset_ids }`; `--session-id` goes inside posture (OPMODE-18/19);
 * - only this command reports `disabled` and `unavailable`; the route and tool fail closed (OPMODE-21/22/24);
 * - it is a read-only projection: no database is created, nothing is hydrated;
 * - the same session gives the same snapshot over HTTP, the native tool and the CLI (OPMODE-46/47/48);
 * - no preamble, hook command, policy or secret reaches any output (OPMODE-13/14/15/16).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { runCli } from '../../src/surfaces/cli/index';
import { invokeTool } from '../../src/tools/core/call-tool';
import type { CliBinding } from '../../src/tools/core/define-tool';
import { getOperatingMode } from '../../src/tools/packs';
import { makeTestApp } from '../helpers/make-test-app';
import { viaCli, viaHttp, viaTool } from '../helpers/surfaces';
import { expectNoMarkers, http, PRESETS, packFiles, packsApp } from './fixtures';

const cli = getOperatingMode.surfaces!.cli as CliBinding;
const agent = (sessionId?: string) => ({ surface: 'agent' as const, sessionId });

async function show(app: App, args: string[] = [], appOptions = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(
    ['config', 'show-operating-mode', ...args, '--cwd', app.workspace, '--data-dir', app.dataDir],
    {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
      env: app.env as Record<string, string | undefined>,
      cwd: app.workspace,
    },
    { appOptions },
  );
  let json: any;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = undefined;
  }
  return { code, stdout, stderr, json };
}

describe('svc config show-operating-mode', () => {
  it('OPMODE-17: prints the gate, discovery counts, preset ids and the posture', async () => {
    const app = await packsApp({ config: PRESETS });
    const out = await show(app);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain('operating packs: enabled (options.operating_packs = true)');
    expect(out.stdout).toContain('discovered packs: 2 (review, strict)');
    expect(out.stdout).toContain('preset ids: badpreset, careful, missing');
    expect(out.stdout).toContain('posture:');
    expect(out.stdout).toContain('  state: enabled_inactive');
  });

  it('OPMODE-18 / OPMODE-19: --json holds posture plus the discovery fields; --session-id goes inside posture', async () => {
    const app = await packsApp({ config: PRESETS });
    const session = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'careful' }, agent(session.id));
    const out = await show(app, ['--json', '--session-id', session.id]);
    expect(out.code, out.stderr).toBe(0);
    expect(Object.keys(out.json).sort()).toEqual(['available_packs', 'pack_names', 'posture', 'preset_ids']);
    expect(out.json).toMatchObject({
      available_packs: 2,
      pack_names: ['review', 'strict'],
      preset_ids: ['badpreset', 'careful', 'missing'],
      posture: {
        session_id: session.id,
        state: 'active',
        active_operating_pack: 'review',
        operating_mode_preset_id: 'careful',
      },
    });
    const text = await show(app, ['--session-id', session.id]);
    expect(text.stdout).toContain(`  session: ${session.id}`);
    expect(text.stdout).toContain('  preset: careful');
  });

  it('OPMODE-21 / CFG-18: with the gate off the CLI still runs and reports disabled', async () => {
    const app = await makeTestApp({ files: packFiles() });
    const session = await app.sessions.create();
    const out = await show(app, ['--json', '--session-id', session.id]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.json.posture).toMatchObject({
      session_id: session.id,
      enabled: false,
      state: 'disabled',
      unavailable_reason: 'options.operating_packs is false; set it to true to use operating packs',
    });
    expect(out.json.available_packs).toBe(2);
    const text = await show(app);
    expect(text.stdout).toContain('operating packs: disabled (options.operating_packs = false)');
    expect(text.stdout).toContain('  state: disabled');
  });

  it('OPMODE-21: unavailable for an unknown session or a runtime without the controller', async () => {
    const app = await packsApp();
    const unknown = await show(app, ['--json', '--session-id', 'ses_missing']);
    expect(unknown.code, unknown.stderr).toBe(0);
    expect(unknown.json.posture).toMatchObject({
      session_id: 'ses_missing',
      state: 'unavailable',
      unavailable_reason: 'no session "ses_missing" in this workspace',
    });
    const bare = await show(app, ['--json'], { packs: false });
    expect(bare.code, bare.stderr).toBe(0);
    expect(bare.json.posture).toMatchObject({
      state: 'unavailable',
      unavailable_reason: 'this runtime has no session pack controller (no operating-mode parity)',
    });
  });

  it('OPMODE-22 / OPMODE-24: the route and the native tool fail closed where the CLI says unavailable', async () => {
    const app = await packsApp();
    const response = await http(app).get('?session_id=ses_missing');
    expect(response.status).toBe(400);
    expect(await response.text()).not.toContain('unavailable');
    await expect(
      invokeTool(app, 'get_operating_mode', { session_id: 'ses_missing' }, agent()),
    ).rejects.toMatchObject({ code: 'not_found' });
    // With the gate off, the tool is not there at all.
    const off = await makeTestApp();
    await expect(invokeTool(off, 'get_operating_mode', {}, agent())).rejects.toMatchObject({
      code: 'not_found',
    });
    // And a direct controller call fails closed too.
    await expect(off.packs!.snapshot('ses_0001')).rejects.toThrow('operating packs are disabled');
  });

  it('CLI-07: is a read-only projection: it creates no database, hydrates and writes nothing', async () => {
    const app = await packsApp();
    const out = await show(app, ['--json']);
    expect(out.json.posture.state).toBe('enabled_inactive');
    expect(existsSync(join(app.dataDir, 'svc.db'))).toBe(false);

    const session = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'review' }, agent(session.id));
    await app.close();
    // A restarted process has not hydrated yet; the projection reports the stored action.
    const peek = await show(app, ['--json', '--session-id', session.id]);
    expect(peek.json.posture.last_action).toBe('activate');
    const again = await show(app, ['--json', '--session-id', session.id]);
    expect(again.json.posture.last_action).toBe('activate');
  });
});

describe('operating mode parity', () => {
  it('OPMODE-46: GET, the native tool and the CLI --json posture return the same snapshot', async () => {
    const app = await packsApp({ config: PRESETS });
    const session = await app.sessions.create();
    expect(session.id).toBe('ses_0001'); // the tool's example input
    for (const ref of [undefined, 'careful', 'elsewhere/broken']) {
      if (ref)
        await invokeTool(app, 'session_set_pack', { pack_path_or_name: ref }, agent(session.id)).catch(
          () => {},
        );
      for (const example of getOperatingMode.examples!) {
        const direct = await viaTool(app, getOperatingMode, example);
        const viaRoute = await viaHttp(app, { method: 'GET', path: '/v1/session-operating-mode' }, example);
        expect(viaRoute.status, viaRoute.text).toBe(200);
        expect(viaRoute.body).toEqual(direct);
        const out = await viaCli(app, cli, example);
        expect(out.code, out.stderr).toBe(0);
        expect((out.json as { posture: unknown }).posture).toEqual(direct);
      }
    }
  });

  it('OPMODE-46: after a restart the hydrated snapshot is the same on every surface', async () => {
    const first = await packsApp();
    const session = await first.sessions.create();
    await invokeTool(first, 'session_set_pack', { pack_path_or_name: 'review' }, agent(session.id));
    await first.close();
    const app = await makeTestApp({ workspace: first.workspace, env: first.env });
    const viaRoute = (await (await http(app).get(`?session_id=${session.id}`)).json()) as {
      last_action: string;
    };
    expect(viaRoute.last_action).toBe('hydrate');
    expect(await viaTool(app, getOperatingMode, { session_id: session.id })).toEqual(viaRoute);
    expect((await show(app, ['--json', '--session-id', session.id])).json.posture).toEqual(viaRoute);
  });

  it('OPMODE-47 / OPMODE-48: POST and DELETE give the same resulting snapshot as session_set_pack and session_clear_pack', async () => {
    const app = await packsApp();
    const a = await app.sessions.create();
    const b = await app.sessions.create();
    const routes = http(app);
    const posted = await routes.post({ session_id: a.id, pack_path_or_name: 'review' });
    const called = await invokeTool(
      app,
      'session_set_pack',
      { session_id: b.id, pack_path_or_name: 'review' },
      agent(),
    );
    expect({ ...((await posted.json()) as object), session_id: '-' }).toEqual({
      ...(called as object),
      session_id: '-',
    });
    const same = (x: object) => ({ ...x, session_id: '-' });
    expect(same(await app.packs!.snapshot(a.id))).toEqual(same(await app.packs!.snapshot(b.id)));
    await routes.delete(`?session_id=${a.id}`);
    await invokeTool(app, 'session_clear_pack', { session_id: b.id }, agent());
    expect(same(await app.packs!.snapshot(a.id))).toEqual(same(await app.packs!.snapshot(b.id)));
    expect((await app.packs!.snapshot(a.id)).last_action).toBe('clear');
  });
});

describe('nothing but metadata leaves', () => {
  it('OPMODE-13 / OPMODE-14 / OPMODE-15 / OPMODE-16: no preamble, hook command, policy or secret in any output', async () => {
    const app = await packsApp({ config: PRESETS });
    const session = await app.sessions.create();
    const outputs: string[] = [];
    const routes = http(app);
    outputs.push(await (await routes.post({ session_id: session.id, pack_path_or_name: 'review' })).text());
    outputs.push(await (await routes.get(`?session_id=${session.id}`)).text());
    outputs.push(
      await (await routes.post({ session_id: session.id, pack_path_or_name: 'elsewhere/broken' })).text(),
    );
    outputs.push(await (await routes.get(`?session_id=${session.id}`)).text());
    for (const name of ['get_operating_mode', 'session_get_active_pack', 'session_list_packs']) {
      outputs.push(JSON.stringify(app.redactor.value(await invokeTool(app, name, {}, agent(session.id)))));
    }
    outputs.push(JSON.stringify(app.funnel(await app.funnelContext(session.id))));
    for (const args of [
      [],
      ['--json'],
      ['--session-id', session.id],
      ['--json', '--session-id', session.id],
    ]) {
      const out = await show(app, args);
      expect(out.code, out.stderr).toBe(0);
      outputs.push(out.stdout, out.stderr);
    }
    outputs.push(JSON.stringify(app.memoryLog.records));
    for (const output of outputs) expectNoMarkers(output);
    // The snapshot still says there is a preamble, hooks and a policy.
    expect(JSON.parse(outputs[1])).toMatchObject({
      has_prompt_preamble: true,
      hook_count: 2,
      policy_rules: 1,
    });
  });
});
