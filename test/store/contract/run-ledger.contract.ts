/**
 * The RunLedger contract (issue 18): the ledger over its repositories, run on SQLite and on
 * PostgreSQL by ./run-ledger.contract.test.ts, with several ledgers (Apps, or nodes) on one store.
 * Pins: create → claim (two ledgers racing for one run: exactly one claims, the other gets a
 * conflict) → append events (per-run seq, listeners) → update → list and count; a live owner's
 * running run blocks a second claim in its session; the cancel flag seen by every ledger; the
 * recovery of a run whose owner is gone; delete takes the subtree.
 */
import { expect, it } from 'vitest';
import { SvcError } from '../../../src/errors';
import type { RunEvent, RunLedger } from '../../../src/runs/run-ledger';
import { withOpened } from './fixture';

export interface LedgerOptions {
  runner: string;
  /** Whether another runner of this process is live (default: none is). */
  isLiveRunner?: (runner: string) => boolean;
}

export interface OpenedRunLedgers {
  /** A ledger on the shared store, as one App (pid and host: this process's). */
  ledger(options: LedgerOptions): RunLedger;
  addSession(id: string): Promise<void>;
  close(): Promise<void>;
}

const input = (session_id = 's1') => ({
  session_id,
  family_session_id: session_id,
  agent: 'build',
  origin: 'http',
  prompt: 'hello',
  options: { max_steps: 3 },
});

export function runLedgerContract(open: () => Promise<OpenedRunLedgers>): void {
  const withLedgers = withOpened(open, (o) => o);
  const seeded = (fn: (o: OpenedRunLedgers) => Promise<void>) =>
    withLedgers(async (o) => {
      await o.addSession('s1');
      await o.addSession('s2');
      await fn(o);
    });

  it(
    'STORE-PG-runq: ledger create → claim (two ledgers racing: exactly one claims) → append → update → list and count',
    seeded(async (o) => {
      const live = new Set(['rnr_a', 'rnr_b']);
      const a = o.ledger({ runner: 'rnr_a', isLiveRunner: (r) => live.has(r) });
      const b = o.ledger({ runner: 'rnr_b', isLiveRunner: (r) => live.has(r) });
      expect(a.available().ok).toBe(true);
      const seen: RunEvent[] = [];
      a.onAppend((event) => seen.push(event));
      const run = await a.create(input());
      expect(run).toMatchObject({
        status: 'queued',
        session_id: 's1',
        options: { max_steps: 3 },
        runner: null,
      });
      expect(seen.map((e) => [e.type, e.seq])).toEqual([['run.queued', 1]]);
      expect((await b.queued('s1')).map((r) => r.id)).toEqual([run.id]);

      const outcomes = await Promise.allSettled([a.claim(run.id), b.claim(run.id)]);
      const won = outcomes.filter((r) => r.status === 'fulfilled');
      const lost = outcomes.filter((r) => r.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect(SvcError.is((lost[0] as PromiseRejectedResult).reason)).toBe(true);
      expect((lost[0] as PromiseRejectedResult).reason.code).toBe('conflict');
      const claimed = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<RunLedger['claim']>>>).value;
      expect(claimed.ok).toBe(true);
      const runner = claimed.ok ? claimed.run.runner : null;
      expect(['rnr_a', 'rnr_b']).toContain(runner);
      expect(await a.running('s1')).toMatchObject({ id: run.id, status: 'running', runner });
      await expect(a.claim(run.id)).rejects.toMatchObject({ code: 'conflict' });
      await expect(a.claim('run_nope')).rejects.toMatchObject({ code: 'not_found' });

      // A second queued run of the session waits for the live owner's run.
      const next = await b.create(input());
      const blocked = await a.claim(next.id);
      expect(blocked).toMatchObject({ ok: false, blocking: { id: run.id } });

      const appended = await Promise.all([
        a.append(run.id, 'step.finished', { step: 1 }),
        b.append(run.id, 'step.finished', { step: 2 }),
      ]);
      expect(appended.map((e) => e.seq).sort()).toEqual([2, 3]);
      expect((await b.events(run.id, { afterSeq: 1 })).map((e) => e.payload.step).sort()).toEqual([1, 2]);
      expect(await a.eventCount(run.id)).toBe(3);
      await expect(a.append('run_nope', 'x')).rejects.toMatchObject({ code: 'not_found' });

      const usage = { input_tokens: 5, output_tokens: 6, reasoning_tokens: 0, cached_input_tokens: 1 };
      const done = await b.update(run.id, {
        status: 'completed',
        steps: 2,
        usage,
        cost: 0.1,
        finished_at: 9,
      });
      expect(done).toMatchObject({ status: 'completed', steps: 2, usage, cost: 0.1, finished_at: 9 });
      await expect(a.update('run_nope', { steps: 1 })).rejects.toMatchObject({ code: 'not_found' });
      expect(await a.claim(next.id)).toMatchObject({ ok: true, run: { id: next.id, runner: 'rnr_a' } });

      await b.create(input('s2'));
      expect(await a.count()).toBe(3);
      expect(await a.count({ status: ['running'] })).toBe(1);
      expect((await b.list({ session_id: 's1' })).map((r) => r.id).sort()).toEqual([run.id, next.id].sort());
      expect(await b.queries.count({ status: ['queued'] })).toBe(1);
      expect((await a.recentEvents({ limit: 1, sessionId: 's2' }))[0]).toMatchObject({ type: 'run.queued' });
      expect(await a.get('run_nope')).toBeUndefined();
      await expect(a.require('run_nope')).rejects.toMatchObject({ code: 'not_found' });
    }),
  );

  it(
    'STORE-PG-runq: ledger cancel flag across ledgers, recovery of a run whose owner is gone, delete of a subtree',
    seeded(async (o) => {
      const live = new Set(['rnr_a']);
      const a = o.ledger({ runner: 'rnr_a', isLiveRunner: (r) => live.has(r) });
      const run = await a.create({ ...input(), status: 'running' });
      expect(run).toMatchObject({ status: 'running', runner: 'rnr_a', pid: process.pid });
      const child = await a.create({ ...input(), parent_run_id: run.id });

      const b = o.ledger({ runner: 'rnr_b', isLiveRunner: (r) => live.has(r) });
      expect(await b.cancelRequested(run.id)).toBe(false);
      await b.requestCancel(run.id);
      expect(await a.cancelRequested(run.id)).toBe(true);
      // rnr_a is live: b's first use recovered nothing.
      expect(await b.recovered()).toEqual([]);
      expect(b.ownerAlive(run)).toBe(true);

      live.delete('rnr_a');
      const c = o.ledger({ runner: 'rnr_c', isLiveRunner: (r) => live.has(r) });
      expect(c.ownerAlive(run)).toBe(false);
      expect(await c.get(run.id)).toMatchObject({ status: 'interrupted' });
      const recovered = await c.recovered();
      expect(recovered.map((r) => r.id)).toEqual([run.id]);
      expect(recovered[0]?.reason).toMatch(/exited before the run finished/);
      expect((await c.events(run.id, { types: ['run.interrupted'] })).length).toBe(1);
      expect(await c.recover()).toEqual([]);

      expect((await c.delete(run.id)).sort()).toEqual([run.id, child.id].sort());
      expect(await a.get(child.id)).toBeUndefined();
      expect(await a.eventCount(run.id)).toBe(0);
      await expect(c.delete(run.id)).rejects.toMatchObject({ code: 'not_found' });
    }),
  );
}
