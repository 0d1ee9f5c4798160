/**
 * The scheduler's storage contract (issue 18): what every backend's `schedules` and
 * `schedule_runs` answer, run on SQLite and on PostgreSQL by ./scheduler.contract.test.ts. Pins:
 * a schedule round-trips (recipe_params parsed, nulls kept), a taken name is a `conflict`, require
 * finds by id or name and is `not_found` otherwise, list is in creation order and filters by
 * status, update patches and is `not_found` for a missing id, due lists active jobs oldest due
 * first up to the limit, runs list newest first and finish keeps ids it is not given, counts per
 * status; and a due firing is claimed by exactly one of two nodes racing for it.
 */
import { expect, it } from 'vitest';
import type { Schedule, ScheduleStore } from '../../../src/scheduler/schedule-store';
import { type Clock, createSequentialIds, type Ids } from '../../../src/util/ids';

export interface SchedulerFixture {
  store: ScheduleStore;
  /** A second store on its own connection (another node), on the same database. */
  other: ScheduleStore;
  close(): Promise<void>;
}

export type OpenScheduleStores = (deps: { clock: Clock; ids: Ids }) => Promise<SchedulerFixture>;

type NewSchedule = Parameters<ScheduleStore['insert']>[0];

const job = (name: string, patch: Partial<NewSchedule> = {}): NewSchedule => ({
  name,
  cron: null,
  timezone: null,
  run_at: 5_000,
  prompt: `do ${name}`,
  recipe: null,
  recipe_params: {},
  session_mode: 'new',
  session_id: null,
  agent: null,
  model: null,
  status: 'active',
  next_run_at: 5_000,
  created_by: 'api',
  ...patch,
});

export function schedulerContract(open: OpenScheduleStores): void {
  const withStores = (fn: (f: SchedulerFixture, clock: { t: number }) => Promise<void>) => async () => {
    const clock = { t: 1_000 };
    const f = await open({ clock: { now: () => clock.t }, ids: createSequentialIds() });
    try {
      await fn(f, clock);
    } finally {
      await f.close();
    }
  };

  it(
    'STORE-PG-sched: a schedule round-trips; a taken name is a conflict; require by id or name',
    withStores(async ({ store }) => {
      const a = await store.insert(
        job('nightly', {
          cron: '0 3 * * *',
          timezone: 'UTC',
          run_at: null,
          recipe: 'r',
          recipe_params: { n: 1, s: 'x' },
        }),
      );
      expect(a).toMatchObject({
        name: 'nightly',
        cron: '0 3 * * *',
        run_at: null,
        recipe_params: { n: 1, s: 'x' },
        session_id: null,
        last_run_at: null,
        last_status: null,
        last_error: null,
        run_count: 0,
        created_at: 1_000,
        updated_at: 1_000,
      });
      expect(await store.get(a.id)).toEqual(a);
      expect(await store.get('sch_missing')).toBeUndefined();
      expect(await store.require('nightly')).toEqual(a);
      expect(await store.require(a.id)).toEqual(a);
      await expect(store.require('nope')).rejects.toMatchObject({ code: 'not_found' });
      await expect(store.insert(job('nightly'))).rejects.toMatchObject({ code: 'conflict' });
    }),
  );

  it(
    'STORE-PG-sched: list in creation order, by status; update patches; delete; counts per status',
    withStores(async ({ store }, clock) => {
      const a = await store.insert(job('a'));
      clock.t = 2_000;
      const b = await store.insert(job('b', { status: 'paused' }));
      clock.t = 3_000;
      const c = await store.insert(job('c'));
      expect((await store.list()).map((s) => s.name)).toEqual(['a', 'b', 'c']);
      expect((await store.list({ status: 'active' })).map((s) => s.name)).toEqual(['a', 'c']);
      clock.t = 4_000;
      const updated = await store.update(c.id, {
        status: 'completed',
        last_status: 'completed',
        run_count: 2,
      });
      expect(updated).toMatchObject({
        status: 'completed',
        last_status: 'completed',
        run_count: 2,
        updated_at: 4_000,
      });
      expect(updated.created_at).toBe(3_000);
      await expect(store.update('sch_missing', { status: 'paused' })).rejects.toMatchObject({
        code: 'not_found',
      });
      expect(await store.counts()).toEqual({ active: 1, paused: 1, completed: 1 });
      expect(await store.delete(b.id)).toBe(true);
      expect(await store.delete(b.id)).toBe(false);
      expect((await store.list()).map((s) => s.id)).toEqual([a.id, c.id]);
    }),
  );

  it(
    'STORE-PG-sched: due lists active jobs due at now, oldest due first, up to the limit; claim moves one on',
    withStores(async ({ store }) => {
      await store.insert(job('late', { next_run_at: 9_000 }));
      const second = await store.insert(job('second', { next_run_at: 4_000 }));
      const first = await store.insert(job('first', { next_run_at: 3_000 }));
      await store.insert(job('paused', { status: 'paused', next_run_at: 1_000 }));
      await store.insert(job('manual', { next_run_at: null, run_at: null }));
      const names = (due: Schedule[]) => due.map((s) => s.name);
      expect(names(await store.due(5_000, 10))).toEqual(['first', 'second']);
      expect(names(await store.due(5_000, 1))).toEqual(['first']);
      expect(await store.claim(first.id, 2_999, { next_run_at: null, status: 'completed' })).toBe(false);
      expect(await store.claim(first.id, 3_000, { next_run_at: null, status: 'completed' })).toBe(true);
      expect(await store.claim(first.id, 3_000, { next_run_at: null, status: 'completed' })).toBe(false);
      expect(await store.get(first.id)).toMatchObject({ status: 'completed', next_run_at: null });
      expect(await store.claim(second.id, 4_000, { next_run_at: 8_000, status: 'active' })).toBe(true);
      expect(names(await store.due(5_000, 10))).toEqual([]);
      expect(names(await store.due(9_000, 10))).toEqual(['second', 'late']);
    }),
  );

  it(
    'STORE-PG-sched: two nodes race for the same due firing and exactly one wins',
    withStores(async ({ store, other }) => {
      const jobs = [];
      for (let i = 0; i < 5; i++) jobs.push(await store.insert(job(`race${i}`, { next_run_at: 2_000 + i })));
      for (const j of jobs) {
        const wins = await Promise.all(
          [store, other, store, other].map((s) =>
            s.claim(j.id, j.next_run_at as number, { next_run_at: 60_000, status: 'active' }),
          ),
        );
        expect(wins.filter(Boolean)).toHaveLength(1);
      }
      expect((await other.list()).map((s) => s.next_run_at)).toEqual([
        60_000, 60_000, 60_000, 60_000, 60_000,
      ]);
    }),
  );

  it(
    'STORE-PG-sched: runs newest first (write order within a millisecond), per schedule, limited; finish keeps ids',
    withStores(async ({ store }) => {
      const a = await store.insert(job('a'));
      const b = await store.insert(job('b'));
      const run = (scheduleId: string, startedAt: number) =>
        store.addRun({
          schedule_id: scheduleId,
          trigger: 'once',
          due_at: startedAt,
          session_id: null,
          run_id: null,
          status: 'started',
          error: null,
          runner_pid: 42,
          started_at: startedAt,
          finished_at: null,
        });
      const r1 = await run(a.id, 10);
      const r2 = await run(a.id, 10);
      const r3 = await run(b.id, 20);
      expect((await store.runs()).map((r) => r.id)).toEqual([r3.id, r2.id, r1.id]);
      expect((await store.runs({ schedule_id: a.id })).map((r) => r.id)).toEqual([r2.id, r1.id]);
      expect((await store.runs({ limit: 1 })).map((r) => r.id)).toEqual([r3.id]);
      await store.attachRun(r1.id, { run_id: 'run_1', session_id: 'ses_1' });
      await store.finishRun(r1.id, { status: 'completed', error: null });
      expect((await store.runs({ schedule_id: a.id }))[1]).toEqual({
        ...r1,
        run_id: 'run_1',
        session_id: 'ses_1',
        status: 'completed',
        finished_at: 1_000,
      });
      await store.finishRun(r2.id, { status: 'failed', error: 'boom', run_id: 'run_2', session_id: 'ses_2' });
      expect((await store.runs({ schedule_id: a.id }))[0]).toMatchObject({
        status: 'failed',
        error: 'boom',
        run_id: 'run_2',
        session_id: 'ses_2',
      });
    }),
  );
}
