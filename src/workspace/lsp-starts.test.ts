/**
 * A language server that failed MAX_RESTARTS times in a row was broken until svc restarted (found
 * by probing: the LSP tools stayed gone, a fixed program included). Pins, with a clock of the
 * test's and starts that fail or crash on demand: the back-off (5 s, doubled, capped at 2 min), one
 * start per back-off, what the error says, and what starts the count afresh.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SvcError } from '../errors';
import type { ResolvedServer } from './lsp-catalog';
import { backoffMs, createStarts, LSP_BACKOFF, MAX_RESTARTS } from './lsp-starts';

const defaults = { ...LSP_BACKOFF };
afterEach(() => Object.assign(LSP_BACKOFF, defaults));

class FakeClient {
  exited = false;
  stopping = false;
  failure: SvcError | undefined;
  onExit?: () => void;
  crash(failure?: SvcError) {
    this.failure = failure;
    this.exited = true;
    this.onExit?.();
  }
}

const server = (command = 'fake-ls'): ResolvedServer => ({
  id: 'fake',
  source: 'config',
  command,
  args: ['--stdio'],
  extensions: ['ts'],
  disabled: false,
});

function harness() {
  let clock = 1_000_000;
  let startsFail = true;
  const started: FakeClient[] = [];
  const starts = createStarts<FakeClient>({
    clients: new Map(),
    now: () => clock,
    start: async () => {
      if (startsFail) throw new Error('cannot start "fake-ls"');
      const client = new FakeClient();
      started.push(client);
      return client;
    },
  });
  /** A use: 'started', or the error's message. */
  const use = (s = server()) =>
    starts.client(s).then(
      () => 'started',
      (error: Error) => error.message,
    );
  return {
    starts,
    use,
    started,
    advance: (ms: number) => {
      clock += ms;
    },
    heal: () => {
      startsFail = false;
    },
    now: () => clock,
  };
}

describe('restarting a language server after failures', () => {
  it('LSP-RECOVER-1: the back-off starts at 5 s, doubles at each failure after, and stops at 2 min', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((round) => backoffMs(round))).toEqual([
      5_000, 10_000, 20_000, 40_000, 80_000, 120_000, 120_000, 120_000,
    ]);
  });

  it('LSP-RECOVER-2: past the restarts it backs off: calls fail at once saying when and what to fix; one start per back-off; then it recovers', async () => {
    const h = harness();
    for (let i = 0; i <= MAX_RESTARTS; i++) expect(await h.use()).toBe('cannot start "fake-ls"');
    const waiting = await h.use();
    expect(waiting).toBe(
      `language server fake is not started again before ${new Date(h.now() + 5_000).toISOString()} (in 5 s): it crashed or failed to start 4 times (last: cannot start "fake-ls"); it runs "fake-ls --stdio" ([lsp.fake] command and args in svc.toml): fix that (svc config show-lsp): a call after that time, or once its entry changed, starts it again`,
    );
    expect(h.starts.status('fake')).toEqual({
      running: false,
      restarts: 4,
      last_error: 'cannot start "fake-ls"',
      broken: 'it crashed or failed to start 4 times (last: cannot start "fake-ls")',
      retry_at: new Date(h.now() + 5_000).toISOString(),
    });
    h.advance(4_999);
    expect(await h.use()).toMatch(/^language server fake is not started again before .* \(in 1 s\)/);
    // Once the back-off has passed one call starts it; it fails again: twice the wait.
    h.advance(1);
    expect(await h.use()).toBe('cannot start "fake-ls"');
    expect(await h.use()).toMatch(/\(in 10 s\): it crashed or failed to start 5 times/);
    h.advance(10_000);
    expect(await h.use()).toBe('cannot start "fake-ls"');
    expect(await h.use()).toMatch(/\(in 20 s\): it crashed or failed to start 6 times/);
    // The program is fixed: the next start after the back-off holds, and the status says so.
    h.heal();
    h.advance(20_000);
    expect(await h.use()).toBe('started');
    expect(await h.use()).toBe('started');
    expect(h.started).toHaveLength(1);
    expect(h.starts.status('fake')).toEqual({
      running: true,
      restarts: 6,
      last_error: 'cannot start "fake-ls"',
    });
  });

  it('LSP-RECOVER-3: a server that crashes soon after each start backs off too; one that ran 2 min before it crashed counts afresh', async () => {
    const h = harness();
    h.heal();
    for (let i = 0; i <= MAX_RESTARTS; i++) {
      expect(await h.use()).toBe('started');
      h.started.at(-1)?.crash(new SvcError('unavailable', 'language server fake stopped answering'));
    }
    expect(await h.use()).toMatch(
      /\(in 5 s\): it crashed or failed to start 4 times \(last: language server fake stopped answering\)/,
    );
    expect(h.started).toHaveLength(4);
    h.advance(5_000);
    expect(await h.use()).toBe('started');
    // It runs 2 min, then crashes: a first failure, started again at once.
    h.advance(LSP_BACKOFF.healthyMs);
    h.started.at(-1)?.crash();
    expect(h.starts.status('fake')).toEqual({ running: false, restarts: 1, last_error: 'it exited' });
    expect(await h.use()).toBe('started');
    // A server svc stopped (idle, closing) did not fail.
    const last = h.started.at(-1) as FakeClient;
    last.stopping = true;
    last.crash();
    expect(h.starts.status('fake').restarts).toBe(1);
  });

  it('LSP-RECOVER-4: a changed entry (the program fixed in svc.toml) is started at once, its count afresh', async () => {
    const h = harness();
    for (let i = 0; i <= MAX_RESTARTS; i++) await h.use();
    expect(await h.use()).toMatch(/not started again before/);
    h.heal();
    expect(await h.use(server('fixed-ls'))).toBe('started');
    expect(h.starts.status('fake')).toEqual({ running: true, restarts: 0 });
  });
});
