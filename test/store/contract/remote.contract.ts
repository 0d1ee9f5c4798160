/**
 * The A2A repositories' contract (issue 18): what every backend's delegation store (`a2a_cards`,
 * `a2a_tasks`) and served-task repository (`a2a_served_tasks`) answer, run on SQLite and on
 * PostgreSQL by ./remote.contract.test.ts. Pins: cards by name then URL, upserted by URL, skills
 * parsed; a task inserted `submitted` with both times now, patched (nulls kept, updated_at moved),
 * missing → not_found, listed newest first (id breaks ties), limited, one session's; served tasks
 * by id and the newest of a context, missing → undefined.
 */
import { expect, it } from 'vitest';
import type { FetchedCard } from '../../../src/remote/a2a-client';
import type { ServedTaskRepository } from '../../../src/remote/served-task-repository';
import type { A2aStore, NewTask } from '../../../src/remote/task-store';
import { withOpened } from './fixture';

/** A clock the test moves. */
export interface TestClock {
  t: number;
  now(): number;
}

export const testClock = (): TestClock => ({
  t: 1000,
  now() {
    return this.t;
  },
});

export type OpenA2aStore = (clock: TestClock) => Promise<{ store: A2aStore; close: () => Promise<void> }>;

const card = (name: string, url: string, skills: { id: string; tags?: string[] }[] = []): FetchedCard => ({
  card_url: url,
  rpc_url: `${url.replace(/\/card$/, '')}/a2a`,
  card: { name, description: `the ${name} agent`, skills, extra: { nested: [1, 2] } },
});

const newTask = (id: string, over: Partial<NewTask> = {}): NewTask => ({
  id,
  session_id: 'ses_1',
  run_id: null,
  target_kind: 'name',
  target: 'helper',
  card_url: 'http://h/card',
  agent_name: 'helper',
  rpc_url: 'http://h/a2a',
  message: `do ${id}`,
  ...over,
});

export function a2aStoreContract(open: OpenA2aStore): void {
  const clock = testClock();
  const withStore = withOpened(
    () => {
      clock.t = 1000;
      return open(clock);
    },
    (f) => f.store,
  );

  it(
    'STORE-PG-a2a: cards by name then URL, an upsert by URL replaces, skills round-trip',
    withStore(async (store) => {
      expect(await store.cards()).toEqual([]);
      const zeta = await store.rememberCard(
        card('zeta', 'http://z/card', [{ id: 'review', tags: ['code'] }]),
        'url',
      );
      expect(zeta).toEqual({
        card_url: 'http://z/card',
        name: 'zeta',
        description: 'the zeta agent',
        rpc_url: 'http://z/a2a',
        skills: [{ id: 'review', name: 'review', description: '', tags: ['code'] }],
        source: 'url',
        fetched_at: 1000,
      });
      clock.t = 1100;
      await store.rememberCard(card('Alpha', 'http://b/card'), 'remote:b');
      await store.rememberCard(card('Alpha', 'http://a/card'), 'remote:a');
      await store.rememberCard(card('beta', 'http://c/card'), 'deployed:beta');
      expect((await store.cards()).map((c) => [c.name, c.card_url])).toEqual([
        ['Alpha', 'http://a/card'],
        ['Alpha', 'http://b/card'],
        ['beta', 'http://c/card'],
        ['zeta', 'http://z/card'],
      ]);
      clock.t = 1200;
      await store.rememberCard(card('omega', 'http://z/card', []), 'deployed:omega');
      const cards = await store.cards();
      expect(cards).toHaveLength(4);
      expect(cards[3]).toEqual({
        card_url: 'http://z/card',
        name: 'omega',
        description: 'the omega agent',
        rpc_url: 'http://z/a2a',
        skills: [],
        source: 'deployed:omega',
        fetched_at: 1200,
      });
    }),
  );

  it(
    'STORE-PG-a2a: a task is inserted submitted, patched with nulls kept, missing is not_found, deleted',
    withStore(async (store) => {
      await expect(store.task('a2a_none')).rejects.toMatchObject({
        code: 'not_found',
        message: expect.stringContaining('a2a_none'),
      });
      await store.insertTask(newTask('a2a_1', { run_id: 'run_9', session_id: null }));
      expect(await store.task('a2a_1')).toEqual({
        ...newTask('a2a_1', { run_id: 'run_9', session_id: null }),
        remote_task_id: null,
        context_id: null,
        state: 'submitted',
        result_text: null,
        error: null,
        created_at: 1000,
        updated_at: 1000,
      });
      clock.t = 1500;
      await store.updateTask('a2a_1', { state: 'working', remote_task_id: 'r1', context_id: 'c1' });
      clock.t = 1600;
      await store.updateTask('a2a_1', { state: 'completed', result_text: 'done', error: null });
      expect(await store.task('a2a_1')).toMatchObject({
        state: 'completed',
        remote_task_id: 'r1',
        context_id: 'c1',
        result_text: 'done',
        error: null,
        created_at: 1000,
        updated_at: 1600,
      });
      await store.updateTask('a2a_none', { state: 'failed' });
      await store.deleteTask('a2a_1');
      await store.deleteTask('a2a_1');
      await expect(store.task('a2a_1')).rejects.toMatchObject({ code: 'not_found' });
      await expect(store.insertTask(newTask('a2a_2'))).resolves.toBeUndefined();
      await expect(store.insertTask(newTask('a2a_2'))).rejects.toThrow();
    }),
  );

  it(
    'STORE-PG-a2a: tasks newest first, the id breaking ties, limited, one session when given',
    withStore(async (store) => {
      expect(await store.tasks()).toEqual([]);
      await store.insertTask(newTask('a2a_b'));
      await store.insertTask(newTask('a2a_a', { session_id: 'ses_2' }));
      clock.t = 2000;
      await store.insertTask(newTask('a2a_c', { session_id: null }));
      await store.insertTask(newTask('a2a_d'));
      expect((await store.tasks()).map((t) => t.id)).toEqual(['a2a_d', 'a2a_c', 'a2a_b', 'a2a_a']);
      expect((await store.tasks({ limit: 2 })).map((t) => t.id)).toEqual(['a2a_d', 'a2a_c']);
      expect((await store.tasks({ session_id: 'ses_1' })).map((t) => t.id)).toEqual(['a2a_d', 'a2a_b']);
      expect((await store.tasks({ session_id: 'ses_1', limit: 1 })).map((t) => t.id)).toEqual(['a2a_d']);
      expect(await store.tasks({ session_id: 'ses_none' })).toEqual([]);
      expect((await store.tasks({ session_id: '' })).map((t) => t.id)).toHaveLength(4);
    }),
  );
}

export type OpenServedTasks = () => Promise<{ tasks: ServedTaskRepository; close: () => Promise<void> }>;

export function servedTaskContract(open: OpenServedTasks): void {
  const withTasks = withOpened(open, (f) => f.tasks);

  it(
    'STORE-PG-served-a2a: a task by id, the newest of a context, missing ones undefined',
    withTasks(async (tasks) => {
      expect(await tasks.get('run_1')).toBeUndefined();
      expect(await tasks.latestInContext('ctx_1')).toBeUndefined();
      await tasks.insert({ task_id: 'run_1', context_id: 'ctx_1', session_id: 'ses_1' }, 100);
      await tasks.insert({ task_id: 'run_3', context_id: 'ctx_1', session_id: 'ses_1' }, 300);
      await tasks.insert({ task_id: 'run_2', context_id: 'ctx_1', session_id: 'ses_1' }, 200);
      await tasks.insert({ task_id: 'run_9', context_id: 'ctx_2', session_id: 'ses_2' }, 900);
      expect(await tasks.get('run_1')).toEqual({
        task_id: 'run_1',
        context_id: 'ctx_1',
        session_id: 'ses_1',
      });
      expect(await tasks.latestInContext('ctx_1')).toEqual({
        task_id: 'run_3',
        context_id: 'ctx_1',
        session_id: 'ses_1',
      });
      expect(await tasks.latestInContext('ctx_2')).toEqual({
        task_id: 'run_9',
        context_id: 'ctx_2',
        session_id: 'ses_2',
      });
      await expect(
        tasks.insert({ task_id: 'run_1', context_id: 'ctx_3', session_id: 'ses_3' }, 1000),
      ).rejects.toThrow();
      expect(await tasks.get('run_1')).toEqual({
        task_id: 'run_1',
        context_id: 'ctx_1',
        session_id: 'ses_1',
      });
    }),
  );
}
