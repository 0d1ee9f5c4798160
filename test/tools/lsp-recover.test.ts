import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { LSP_TIMEOUTS } from '../../src/workspace/lsp-client';
import { LSP_BACKOFF } from '../../src/workspace/lsp-starts';
import { fakeLspServer } from './fake-lsp-server';
import { toolHarness } from './harness';

const timeouts = { ...LSP_TIMEOUTS };
const backoff = { ...LSP_BACKOFF };
afterEach(() => {
  Object.assign(LSP_TIMEOUTS, timeouts);
  Object.assign(LSP_BACKOFF, backoff);
});

/** The fake server with `flags`, pulling diagnostics. */
const fakeServer = (flags: (dir: string) => string[]) => fakeLspServer((dir) => ['--pull', ...flags(dir)]);

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
