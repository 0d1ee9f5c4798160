/**
 * The built binary: `svc config show-operating-mode` as a user runs it, gate off and on, with
 * a pack activated by another process (the database is the shared state).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { makeTestApp } from '../helpers/make-test-app';
import { runBin } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { expectNoMarkers, packFiles } from './fixtures';

const env = (ws: string) => ({ HOME: join(ws, '.home'), XDG_CONFIG_HOME: join(ws, '.home', '.config') });

describe('svc config show-operating-mode (binary)', () => {
  it('OPMODE-17 / OPMODE-21: reports disabled with the gate off, then the posture of an active session', async () => {
    const ws = tmpWorkspace({ files: packFiles() });
    const off = await runBin(['config', 'show-operating-mode'], { cwd: ws, env: env(ws) });
    expect(off, off.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(off.stdout).toContain('operating packs: disabled');
    expect(off.stdout).toContain('discovered packs: 2 (review, strict)');
    expect(off.stdout).toContain('  state: disabled');

    const app = await makeTestApp({
      workspace: ws,
      env: env(ws),
      config: { options: { operating_packs: true } },
    });
    const session = await app.sessions.create();
    await invokeTool(
      app,
      'session_set_pack',
      { pack_path_or_name: 'review' },
      { surface: 'agent', sessionId: session.id },
    );
    await app.close();

    const on = await runBin(['config', 'show-operating-mode', '--json', '--session-id', session.id], {
      cwd: ws,
      env: env(ws),
    });
    expect(on.code, on.stderr).toBe(0);
    const json = JSON.parse(on.stdout);
    expect(json).toMatchObject({
      available_packs: 2,
      posture: {
        session_id: session.id,
        state: 'active',
        active_operating_pack: 'review',
        last_action: 'activate',
      },
    });
    expectNoMarkers(on.stdout);
  });
});
