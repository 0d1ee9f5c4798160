/**
 * The TUI loads React's production build by setting NODE_ENV=production while its modules load
 * (src/surfaces/tui/production-react.ts). Pins, with the built `svc` under tmux: a command the
 * agent runs afterwards sees no NODE_ENV when the user had none, and the user's own NODE_ENV when
 * they had one (passed on by `options.shell_env.include`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { STEP_MS, svcInTmux } from '../helpers/tmux';

describe('NODE_ENV of the commands the TUI runs', () => {
  it.each([
    { user: undefined, seen: 'node_env=unset' },
    { user: 'development', seen: 'node_env=development' },
  ])('user NODE_ENV $user: the bash tool sees $seen', { timeout: 3 * STEP_MS }, async ({ user, seen }) => {
    const provider = await fakeProvider([
      reply().toolCall('bash', { command: 'echo "node_env=${NODE_ENV-unset}" > env.txt' }),
      reply().text('Wrote env.txt.'),
    ]);
    const ws = tmpWorkspace({ files: {} });
    writeFileSync(
      join(ws, 'svc.toml'),
      stringify({
        providers: { fake: { type: 'openai-compat', base_url: provider.url } },
        models: { large: 'fake/m1' },
        permissions: { allowed_tools: ['bash'] },
        options: { shell_env: { include: ['NODE_ENV'] } },
      }),
    );
    // permissions.allowed_tools needs trust: the workspace is trusted as `svc trust` would.
    const t = svcInTmux({
      cwd: ws,
      columns: 100,
      rows: 30,
      env: user ? { NODE_ENV: user } : {},
      trustWorkspace: true,
    });
    await t.until((s) => s.includes('ask anything'), 'the prompt');
    t.type('write env.txt', 'Enter');
    await t.until((s) => s.includes('Wrote env.txt.'), 'the answer');
    expect(readFileSync(join(ws, 'env.txt'), 'utf8').trim()).toBe(seen);
    expect(provider.unexpected).toEqual([]);
  });
});
