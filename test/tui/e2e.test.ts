/**
 * End to end: the built `svc` under tmux against the scripted fake provider. Types a prompt,
 * sees the permission dialog with the diff, approves it, and reads the screen: the edit landed
 * and the diff stays in the transcript.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it, onTestFinished } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { BIN } from '../helpers/run-bin';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const hasTmux = spawnSync('tmux', ['-V']).status === 0;

function capture(name: string): string {
  return execFileSync('tmux', ['capture-pane', '-p', '-t', name], { encoding: 'utf8' });
}

async function screenUntil(
  name: string,
  check: (screen: string) => boolean,
  timeoutMs = 15_000,
): Promise<string> {
  const start = Date.now();
  for (;;) {
    const screen = capture(name);
    if (check(screen)) return screen;
    if (Date.now() - start > timeoutMs) throw new Error(`screen never matched; last screen:\n${screen}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

describe('svc TUI end to end', () => {
  // Skipped until the agent loop (src/agent, issue 4) and the edit tool land on main: `svc`
  // can open, but a prompt answers "the agent loop is not available in this build". When they
  // land, wire createLocalClient to app.agent and drop the skip.
  it.skip('edits a file after the operator approves the diff', async () => {
    if (!hasTmux) throw new Error('tmux is required (apt-get install tmux)');
    const provider = await fakeProvider([
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
    const name = `svc-e2e-${process.pid}`;
    const home = join(ws, '.home');
    execFileSync('tmux', [
      'new-session',
      '-d',
      '-s',
      name,
      '-x',
      '100',
      '-y',
      '30',
      `cd ${ws} && env -i PATH="${process.env.PATH}" HOME="${home}" TERM=xterm-256color ${process.execPath} ${BIN}`,
    ]);
    onTestFinished(() => {
      spawnSync('tmux', ['kill-session', '-t', name]);
    });
    await screenUntil(name, (s) => s.includes('ask anything'));
    execFileSync('tmux', ['send-keys', '-t', name, 'change the greeting in hello.txt', 'Enter']);
    const dialog = await screenUntil(name, (s) => s.includes('Permission: edit'));
    expect(dialog).toContain('-hello world');
    expect(dialog).toContain('+goodbye world');
    await new Promise((r) => setTimeout(r, 400)); // the dialog ignores keys for a moment
    execFileSync('tmux', ['send-keys', '-t', name, 'a']);
    const done = await screenUntil(name, (s) => s.includes('Changed the greeting.'));
    expect(done).toContain('+goodbye world');
    expect(readFileSync(join(ws, 'hello.txt'), 'utf8')).toBe('goodbye world\n');
  });
});
