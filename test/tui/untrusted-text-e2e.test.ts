/**
 * Outside text met on a real terminal: the built `svc` under tmux against the scripted fake
 * provider. Pins:
 * - a command longer than the screen opens in the permission dialog on its first line with the
 *   dialog's title above it, scrolls with pgdn, and `y` allows it only once its last line was on
 *   the screen; its escape sequences are shown (`^[[8m`), not acted on.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { STEP_MS, svcInTmux } from '../helpers/tmux';

const ESC = '\x1b';

function workspace(url: string): string {
  const ws = tmpWorkspace({ files: {}, git: true });
  writeFileSync(
    join(ws, 'svc.toml'),
    stringify({
      providers: { fake: { type: 'openai-compat', base_url: url } },
      models: { large: 'fake/m1' },
    }),
  );
  return ws;
}

describe('outside text on the terminal (tmux)', () => {
  it('a long command opens on its first line and is allowed only after its last line was shown', {
    timeout: 6 * STEP_MS,
  }, async () => {
    const command = `touch PWNED_TOP # ${ESC}[8mhidden\n${'# just listing\n'.repeat(80)}ls -la`;
    const provider = await fakeProvider([
      reply().toolCall('bash', { command }),
      reply().text('Listed the files.'),
    ]);
    const ws = workspace(provider.url);
    const t = svcInTmux({ cwd: ws, columns: 100, rows: 30 });
    await t.until((s) => s.includes('ask anything'), 'the prompt');
    t.type('list the files', 'Enter');

    const dialog = await t.until((s) => s.includes('[y] allow once'), 'the permission dialog');
    expect(dialog).toContain('Permission: bash');
    expect(dialog).toContain('$ touch PWNED_TOP # ^[[8mhidden');
    expect(dialog).toMatch(/\+\d+ more lines · pgdn/);
    expect(dialog).not.toContain('ls -la');
    const cells = t.run('capture-pane', '-p', '-e', '-t', 'svc');
    expect(cells).not.toMatch(new RegExp(`${ESC}\\[(?:[0-9;]*;)?8m`));
    await t.until((s) => s.includes('pgdn: read to the end to allow'), 'the dialog to take keys');
    // Unread, y does nothing: the dialog is still there after it, and nothing ran.
    t.type('y');
    for (let i = 0; i < 20 && !t.screen().includes('ls -la'); i++) {
      t.type('', 'PageDown');
      await t.until((s) => s.includes('Permission: bash'), 'the dialog after pgdn');
    }
    const end = await t.until((s) => s.includes('ls -la') && s.includes('press y, s, n'), 'the last line');
    expect(end).toContain('Permission: bash');
    expect(existsSync(join(ws, 'PWNED_TOP'))).toBe(false);
    t.type('y');
    await t.until((s) => s.includes('Listed the files.'), 'the answer');
    expect(existsSync(join(ws, 'PWNED_TOP'))).toBe(true);
    expect(provider.unexpected).toEqual([]);
  });
});
