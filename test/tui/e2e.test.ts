/**
 * End to end: the built `svc` under tmux against the scripted fake provider. Types a prompt,
 * sees the permission dialog with the diff, approves it, reads the screen (the edit landed, the
 * diff stays in the transcript), undoes it with /undo, and quits with the terminal restored.
 *
 * Every wait polls `tmux capture-pane` with a generous bound (a loaded 2-core machine can take
 * seconds per step); nothing waits a fixed time.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it, onTestFinished } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { BIN } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const hasTmux = spawnSync('tmux', ['-V']).status === 0;
const STEP_MS = 60_000;

/** A tmux server of its own (-L), so tests never touch the user's sessions. */
function tmux(socket: string) {
  const run = (...args: string[]) =>
    execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const screen = () => run('capture-pane', '-p', '-t', 'svc');
  return {
    run,
    screen,
    /** Literal text, then (optionally) keys such as Enter or C-c. */
    type(text: string, ...keys: string[]) {
      if (text) run('send-keys', '-t', 'svc', '-l', text);
      if (keys.length) run('send-keys', '-t', 'svc', ...keys);
    },
    async until(check: (screen: string) => boolean, what: string, timeoutMs = STEP_MS): Promise<string> {
      const start = Date.now();
      let last = '';
      for (;;) {
        try {
          last = screen();
        } catch (error) {
          throw new Error(`tmux pane is gone while waiting for ${what}: ${(error as Error).message}`);
        }
        if (check(last)) return last;
        if (Date.now() - start > timeoutMs)
          throw new Error(`waited ${timeoutMs} ms for ${what}; last screen:\n${last}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
  };
}

describe('svc TUI end to end', () => {
  it('GEN-01: svc opens the TUI in the workspace, edits a file after the operator approves the diff, then /undo restores it', {
    timeout: 8 * STEP_MS,
  }, async () => {
    if (!hasTmux) throw new Error('tmux is required (apt-get install tmux)');
    const provider = await fakeProvider([
      reply().toolCall('view', { path: 'hello.txt' }),
      reply().toolCall('edit', { path: 'hello.txt', old_string: 'hello world', new_string: 'goodbye world' }),
      reply().text('Changed the greeting.'),
    ]);
    const ws = tmpWorkspace({ files: { 'hello.txt': 'hello world\n' }, git: true });
    writeFileSync(
      join(ws, 'svc.toml'),
      stringify({
        providers: { fake: { type: 'openai-compat', base_url: provider.url } },
        models: { large: 'fake/m1' },
      }),
    );
    const home = realpathSync(mkdtempSync(join(tmpdir(), 'svc-home-')));
    onTestFinished(() => rmSync(home, { recursive: true, force: true }));
    const socket = `svc-e2e-${process.pid}`;
    const t = tmux(socket);
    // After svc exits, the shell prints its exit code and whether the tty is back in canonical
    // mode (Ink's raw mode undone): the terminal restore is visible on the screen.
    const script = [
      `cd '${ws}'`,
      `env -i PATH='${process.env.PATH}' HOME='${home}' TERM=xterm-256color '${process.execPath}' '${BIN}'`,
      'echo "svc-exit=$?"',
      "stty -a | tr ' ' '\\n' | grep -x -e icanon -e -icanon | sed 's/^/tty-/'",
      'sleep 600',
    ].join('; ');
    t.run('new-session', '-d', '-s', 'svc', '-x', '100', '-y', '32', script);
    onTestFinished(() => {
      spawnSync('tmux', ['-L', socket, 'kill-server']);
    });

    await t.until((s) => s.includes('ask anything'), 'the prompt');
    t.type('change the greeting in hello.txt', 'Enter');

    const dialog = await t.until((s) => s.includes('Permission: edit'), 'the permission dialog');
    expect(dialog).toContain('-hello world');
    expect(dialog).toContain('+goodbye world');
    // The dialog ignores keys for a moment (a keystroke meant for the prompt must not approve).
    await t.until((s) => s.includes('press y, s, n'), 'the dialog to take keys');
    // The keys of every surface (src/permissions/keys.ts), the same as svc run's prompt.
    expect(t.screen()).toContain('[y] allow once  [s] allow for this session  [n] deny');
    t.type('y');

    const done = await t.until((s) => s.includes('Changed the greeting.'), 'the final answer');
    expect(done).toMatch(/✓ edit hello\.txt/);
    expect(done).toContain('+goodbye world');
    expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('goodbye world\n');

    // /undo: the checkpoint taken before the prompt puts the file back.
    await t.until((s) => s.includes('○ idle'), 'the run to end');
    t.type('/undo', 'Enter');
    await t.until(
      (s) => s.includes('Undo: restore a checkpoint') && s.includes('before: change the greeting'),
      'the checkpoint list',
    );
    t.type('', 'Enter');
    await t.until((s) => s.includes('Restore "before: change the greeting'), 'the restore confirmation');
    t.type('y');
    const undone = await t.until((s) => s.includes('restored before: change the greeting'), 'the restore');
    expect(undone).toContain('hello.txt');
    expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('hello world\n');

    // Issue 9 (resizes cleanly): narrower and wider again, then 80x24. No rows of the wider frames
    // are left on the screen or above it (the redraw clears the scrollback too): one prompt line,
    // and every rule exactly as wide as the terminal.
    const rules = (s: string) => s.split('\n').filter((l) => /^─+$/.test(l));
    const clean = (s: string) =>
      s.split('ask anything').length === 2 && rules(s).length === 2 && rules(s).every((l) => l.length === 80);
    for (const [x, y] of [
      ['60', '18'],
      ['100', '32'],
      ['80', '24'],
    ]) {
      t.run('resize-window', '-t', 'svc', '-x', x, '-y', y);
      await t.until((s) => rules(s).some((l) => l.length === Number(x)), `the redraw at ${x} columns`);
      await new Promise((r) => setTimeout(r, 400)); // let the debounced redraw of this size run
    }
    await t.until(clean, 'a clean screen at 80x24');
    await new Promise((r) => setTimeout(r, 500)); // the debounced redraw after a resize has run
    const history = t.run('capture-pane', '-p', '-S', '-', '-t', 'svc');
    expect(clean(history), history).toBe(true);

    // ctrl+c twice on an empty prompt quits; the terminal is back to normal.
    t.type('', 'C-c');
    await t.until((s) => s.includes('press ctrl+c again'), 'the quit hint');
    t.type('', 'C-c');
    const after = await t.until((s) => /tty-(-?)icanon/.test(s), 'svc to exit');
    expect(after).toContain('svc-exit=0');
    expect(after).toMatch(/^tty-icanon$/m);
    expect(provider.unexpected).toEqual([]);
  });

  it('a 2 MB paste (tmux, bracketed) shows as one placeholder and is sent whole; a 10 MB one is refused with a notice once past 4 MiB', {
    timeout: 6 * STEP_MS,
  }, async () => {
    if (!hasTmux) throw new Error('tmux is required (apt-get install tmux)');
    const provider = await fakeProvider([reply().text('Got the paste.')]);
    const ws = tmpWorkspace({ files: {} });
    writeFileSync(
      join(ws, 'svc.toml'),
      stringify({
        providers: { fake: { type: 'openai-compat', base_url: provider.url } },
        models: { large: 'fake/m1' },
      }),
    );
    const home = realpathSync(mkdtempSync(join(tmpdir(), 'svc-home-')));
    onTestFinished(() => rmSync(home, { recursive: true, force: true }));
    const lines = (n: number) => Array.from({ length: n }, (_, i) => `pasted line ${i} ${'y'.repeat(30)}`);
    const small = lines(40_000).join('\n'); // about 2 MB
    const big = lines(200_000).join('\n'); // about 10 MB
    writeFileSync(join(home, 'small.txt'), small);
    writeFileSync(join(home, 'big.txt'), big);
    const socket = `svc-e2e-paste-${process.pid}`;
    const t = tmux(socket);
    const script = `cd '${ws}'; env -i PATH='${process.env.PATH}' HOME='${home}' TERM=xterm-256color '${process.execPath}' '${BIN}'; sleep 600`;
    t.run('new-session', '-d', '-s', 'svc', '-x', '100', '-y', '32', script);
    onTestFinished(() => {
      spawnSync('tmux', ['-L', socket, 'kill-server']);
    });
    await t.until((s) => s.includes('ask anything'), 'the prompt');

    // -p: the paste goes in brackets, as the TUI asked the terminal for.
    t.run('load-buffer', '-b', 'big', join(home, 'big.txt'));
    t.run('paste-buffer', '-p', '-b', 'big', '-t', 'svc');
    // Refused as it arrives, held no further than 4 MiB (input-filter.ts), not once all 10 MB are read.
    await t.until(
      (s) => /paste of more than 4\.0 MiB not added/.test(s.replace(/\s*\n/g, ' ')),
      'the refusal',
    );
    expect(t.screen()).toContain('ask anything');

    t.type('see: ');
    t.run('load-buffer', '-b', 'small', join(home, 'small.txt'));
    t.run('paste-buffer', '-p', '-b', 'small', '-t', 'svc');
    await t.until((s) => s.includes('see: [Pasted text #1 +39999 lines]'), 'the placeholder');
    t.type('', 'Enter');
    await t.until((s) => s.includes('Got the paste.'), 'the answer');
    const messages = (provider.requests[0].body as { messages: { role: string; content: unknown }[] })
      .messages;
    const user = messages.filter((m) => m.role === 'user').at(-1)!;
    // The whole paste, as a string or in content parts (JSON either way, so compared as JSON text).
    expect(JSON.stringify(user.content)).toContain(JSON.stringify(`see: ${small}`).slice(1, -1));
    expect(provider.unexpected).toEqual([]);
  });
});
