/**
 * The RunWrites contract (issue 18): the run ledger's writes on every backend, run on SQLite and
 * PostgreSQL by ./run-writes.contract.test.ts. Pins: insertRun's columns and updated_at; markRunning
 * owns the run; interruptIfRunning only from running; interrupt whatever the status; updateRun's
 * partial patch (false for an unknown run); requestCancel; insertEvent's per-run seq from 1;
 * deleteRuns takes the runs' events with them.
 */
import { expect, it } from 'vitest';
import type { RunRowInsert, RunWrites } from '../../../src/runs/run-repository';
import type { AsyncOf } from '../../../src/store/async-of';

export interface OpenedRunWrites {
  writes: AsyncOf<RunWrites>;
  /** Adds a session row (runs reference one). */
  addSession(id: string): Promise<void>;
  run(id: string): Promise<Record<string, unknown> | undefined>;
  eventCount(runId: string): Promise<number>;
  close(): Promise<void>;
}

const row = (id: string, patch: Partial<RunRowInsert> = {}): RunRowInsert => ({
  id,
  session_id: 's1',
  parent_run_id: null,
  family_session_id: 's1',
  status: 'queued',
  agent: 'build',
  model: null,
  origin: 'cli',
  prompt: 'hi',
  options: '{}',
  created_at: 100,
  started_at: null,
  pid: null,
  host: null,
  runner: null,
  ...patch,
});

export function runWritesContract(open: () => Promise<OpenedRunWrites>): void {
  const withWrites = (fn: (o: OpenedRunWrites) => Promise<void>) => async () => {
    const o = await open();
    try {
      await o.addSession('s1');
      await fn(o);
    } finally {
      await o.close();
    }
  };

  it(
    'STORE-PG-55 insertRun, markRunning, interruptIfRunning, interrupt, requestCancel',
    withWrites(async ({ writes, run }) => {
      await writes.insertRun(row('r1'));
      expect(await run('r1')).toMatchObject({
        status: 'queued',
        created_at: 100,
        updated_at: 100,
        pid: null,
      });
      expect(await writes.interruptIfRunning('r1', 'gone', 150)).toBe(false);
      await writes.markRunning('r1', 200, { pid: 7, host: 'h', runner: 'x' });
      expect(await run('r1')).toMatchObject({
        status: 'running',
        started_at: 200,
        pid: 7,
        host: 'h',
        runner: 'x',
      });
      expect(await writes.interruptIfRunning('r1', 'gone', 300)).toBe(true);
      expect(await run('r1')).toMatchObject({ status: 'interrupted', reason: 'gone', finished_at: 300 });
      await writes.insertRun(
        row('r2', { status: 'running', started_at: 100, pid: 1, host: 'h', runner: 'x' }),
      );
      await writes.interrupt('r2', 'why', 400);
      expect(await run('r2')).toMatchObject({ status: 'interrupted', reason: 'why', finished_at: 400 });
      await writes.requestCancel('r2', 500);
      expect(await run('r2')).toMatchObject({ cancel_requested: 1, updated_at: 500 });
    }),
  );

  it(
    'STORE-PG-56 updateRun changes only the patched columns; false for an unknown run',
    withWrites(async ({ writes, run }) => {
      await writes.insertRun(row('r1', { model: 'm1' }));
      const usage = { input_tokens: 1, output_tokens: 2, reasoning_tokens: 3, cached_input_tokens: 4 };
      expect(
        await writes.updateRun('r1', { status: 'failed', error: 'e', steps: 3, usage, cost: 0.5 }, 600),
      ).toBe(true);
      expect(await run('r1')).toMatchObject({
        status: 'failed',
        error: 'e',
        steps: 3,
        input_tokens: 1,
        output_tokens: 2,
        reasoning_tokens: 3,
        cached_input_tokens: 4,
        cost: 0.5,
        model: 'm1',
        updated_at: 600,
      });
      expect(await writes.updateRun('nope', { steps: 1 }, 700)).toBe(false);
    }),
  );

  it(
    'STORE-PG-57 insertEvent numbers each run from 1; deleteRuns removes runs and their events',
    withWrites(async ({ writes, run, eventCount }) => {
      await writes.insertRun(row('r1'));
      await writes.insertRun(row('r2'));
      const ev = (run_id: string) => ({ run_id, session_id: 's1', type: 't', payload: '{}', created_at: 1 });
      const a = await writes.insertEvent(ev('r1'));
      const b = await writes.insertEvent(ev('r2'));
      const c = await writes.insertEvent(ev('r1'));
      expect([a.seq, b.seq, c.seq]).toEqual([1, 1, 2]);
      expect(c.id).toBeGreaterThan(a.id);
      const parallel = await Promise.all([1, 2, 3, 4].map(() => writes.insertEvent(ev('r2'))));
      expect(parallel.map((e) => e.seq).sort()).toEqual([2, 3, 4, 5]);
      await writes.deleteRuns(['r1', 'r2']);
      expect(await run('r1')).toBeUndefined();
      expect(await eventCount('r1')).toBe(0);
      expect(await eventCount('r2')).toBe(0);
      await writes.deleteRuns([]);
    }),
  );
}
