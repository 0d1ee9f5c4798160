/**
 * Found by probing: a language server that failed to start or crashed four times stayed broken
 * until svc restarted, and one that answered `initialize` and then nothing more (typescript-
 * language-server whose tsserver ran out of memory) was never found hung: every call waited out its
 * wait, for as long as svc ran. With the fake server (`--exit-while`, `--hang-after-init`), pins:
 * - a broken server is started again by a call once its back-off has passed (the back-off's
 *   length is set here, not waited: lsp-starts.test.ts pins it with a clock);
 * - a server that has not answered a request within LSP_TIMEOUTS.stallMs is killed (its process
 *   group) and started again by the next call, its stop counted as a crash.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { LSP_TIMEOUTS } from '../../src/workspace/lsp-client';
import { LSP_BACKOFF } from '../../src/workspace/lsp-starts';
import { toolHarness } from './harness';

const FAKE = resolve(import.meta.dirname, '../fixtures/coding-tools/fake-lsp.mjs');
const timeouts = { ...LSP_TIMEOUTS };
const backoff = { ...LSP_BACKOFF };
afterEach(() => {
  Object.assign(LSP_TIMEOUTS, timeouts);
  Object.assign(LSP_BACKOFF, backoff);
});

/** The fake server with `flags`, its every message logged, tagged to find its processes by. */
function fakeServer(flags: (dir: string) => string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lsp-recover-'));
  const log = join(dir, 'methods.log');
  const tag = `--tag=${randomUUID()}`;
  const config = {
    lsp: {
      fake: {
        command: process.execPath,
        args: [FAKE, '--pull', ...flags(dir), `--log=${log}`, tag],
        extensions: ['ts'],
      },
    },
    // The server runs in the command sandbox: its directory is made writable there.
    options: { lsp: { diagnostics_wait_seconds: 1 }, sandbox: { allow_write: [dir] } },
  };
  const initializes = () => {
    try {
      return readFileSync(log, 'utf8')
        .split('\n')
        .filter((m) => m === 'initialize').length;
    } catch {
      return 0;
    }
  };
  const running = () => {
    try {
      return execFileSync('pgrep', ['-f', '--', tag], { encoding: 'utf8' }).trim() !== '';
    } catch {
      return false;
    }
  };
  return { dir, config, initializes, running };
}

const diagnose = (h: Awaited<ReturnType<typeof toolHarness>>) =>
  h.call('diagnostics', { path: 'a.ts', wait_seconds: 30 }).then(
    (r: { counts: { error: number } }) => `errors: ${r.counts.error}`,
    (error: Error) => error.message,
  );

describe('a language server that failed is started again', () => {
  it('LSP-RECOVER-5: a server broken by failed starts is started again once its back-off has passed, and works', {
    timeout: 60_000,
  }, async () => {
    Object.assign(LSP_BACKOFF, { firstMs: 3_600_000, maxMs: 3_600_000 });
    const server = fakeServer((dir) => [`--exit-while=${join(dir, 'broken')}`]);
    writeFileSync(join(server.dir, 'broken'), '');
    const h = await toolHarness({ files: { 'a.ts': 'ERROR\n' }, config: server.config });
    try {
      for (let i = 0; i < 4; i++) expect(await diagnose(h)).toMatch(/^language server fake exited/);
      expect(await diagnose(h)).toMatch(
        /^language server fake is not started again before \S+ \(in 3600 s\): it crashed or failed to start 4 times \(last: language server fake exited\); it runs ".*fake-lsp\.mjs --pull .*" \(\[lsp\.fake\] command and args in svc\.toml\)/,
      );
      const status = await h.call('lsp_status', {});
      expect(status.servers.find((s: { id: string }) => s.id === 'fake')).toMatchObject({
        running: false,
        restarts: 4,
        broken: expect.stringContaining('failed to start 4 times'),
        retry_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      });
      expect(server.initializes()).toBe(4);
      // The program is fixed and the back-off has passed: the next call starts it.
      rmSync(join(server.dir, 'broken'));
      LSP_BACKOFF.firstMs = 0;
      expect(await diagnose(h)).toBe('errors: 1');
      expect(server.initializes()).toBe(5);
      const after = await h.call('lsp_status', {});
      expect(after.servers.find((s: { id: string }) => s.id === 'fake')).toMatchObject({ running: true });
      expect(after.servers.find((s: { id: string }) => s.id === 'fake').broken).toBeUndefined();
    } finally {
      await h.app.close();
    }
  });

  it('LSP-RECOVER-6: a server that stops answering is killed and started again by the next call, not left hanging', {
    timeout: 60_000,
  }, async () => {
    LSP_TIMEOUTS.stallMs = 200;
    const server = fakeServer(() => ['--hang-after-init']);
    const h = await toolHarness({ files: { 'a.ts': 'ERROR\n' }, config: server.config });
    try {
      // The call waits 30 s; the server is found hung first, and the call says so.
      expect(await diagnose(h)).toBe(
        'language server fake stopped answering (no answer to textDocument/diagnostic within 0.2 s); svc stopped it',
      );
      for (let i = 0; i < 100 && server.running(); i++) await sleep(50);
      expect(server.running()).toBe(false);
      expect(await diagnose(h)).toMatch(/^language server fake stopped answering/);
      expect(server.initializes()).toBe(2);
      // Its kill is counted once svc has seen it exit (a moment under load).
      const fake = async () =>
        (await h.call('lsp_status', {})).servers.find((s: { id: string }) => s.id === 'fake');
      for (let i = 0; i < 100 && (await fake()).restarts < 2; i++) await sleep(50);
      expect(server.running()).toBe(false);
      expect(await fake()).toMatchObject({
        running: false,
        restarts: 2,
        last_error:
          'language server fake stopped answering (no answer to textDocument/diagnostic within 0.2 s); svc stopped it',
      });
    } finally {
      await h.app.close();
    }
  });
});
