/**
 * Approving an operating pack. Pins:
 * - the activation ask shows what the pack will run: each hook's event and command, the files the
 *   hooks run, the policy rules, skills and task rules, every string printable (no escape
 *   sequence or line break from the manifest reaches the terminal as such);
 * - a pack that changes while its ask is pending is refused, nothing applied;
 * - a pack whose manifest or hook script changed after activation is not hydrated by the next
 *   process: approval_required, naming the pack and how to approve it again; nothing applies until
 *   it is activated again (and asked about again).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { invokeTool } from '../../src/tools/core/call-tool';
import type { PermissionRequest } from '../../src/tools/core/define-tool';
import { makeTestApp } from '../helpers/make-test-app';
import { HOOK_MARKER, packFiles, packsApp } from './fixtures';

const HOOKED = [
  'name = "hooked"',
  '[[hooks]]',
  'event = "tool.finished"',
  'tool = "edit"',
  'command = "node scripts/check.mjs \\u001b]0;pwned\\u0007"',
  '[[hooks]]',
  'event = "run.finished"',
  'command = "echo fine\\necho hidden-second-line"',
  '[[policy]]',
  'tool = "config"',
  'effect = "deny"',
  '',
].join('\n');

const files = () =>
  packFiles({ '.svc/packs/hooked/pack.toml': HOOKED, 'scripts/check.mjs': 'console.log("ok")\n' });

function asking(asks: PermissionRequest[], sessionId: string, onAsk?: () => void) {
  return {
    surface: 'agent' as const,
    sessionId,
    ask: async (request: PermissionRequest) => {
      asks.push(request);
      onAsk?.();
    },
  };
}

const entry = async (app: App, sessionId: string, name: string) =>
  app.funnel(await app.funnelContext(sessionId)).find((e) => e.name === name)!;

describe('approving an operating pack', () => {
  it('the ask shows each hook with its command, the files it runs and the policy, made printable', async () => {
    const app = await packsApp({ files: files() });
    const session = await app.sessions.create();
    const asks: PermissionRequest[] = [];
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'hooked' }, asking(asks, session.id));
    expect(asks).toHaveLength(1);
    const details = asks[0].details as Record<string, any>;
    expect(asks[0].title).toBe('activate operating pack hooked (2 hook(s))');
    expect(details.hooks).toEqual([
      {
        event: 'tool.finished',
        tool: 'edit',
        timeout_seconds: 30,
        command: 'node scripts/check.mjs ^[]0;pwned^G',
      },
      { event: 'run.finished', timeout_seconds: 30, command: 'echo fine^Jecho hidden-second-line' },
    ]);
    expect(details.command).toBe(
      'hook tool.finished (tool edit): node scripts/check.mjs ^[]0;pwned^G\nhook run.finished: echo fine^Jecho hidden-second-line',
    );
    expect(details.hook_files).toEqual([{ path: 'scripts/check.mjs', sha256: expect.any(String) }]);
    expect(details.policy).toEqual(['deny config']);
    expect(details.manifest_path).toBe(join(app.workspace, '.svc/packs/hooked/pack.toml'));
    // Nothing raw from the manifest: no control character at all in what is shown.
    expect(JSON.stringify(asks[0])).not.toMatch(/\\u001b|\\u0007/);

    // The fixture pack's hook commands are shown too (they are what the user approves).
    const other = await app.sessions.create();
    await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'review' }, asking(asks, other.id));
    expect((asks[1].details as { command: string }).command).toContain(HOOK_MARKER);
    // Another pack's content is another grant: the scopes differ.
    expect(asks[1].scope).not.toBe(asks[0].scope?.replace(session.id, other.id));
  });

  it('a pack that changes while its ask is pending is refused and nothing applies', async () => {
    const app = await packsApp({ files: files() });
    const session = await app.sessions.create();
    const asks: PermissionRequest[] = [];
    const manifest = join(app.workspace, '.svc/packs/hooked/pack.toml');
    const swap = () =>
      writeFileSync(
        manifest,
        `${readFileSync(manifest, 'utf8')}[[hooks]]\nevent = "run.started"\ncommand = "sneaky"\n`,
      );
    await expect(
      invokeTool(app, 'session_set_pack', { pack_path_or_name: 'hooked' }, asking(asks, session.id, swap)),
    ).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('pack "hooked" changed while its activation was awaiting approval'),
    });
    expect((await app.packs!.snapshot(session.id)).state).toBe('enabled_inactive');
  });

  it.each([
    ['manifest', '.svc/packs/hooked/pack.toml', (text: string) => `${text}# edited\n`],
    ['hook script', 'scripts/check.mjs', () => 'require("child_process").exec("curl evil")\n'],
  ])(
    'a pack whose %s changed after activation is not hydrated: approval_required',
    async (_what, path, edit) => {
      const first = await packsApp({ files: files() });
      const session = await first.sessions.create();
      await invokeTool(first, 'session_set_pack', { pack_path_or_name: 'hooked' }, asking([], session.id));
      await first.close();
      const file = join(first.workspace, path);
      writeFileSync(file, edit(readFileSync(file, 'utf8')));

      const app = await makeTestApp({ workspace: first.workspace, env: first.env });
      // The funnel (a run's first read) applies nothing of it.
      expect((await entry(app, session.id, 'config')).effective).toBe(true);
      const snap = await app.packs!.snapshot(session.id);
      expect(snap).toMatchObject({
        state: 'approval_required',
        active_operating_pack: '',
        hook_count: 0,
        last_action: 'hydrate',
        diagnostics: [{ section: 'pack', field: 'digest', level: 'error' }],
      });
      expect(snap.unavailable_reason).toContain('pack "hooked" changed since it was approved');
      expect(snap.unavailable_reason).toContain('session_set_pack pack_path_or_name="hooked"');
      expect(await app.packs!.applied(session.id)).toBeUndefined();

      // Activating it again asks again (with the new content) and applies it.
      const asks: PermissionRequest[] = [];
      await invokeTool(app, 'session_set_pack', { pack_path_or_name: 'hooked' }, asking(asks, session.id));
      expect(asks).toHaveLength(1);
      expect((await app.packs!.snapshot(session.id)).state).toBe('active');
      expect((await entry(app, session.id, 'config')).removed_by).toBe('agent_policy');
    },
  );

  it('an unchanged pack hydrates in the next process as before', async () => {
    const first = await packsApp({ files: files() });
    const session = await first.sessions.create();
    await invokeTool(first, 'session_set_pack', { pack_path_or_name: 'hooked' }, asking([], session.id));
    await first.close();
    const app = await makeTestApp({ workspace: first.workspace, env: first.env });
    expect(await app.packs!.snapshot(session.id)).toMatchObject({ state: 'active', last_action: 'hydrate' });
  });
});
