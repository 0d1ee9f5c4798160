/**
 * Outside text met on a real terminal: the built `svc` under tmux against the scripted fake
 * provider. Pins:
 * - a command longer than the screen opens in the permission dialog on its first line with the
 *   dialog's title above it, scrolls with pgdn, and `y` allows it only once its last line was on
 *   the screen; its escape sequences are shown (`^[[8m`), not acted on;
 * - colored text and OSC, DCS and APC strings typed into the prompt leave only their text (none of
 *   the strings');
 * - model text and a command's output that carry OSC (window title, clipboard) and SGR (conceal,
 *   colors) sequences leave the pane's title, tmux's clipboard buffers and the cells' attributes
 *   (capture-pane -e) as they were.
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

  it('OSC and SGR sequences in model text and command output do not reach the terminal', {
    timeout: 6 * STEP_MS,
  }, async () => {
    const provider = await fakeProvider([
      reply()
        .text(
          `Title ${ESC}]0;PWNED-TITLE\x07 clip ${ESC}]52;c;cHduZWQ=\x07 ${ESC}[8mconcealed${ESC}[0m ${ESC}[48;5;201mpink${ESC}[0m.`,
        )
        .toolCall('bash', { command: "printf '\\033]0;PWNED-TOOL\\007\\033]52;c;dG9vbA==\\007tool-out\\n'" }),
      reply().text('All done.'),
    ]);
    const ws = workspace(provider.url);
    const t = svcInTmux({ cwd: ws, columns: 100, rows: 30 });
    // tmux keeps what an OSC 52 writes as a paste buffer once set-clipboard is on.
    t.run('set-option', '-g', 'set-clipboard', 'on');
    const titleBefore = t.run('display-message', '-p', '-t', 'svc', '#{pane_title}');
    await t.until((s) => s.includes('ask anything'), 'the prompt');
    t.type('print something', 'Enter');
    const step = await t.until(
      (s) => s.includes('All done.') || s.includes('press y, s, n'),
      'the answer or the permission dialog',
    );
    if (!step.includes('All done.')) {
      t.type('y');
      await t.until((s) => s.includes('All done.'), 'the answer');
    }
    const screen = await t.until((s) => s.includes('○ idle'), 'the run to end');
    expect(screen).toContain('concealed');
    expect(screen).toContain('tool-out');
    expect(t.run('display-message', '-p', '-t', 'svc', '#{pane_title}')).toBe(titleBefore);
    expect(t.run('display-message', '-p', '-t', 'svc', '#{pane_title}')).not.toContain('PWNED');
    expect(t.run('list-buffers')).toBe('');
    const cells = t.run('capture-pane', '-p', '-e', '-S', '-', '-t', 'svc');
    expect(cells).not.toMatch(new RegExp(`${ESC}\\[(?:[0-9;]*;)?8m`));
    expect(cells).not.toContain('48;5;201');
    expect(provider.unexpected).toEqual([]);
  });

  it('colored output typed or pasted into the prompt is taken as its text, and the TUI keeps running', {
    timeout: 6 * STEP_MS,
  }, async () => {
    const provider = await fakeProvider([reply().text('Read the colors.')]);
    const ws = workspace(provider.url);
    const t = svcInTmux({ cwd: ws, columns: 100, rows: 30 });
    await t.until((s) => s.includes('ask anything'), 'the prompt');
    // Typed: Ink's key parser threw on ESC [31m, which stopped the TUI; an OSC string's text
    // (a title, a hyperlink), a DCS or APC string's (a terminal's answers) was typed into the prompt.
    t.type(`${ESC}[31mred${ESC}]0;osc title\x07${ESC}]8;;http://osc.example/${ESC}\\${ESC}[0m `);
    t.type(`${ESC}P1+r544e=osc-dcs${ESC}\\${ESC}_Gi=31;osc-apc${ESC}\\`);
    await t.until((s) => s.includes('› red'), 'the typed text');
    // Pasted in brackets (-p), as the TUI asks the terminal for.
    writeFileSync(join(t.home, 'colored.txt'), `${ESC}[1;32m✓${ESC}[0m passed\n${ESC}[31m✗ failed${ESC}[0m`);
    t.run('load-buffer', '-b', 'colored', join(t.home, 'colored.txt'));
    t.run('paste-buffer', '-p', '-b', 'colored', '-t', 'svc');
    await t.until((s) => s.includes('✗ failed'), 'the pasted text');
    t.type('', 'Enter');
    await t.until((s) => s.includes('Read the colors.'), 'the answer');
    expect(t.screen()).not.toContain('terminal UI stopped');
    expect(t.screen()).not.toContain('osc');
    const messages = (provider.requests[0].body as { messages: { role: string; content: unknown }[] })
      .messages;
    const user = messages.filter((m) => m.role === 'user').at(-1)!;
    expect(JSON.stringify(user.content)).toContain(JSON.stringify('red ✓ passed\n✗ failed').slice(1, -1));
    expect(provider.unexpected).toEqual([]);
  });
});
