/**
 * diagnostics against a fake language server (test/fixtures/coding-tools/fake-lsp.mjs) speaking
 * LSP over stdio, in push and pull mode. Pins: gated off without [lsp.*]; diagnostics of the
 * file's current content; a re-check after an edit sees the change; unknown file types and
 * servers that cannot start are clear errors; servers stop with the app.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { toolHarness } from './harness';

const FAKE = resolve(import.meta.dirname, '../fixtures/coding-tools/fake-lsp.mjs');
const lsp = (args: string[] = []) => ({
  lsp: { fake: { command: process.execPath, args: [FAKE, ...args], extensions: ['ts'] } },
});

/** The process runs (a zombie nobody reaped yet has ended). */
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

describe('diagnostics', () => {
  it('is not registered without a configured language server', async () => {
    const h = await toolHarness();
    expect(h.app.tools.get('diagnostics')).toBeUndefined();
    expect(h.app.tools.gates().find((g) => g.tool.name === 'diagnostics')?.reason).toBe(
      "no language server configured under [lsp.<id>] or found for the workspace's languages (svc config show-lsp)",
    );
  });

  it.each([
    ['push', []],
    ['pull', ['--pull']],
  ])('reports diagnostics (%s mode) and sees later edits', async (_mode, args) => {
    const h = await toolHarness({ files: { 'src/a.ts': 'ok\nan ERROR here\n  WARN\n' }, config: lsp(args) });
    const result = await h.call('diagnostics', { path: 'src/a.ts' });
    expect(result).toEqual({
      path: 'src/a.ts',
      server: 'fake',
      complete: true,
      counts: { error: 1, warning: 1, information: 0, hint: 0 },
      diagnostics: [
        {
          line: 2,
          column: 4,
          end_line: 2,
          end_column: 9,
          severity: 'error',
          message: 'found ERROR',
          source: 'fake-lsp',
          code: 'E1',
        },
        {
          line: 3,
          column: 3,
          end_line: 3,
          end_column: 7,
          severity: 'warning',
          message: 'found WARN',
          source: 'fake-lsp',
          code: 'W1',
        },
      ],
    });
    expect(h.modelText('diagnostics', result)).toBe(
      'src/a.ts:2:4 error: found ERROR [fake-lsp E1]\nsrc/a.ts:3:3 warning: found WARN [fake-lsp W1]\n(1 errors, 1 warnings)',
    );
    writeFileSync(join(h.app.workspace, 'src/a.ts'), 'all fine now\n');
    const after = await h.call('diagnostics', { path: 'src/a.ts' });
    expect(after.diagnostics).toEqual([]);
    expect(h.modelText('diagnostics', after)).toBe('No problems reported for src/a.ts by fake.');
  });

  it('CI-TIME-1: a server silent when a list stays the same: a file unchanged since its publish answers at once, complete', async () => {
    const h = await toolHarness({
      files: { 'src/a.ts': 'all fine\n' },
      config: lsp(['--silent-unchanged']),
    });
    const first = await h.call('diagnostics', { path: 'src/a.ts', wait_seconds: 10 });
    expect(first).toMatchObject({ complete: true, diagnostics: [] });
    // The same text again: the server publishes nothing for it, and what it published still holds
    // (before, the call waited out its 10 s and answered complete: false).
    const again = await h.call('diagnostics', { path: 'src/a.ts', wait_seconds: 10 });
    expect(again).toMatchObject({ complete: true, diagnostics: [] });
    // A changed text is sent and its new list waited for.
    writeFileSync(join(h.app.workspace, 'src/a.ts'), 'an ERROR now\n');
    const changed = await h.call('diagnostics', { path: 'src/a.ts', wait_seconds: 10 });
    expect(changed).toMatchObject({
      complete: true,
      counts: { error: 1, warning: 0, information: 0, hint: 0 },
    });
  });

  it('stops the language servers when the app closes', async () => {
    const tag = `--tag=${randomUUID()}`;
    const h = await toolHarness({ files: { 'a.ts': 'x\n' }, config: lsp([tag]) });
    await h.call('diagnostics', { path: 'a.ts' });
    const running = () => {
      try {
        return execFileSync('pgrep', ['-f', '--', tag], { encoding: 'utf8' }).trim() !== '';
      } catch {
        return false;
      }
    };
    expect(running()).toBe(true);
    await h.app.close();
    for (let i = 0; i < 200 && running(); i++) await sleep(50);
    expect(running()).toBe(false);
  });

  it('LSP-06: a language server’s own children (a typings installer’s npm) do not outlive the app', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-lsp-helper-'));
    const pidFile = join(dir, 'helper.pid');
    // Unsandboxed: the pids the fake writes are the host's (in the sandbox's pid namespace its
    // children end with it); this checks svc's own process-group kill.
    const h = await toolHarness({
      files: { 'a.ts': 'x\n' },
      config: { ...lsp([`--helper=${pidFile}`]), options: { sandbox: { mode: 'off' } } },
    });
    let pid: number | undefined;
    try {
      await h.call('diagnostics', { path: 'a.ts' });
      pid = Number(readFileSync(pidFile, 'utf8'));
      expect(alive(pid)).toBe(true);
      await h.app.close();
      // Gone once close() is over (a moment for the kill to land), not whenever the server's exit reaches it.
      for (let i = 0; i < 300 && alive(pid); i++) await sleep(50);
      expect(alive(pid)).toBe(false);
    } finally {
      if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('explains files no server handles and servers that cannot start', async () => {
    const h = await toolHarness({
      files: { 'a.py': 'x\n', 'b.go': 'x\n' },
      config: {
        lsp: {
          fake: { command: process.execPath, args: [FAKE], extensions: ['ts'] },
          missing: { command: 'no-such-language-server-xyz', extensions: ['go'] },
        },
      },
    });
    await expect(h.call('diagnostics', { path: 'a.py' })).rejects.toThrow(
      /no language server handles \.py files here; svc config show-lsp lists the servers/,
    );
    await expect(h.call('diagnostics', { path: 'b.go' })).rejects.toThrow(
      /cannot start "no-such-language-server-xyz"/,
    );
    await expect(h.call('diagnostics', { path: 'nope.ts' })).rejects.toMatchObject({ code: 'not_found' });
    // A directory is named as one, not reported missing.
    mkdirSync(join(h.app.workspace, 'src.ts'));
    await expect(h.call('diagnostics', { path: 'src.ts' })).rejects.toMatchObject({
      code: 'invalid_input',
      message: expect.stringMatching(/^path: src\.ts is a directory; diagnostics checks one file/),
    });
  });
});
