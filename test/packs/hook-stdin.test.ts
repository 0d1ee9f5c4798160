/**
 * A hook's event reaches it on stdin as a file, not a socket: with a socket as stdin and no SHLVL
 * in its environment (a hook's environment has none), a bash the hook starts takes itself for one
 * run by sshd and sources ~/.bashrc, 0.4 s a hook where that file starts pyenv, with whatever it
 * prints or does. Checked on both paths: the plain spawn and the command spawner's (the sandbox).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runHookCommand } from '../../src/packs/hooks';
import { spawnShell } from '../../src/workspace/process';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A home whose .bashrc leaves a marker, and a workspace; an environment without SHLVL. */
function setup() {
  const home = mkdtempSync(join(tmpdir(), 'svc-hook-home-'));
  const cwd = mkdtempSync(join(tmpdir(), 'svc-hook-cwd-'));
  dirs.push(home, cwd);
  const marker = join(home, 'bashrc-ran');
  writeFileSync(join(home, '.bashrc'), `echo sourced >> '${marker}'\n`);
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home };
  const sourced = () => {
    try {
      return readFileSync(marker, 'utf8');
    } catch {
      return '';
    }
  };
  return { home, cwd, env, sourced };
}

const EVENT = JSON.stringify({ event: 'tool.before', tool: 'bash', input: { command: 'ls' } });
/** The hook: a bash reading its event, then saying whether its stdin was a socket. */
const HOOK = `bash -c 'cat > got.json; if [ -S /dev/stdin ]; then echo socket; else echo file; fi > stdin-kind'`;

describe('a hook reads its event from a file, not a socket', () => {
  it('HOOK-STDIN-1: the plain spawn: the hook gets the event whole and its bash sources no ~/.bashrc', async () => {
    const { cwd, env, sourced } = setup();
    const outcome = await runHookCommand({ command: HOOK, cwd, env, stdin: EVENT, timeoutMs: 20_000 });
    expect(outcome.status).toBe('ok');
    expect(readFileSync(join(cwd, 'got.json'), 'utf8')).toBe(EVENT);
    expect(sourced()).toBe('');
    expect(readFileSync(join(cwd, 'stdin-kind'), 'utf8').trim()).toBe('file');
  });

  it('HOOK-STDIN-2: the spawner path (spawnShell with stdin): the same', async () => {
    const { cwd, env, sourced } = setup();
    const proc = spawnShell(HOOK, { cwd, env, stdin: EVENT, shell: '/bin/sh' });
    const exit = await proc.exited;
    proc.reap();
    expect(exit.code).toBe(0);
    expect(readFileSync(join(cwd, 'got.json'), 'utf8')).toBe(EVENT);
    expect(sourced()).toBe('');
    expect(readFileSync(join(cwd, 'stdin-kind'), 'utf8').trim()).toBe('file');
  });

  it('HOOK-STDIN-3: a hook that does not read its event still succeeds, and a large event arrives whole', async () => {
    const { cwd, env } = setup();
    expect(
      (await runHookCommand({ command: 'true', cwd, env, stdin: EVENT, timeoutMs: 20_000 })).status,
    ).toBe('ok');
    const large = JSON.stringify({ body: 'x'.repeat(4 * 1024 * 1024) });
    const outcome = await runHookCommand({
      command: 'cat > big.json',
      cwd,
      env,
      stdin: large,
      timeoutMs: 20_000,
    });
    expect(outcome.status).toBe('ok');
    expect(readFileSync(join(cwd, 'big.json'), 'utf8')).toBe(large);
  });
});
