import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { LSP_TIMEOUTS, LspClient } from '../../src/workspace/lsp-client';
import { LSP_BACKOFF } from '../../src/workspace/lsp-starts';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { FAKE_LSP, fakeLspServer, receivedBy } from './fake-lsp-server';
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
      for (let i = 0; i < 300 && server.running(); i++) await sleep(50);
      expect(server.running()).toBe(false);
      // A server killed is not told to cancel what it was asked: it dies anyway.
      expect(server.cancelled()).toEqual([]);
      expect(await diagnose(h)).toMatch(/^language server fake stopped answering/);
      expect(server.initializes()).toBe(2);
      // Its kill is counted once svc has seen it exit (a moment under load).
      const fake = async () =>
        (await h.call('lsp_status', {})).servers.find((s: { id: string }) => s.id === 'fake');
      for (let i = 0; i < 300 && (await fake()).restarts < 2; i++) await sleep(50);
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

/** `value()` once it is defined, polled for at most 10 s (the server logs what it reads a moment later). */
async function until<T>(value: () => T | undefined): Promise<T | undefined> {
  for (let i = 0; i < 200; i++) {
    const found = value();
    if (found !== undefined) return found;
    await sleep(50);
  }
  return value();
}

const fakeStatus = async (h: Awaited<ReturnType<typeof toolHarness>>) =>
  (await h.call('lsp_status', {})).servers.find((s: { id: string }) => s.id === 'fake');

describe('a request svc stops waiting for is cancelled at the server ($/cancelRequest)', () => {
  it('LSP-RECOVER-7: an aborted diagnostics call cancels its request and fails as cancelled; the server runs on', {
    timeout: 60_000,
  }, async () => {
    const server = fakeServer(() => ['--hold=textDocument/diagnostic']);
    const h = await toolHarness({ files: { 'a.ts': 'ERROR\n' }, config: server.config });
    try {
      const abort = new AbortController();
      const call = h.call('diagnostics', { path: 'a.ts', wait_seconds: 30 }, { signal: abort.signal }).then(
        () => 'answered',
        (error: Error & { code?: string }) => error.code,
      );
      const id = await until(() => server.requestIds('textDocument/diagnostic')[0]);
      expect(id).toBeDefined();
      abort.abort();
      expect(await until(() => server.cancelled()[0])).toBe(id);
      expect(await call).toBe('cancelled');
      expect(server.cancelled()).toEqual([id]);
      // It answered the cancel (RequestCancelled), ignored by svc: not a crash, not a restart.
      expect(await fakeStatus(h)).toMatchObject({ running: true, restarts: 0 });
      expect(server.initializes()).toBe(1);
    } finally {
      await h.app.close();
    }
  });

  it('LSP-RECOVER-8: a request not answered within its wait is cancelled; the call answers incomplete', {
    timeout: 60_000,
  }, async () => {
    const server = fakeServer(() => ['--hold=textDocument/diagnostic']);
    const h = await toolHarness({ files: { 'a.ts': 'ERROR\n' }, config: server.config });
    try {
      const result = await h.call('diagnostics', { path: 'a.ts', wait_seconds: 1 });
      expect(result).toMatchObject({ complete: false, diagnostics: [] });
      const [id] = server.requestIds('textDocument/diagnostic');
      expect(await until(() => server.cancelled()[0])).toBe(id);
      expect(await fakeStatus(h)).toMatchObject({ running: true, restarts: 0 });
    } finally {
      await h.app.close();
    }
  });

  it("LSP-RECOVER-9: an aborted symbol-references call cancels the server's references request, with no fallback", {
    timeout: 60_000,
  }, async () => {
    const server = fakeServer(() => ['--hold=textDocument/references']);
    const h = await toolHarness({
      files: { 'a.ts': 'export const total = 1;\nconsole.log(total);\n' },
      config: server.config,
    });
    try {
      const abort = new AbortController();
      const call = h
        .call(
          'search',
          { mode: 'symbol-references', name_path: 'total', path: 'a.ts' },
          { signal: abort.signal },
        )
        .then(
          (r: { engine: string }) => `answered by ${r.engine}`,
          (error: Error & { code?: string }) => error.code,
        );
      const id = await until(() => server.requestIds('textDocument/references')[0]);
      expect(id).toBeDefined();
      abort.abort();
      expect(await until(() => server.cancelled()[0])).toBe(id);
      expect(await call).toBe('cancelled');
    } finally {
      await h.app.close();
    }
  });

  it.each([
    ['the error RequestCancelled (-32800)', []],
    ['its late result', ['--cancelled=result']],
  ])(
    'LSP-RECOVER-10: a cancelled request answered with %s shows the server alive: it is not killed as hung',
    {
      timeout: 60_000,
    },
    async (_, flags) => {
      // Room for the answer to the cancel to be read on a loaded machine before the watch runs out.
      LSP_TIMEOUTS.stallMs = 6_000;
      const dir = tmpWorkspace();
      const messages = join(dir, 'messages.jsonl');
      const server = {
        command: process.execPath,
        args: [FAKE_LSP, '--pull', '--hold=textDocument/diagnostic', ...flags, `--messages=${messages}`],
        extensions: ['ts'],
        disabled: false,
      };
      const client = await LspClient.start('fake', server, dir, process.env, { reopenWhenClean: false });
      const received = receivedBy(messages);
      try {
        const uri = pathToFileURL(join(dir, 'a.ts')).href;
        client.sync(uri, 'typescript', 'ERROR\n');
        await expect(
          client.request('textDocument/diagnostic', { textDocument: { uri } }, 100),
        ).rejects.toThrow('language server fake did not answer textDocument/diagnostic within 100 ms');
        const [id] = received.requestIds('textDocument/diagnostic');
        expect(await until(() => received.cancelled()[0])).toBe(id);
        // The request's stall watch (6 s from when it was sent) has run out by now: its answer,
        // read meanwhile, ended it; unanswered, the server would be stopped as hung.
        await sleep(LSP_TIMEOUTS.stallMs);
        expect(client.failure).toBeUndefined();
        expect(client.exited).toBe(false);
        // It answers the next request.
        await expect(client.request('svc/unknown', null, 10_000)).rejects.toThrow(
          'language server fake: Unhandled method svc/unknown',
        );
      } finally {
        await client.stop();
      }
    },
  );

  it('LSP-RECOVER-11: a server that answers neither a request nor its cancel is still found hung and killed', {
    timeout: 60_000,
  }, async () => {
    LSP_TIMEOUTS.stallMs = 3_000;
    const server = fakeServer(() => ['--hang-after-init']);
    const h = await toolHarness({ files: { 'a.ts': 'ERROR\n' }, config: server.config });
    try {
      // The call's 1 s wait passes first: the request is cancelled, and still watched.
      expect(await h.call('diagnostics', { path: 'a.ts', wait_seconds: 1 })).toMatchObject({
        complete: false,
      });
      const [id] = server.requestIds('textDocument/diagnostic');
      expect(await until(() => server.cancelled()[0])).toBe(id);
      expect(await until(() => (server.running() ? undefined : true))).toBe(true);
      // Its kill is counted once svc has seen it exit (a moment under load).
      for (let i = 0; i < 200 && !(await fakeStatus(h)).last_error; i++) await sleep(50);
      expect(await fakeStatus(h)).toMatchObject({
        running: false,
        last_error:
          'language server fake stopped answering (no answer to textDocument/diagnostic within 3 s); svc stopped it',
      });
    } finally {
      await h.app.close();
    }
  });

  it('LSP-RECOVER-12: a call cancelled while its server is still starting returns at once, cancelled; the start goes on', {
    timeout: 60_000,
  }, async () => {
    // The server never answers initialize: without the signal the call waited its whole 30 s.
    const server = fakeServer(() => ['--hold=initialize']);
    const h = await toolHarness({ files: { 'a.ts': 'ERROR\n' }, config: server.config });
    try {
      const abort = new AbortController();
      const call = h.call('diagnostics', { path: 'a.ts', wait_seconds: 30 }, { signal: abort.signal }).then(
        () => 'answered',
        (error: Error & { code?: string; message: string }) => `${error.code}: ${error.message}`,
      );
      expect(await until(() => server.requestIds('initialize')[0])).toBeDefined();
      abort.abort();
      expect(await call).toMatch(/^cancelled: .*language server fake was starting/);
      // Not stopped, not cancelled at the server: it goes on starting for later calls.
      expect(server.cancelled()).toEqual([]);
      expect(await fakeStatus(h)).toMatchObject({ restarts: 0 });
    } finally {
      await h.app.close();
    }
  });
});
