import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { LSP_TIMEOUTS } from '../../src/workspace/lsp-client';
import { LSP_BACKOFF } from '../../src/workspace/lsp-starts';
import { fakeLspServer } from './fake-lsp-server';
import { toolHarness } from './harness';

const defaults = { ...LSP_TIMEOUTS };
const backoff = { ...LSP_BACKOFF };
afterEach(() => {
  Object.assign(LSP_TIMEOUTS, defaults);
  Object.assign(LSP_BACKOFF, backoff);
});

/** A hanging server (never answers `initialize`); `starts`: how many starts it logged. */
function hanging() {
  const server = fakeLspServer(() => ['--hang']);
  return { ...server, starts: server.initializes };
}

const PATCH = [
  '*** Begin Patch',
  '*** Add File: a.ts',
  '+export const a = 1;',
  '*** Add File: b.ts',
  '+export const b = 2;',
  '*** Add File: c.ts',
  '+export const c = 3;',
  '*** End Patch',
].join('\n');

describe('a language server that never starts', () => {
  it('an edit of three files waits one wait for the start, not one per file; one start serves them', {
    timeout: 60_000,
  }, async () => {
    const server = hanging();
    const h = await toolHarness({ config: server.config });
    try {
      const result = await h.call('edit', { mode: 'apply_patch', patch: PATCH });
      expect(result.files.map((f: { path: string }) => f.path)).toEqual(['a.ts', 'b.ts', 'c.ts']);
      const notes: string[] = result.diagnostics.notes;
      expect(notes).toHaveLength(3);
      expect(notes[0]).toMatch(
        /^a\.ts: no diagnostics \(language server fake is still starting \(no answer to initialize within the 1 s wait\)/,
      );
      for (const note of notes.slice(1))
        expect(note).toMatch(
          /^[bc]\.ts: (not checked \(the 1 s wait, options\.lsp\.diagnostics_wait_seconds, ran out|no diagnostics \(language server fake is still starting)/,
        );
      // The server logs the request once it runs (a moment under load): one start, for all three.
      for (let i = 0; i < 200 && server.starts() === 0; i++) await sleep(50);
      expect(server.starts()).toBe(1);
      expect(server.running()).toBe(true);
      // Closing the app kills the start still waiting for its answer.
      await h.app.close();
      for (let i = 0; i < 300 && server.running(); i++) await sleep(50);
      expect(server.running()).toBe(false);
    } finally {
      await h.app.close();
    }
  });

  it('failed starts count toward the restart limit: then it is broken, calls fail at once, lsp_status says why', {
    timeout: 60_000,
  }, async () => {
    LSP_TIMEOUTS.startMs = 1000;
    // The back-off outlasts the test (not a race with its calls).
    Object.assign(LSP_BACKOFF, { firstMs: 3_600_000, maxMs: 3_600_000 });
    const server = hanging();
    const h = await toolHarness({ files: { 'a.ts': 'x\n' }, config: server.config });
    try {
      const messages: string[] = [];
      for (let i = 0; i < 6; i++) {
        await h.call('diagnostics', { path: 'a.ts', wait_seconds: 30 }).then(
          () => messages.push('answered'),
          (error: Error) => messages.push(error.message),
        );
      }
      expect(messages.slice(0, 4)).toEqual(
        Array(4).fill('language server fake did not answer initialize within 1000 ms'),
      );
      for (const message of messages.slice(4))
        expect(message).toMatch(
          /^language server fake is not started again before \S+ \(in 3600 s\): it crashed or failed to start 4 times \(last: language server fake did not answer initialize within 1000 ms\); it runs ".*" \(\[lsp\.fake\] command and args in svc\.toml\): fix that \(svc config show-lsp\): a call after that time, or once its entry changed, starts it again$/,
        );
      // svc counted four starts (the log may miss one killed before it read anything).
      expect(server.starts()).toBeLessThanOrEqual(4);
      const status = await h.call('lsp_status', {});
      expect(status.servers.find((s: { id: string }) => s.id === 'fake')).toMatchObject({
        running: false,
        restarts: 4,
        last_error: 'language server fake did not answer initialize within 1000 ms',
        broken: expect.stringContaining('failed to start 4 times'),
        retry_at: expect.stringMatching(/^\d{4}-/),
      });
      const cli = h.app.tools.require('lsp_status').surfaces?.cli as unknown as { text(r: unknown): string };
      expect(cli.text(status)).toMatch(
        /\(broken, not started again before \S+: it crashed or failed to start 4 times/,
      );
      // An edit does not wait for it either.
      await h.call('view', { path: 'a.ts' });
      const edited = await h.call('write', { path: 'a.ts', content: 'y\n' });
      expect(edited.diagnostics.notes).toEqual([
        expect.stringMatching(/^a\.ts: no diagnostics \(language server fake is not started again/),
      ]);
      expect(server.starts()).toBeLessThanOrEqual(4);
      // No start that failed left its process running.
      for (let i = 0; i < 300 && server.running(); i++) await sleep(50);
      expect(server.running()).toBe(false);
    } finally {
      await h.app.close();
    }
  });
});
