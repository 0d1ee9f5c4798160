/**
 * The RunQueries contract (issue 18): the run ledger's reads on every backend, run on SQLite and
 * PostgreSQL by ./run-queries.contract.test.ts. Pins: the orderings (newest first with ties in
 * insertion order, the queue oldest first), the filters (family over session, parent, statuses,
 * empty lists match nothing), paging, missing rows, the JSON columns parsed, the time windows, the
 * yolo and reason-prefix filters, the event reads (after a seq, by type, newest first), the payload
 * filters (`payloadEquals` by JSON type, `payloadContains` case-insensitive) and `svc stats`.
 */
import { expect, it } from 'vitest';
import type { RunQueries } from '../../../src/runs/queries';
import type { RunRowInsert, RunWrites } from '../../../src/runs/run-repository';
import type { AsyncOf } from '../../../src/store/async-of';
import { withOpened } from './fixture';

export interface OpenedRunQueries {
  queries: RunQueries;
  writes: AsyncOf<RunWrites>;
  /** Adds a session row (runs reference one). */
  addSession(id: string): Promise<void>;
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

const ids = (runs: { id: string }[]) => runs.map((r) => r.id);

export function runQueriesContract(open: () => Promise<OpenedRunQueries>): void {
  const withQueries = withOpened(open, (o) => o);
  const seeded = (fn: (o: OpenedRunQueries) => Promise<void>) =>
    withQueries(async (o) => {
      for (const s of ['s1', 's2', 's3']) await o.addSession(s);
      await fn(o);
    });

  it(
    'STORE-PG-runq: get maps the row (JSON options, usage, failure, cancel flag); list pages newest first; count filters',
    seeded(async ({ queries, writes }) => {
      expect(await queries.get('nope')).toBeUndefined();
      await writes.insertRun(row('r_b', { options: JSON.stringify({ yolo: true, tools: ['read'] }) }));
      await writes.insertRun(row('r_a'));
      await writes.insertRun(row('r_c', { created_at: 200, session_id: 's2', family_session_id: 's1' }));
      await writes.insertRun(row('r_d', { created_at: 300, session_id: 's3', family_session_id: 's3' }));
      await writes.insertRun(row('r_e', { created_at: 50, parent_run_id: 'r_a', status: 'running' }));
      const usage = { input_tokens: 1, output_tokens: 2, reasoning_tokens: 3, cached_input_tokens: 4 };
      const failure = { code: 'provider', summary: 'boom', next: 'retry', details: { status: 500 } };
      await writes.updateRun(
        'r_a',
        { status: 'failed', usage, cost: 0.25, steps: 2, failure, error: 'e' },
        400,
      );
      await writes.requestCancel('r_a', 401);
      const a = await queries.get('r_a');
      expect(a).toMatchObject({
        id: 'r_a',
        status: 'failed',
        usage,
        cost: 0.25,
        steps: 2,
        error: 'e',
        failure,
        cancel_requested: true,
        options: {},
        parent_run_id: null,
        updated_at: 401,
      });
      expect(a).not.toHaveProperty('input_tokens');
      expect(a).not.toHaveProperty('row_seq');
      expect(await queries.get('r_b')).toMatchObject({
        options: { yolo: true, tools: ['read'] },
        failure: null,
        cancel_requested: false,
        model: null,
      });
      expect(ids(await queries.list())).toEqual(['r_d', 'r_c', 'r_b', 'r_a', 'r_e']);
      expect(ids(await queries.list({ limit: 2, offset: 1 }))).toEqual(['r_c', 'r_b']);
      expect(ids(await queries.list({ session_id: 's1' }))).toEqual(['r_b', 'r_a', 'r_e']);
      expect(ids(await queries.list({ session_id: 's3', family_session_id: 's1' }))).toEqual([
        'r_c',
        'r_b',
        'r_a',
        'r_e',
      ]);
      expect(ids(await queries.list({ parent_run_id: 'r_a' }))).toEqual(['r_e']);
      expect(ids(await queries.list({ status: ['running', 'failed'] }))).toEqual(['r_a', 'r_e']);
      expect(await queries.count()).toBe(5);
      expect(await queries.count({ status: ['queued'] })).toBe(3);
      expect(await queries.count({ family_session_id: 's1', status: ['queued'] })).toBe(2);
      expect(await queries.count({ session_id: 'none' })).toBe(0);
    }),
  );

  it(
    'STORE-PG-runq: the queue oldest first (ties in insertion order), running, runningOthers, sessionOf, cancelRequested, subtree',
    seeded(async ({ queries, writes }) => {
      await writes.insertRun(row('r_z', { created_at: 100 }));
      await writes.insertRun(row('r_y', { created_at: 100 }));
      await writes.insertRun(row('r_x', { created_at: 90 }));
      await writes.insertRun(row('r_other', { session_id: 's2', family_session_id: 's2' }));
      expect(ids(await queries.queued('s1'))).toEqual(['r_x', 'r_z', 'r_y']);
      expect(await queries.queued('s3')).toEqual([]);
      expect(await queries.running('s1')).toBeUndefined();
      await writes.markRunning('r_z', 200, { pid: 1, host: 'h', runner: 'a' });
      await writes.markRunning('r_other', 200, { pid: 1, host: 'h', runner: 'a' });
      expect(await queries.running('s1')).toMatchObject({
        id: 'r_z',
        status: 'running',
        runner: 'a',
        pid: 1,
      });
      expect(ids(await queries.runningAll())).toEqual(['r_z', 'r_other']);
      expect(ids(await queries.runningOthers('s1', 'r_y'))).toEqual(['r_z']);
      expect(await queries.runningOthers('s1', 'r_z')).toEqual([]);
      expect(await queries.sessionOf('r_other')).toBe('s2');
      expect(await queries.sessionOf('nope')).toBeUndefined();
      expect(await queries.cancelRequested('r_y')).toBe(false);
      await writes.requestCancel('r_y', 300);
      expect(await queries.cancelRequested('r_y')).toBe(true);
      expect(await queries.cancelRequested('nope')).toBe(false);
      await writes.insertRun(row('r_c1', { parent_run_id: 'r_z' }));
      await writes.insertRun(row('r_c2', { parent_run_id: 'r_z' }));
      await writes.insertRun(row('r_g1', { parent_run_id: 'r_c1' }));
      expect((await queries.subtree('r_z')).sort()).toEqual(['r_c1', 'r_c2', 'r_g1', 'r_z']);
      expect(await queries.subtree('r_g1')).toEqual(['r_g1']);
      expect(await queries.subtree('nope')).toEqual([]);
    }),
  );

  it(
    'STORE-PG-runq: ofSession, ofFamily, inWindow (since, statuses, sessions, yolo, reason prefix), child runs and status counts',
    seeded(async ({ queries, writes }) => {
      await writes.insertRun(row('r_2', { created_at: 100, options: '{"yolo":true}' }));
      await writes.insertRun(row('r_1', { created_at: 100 }));
      await writes.insertRun(row('r_3', { created_at: 200, session_id: 's2', parent_run_id: 'r_1' }));
      await writes.insertRun(row('r_4', { created_at: 300, session_id: 's2', parent_run_id: 'r_1' }));
      await writes.insertRun(row('r_5', { created_at: 50, session_id: 's3', family_session_id: 's3' }));
      await writes.updateRun(
        'r_2',
        { status: 'completed', reason: 'Loop detected: 50%_x', finished_at: 1000 },
        1,
      );
      await writes.updateRun('r_3', { status: 'failed', reason: 'max_steps', finished_at: 900 }, 1);
      await writes.markRunning('r_4', 400, { pid: 1, host: 'h', runner: 'a' });
      expect(ids(await queries.ofSession('s1'))).toEqual(['r_1', 'r_2']);
      expect(ids(await queries.ofSession('s2'))).toEqual(['r_4', 'r_3']);
      expect(ids(await queries.ofFamily('s1', { order: 'asc' }))).toEqual(['r_2', 'r_1', 'r_3', 'r_4']);
      expect(ids(await queries.ofFamily('s1', { order: 'desc' }))).toEqual(['r_4', 'r_3', 'r_1', 'r_2']);
      expect(ids(await queries.ofFamily('s1', { order: 'desc', limit: 2 }))).toEqual(['r_4', 'r_3']);
      expect(ids(await queries.inWindow({ since: 0 }))).toEqual(['r_2', 'r_3', 'r_4', 'r_1', 'r_5']);
      expect(ids(await queries.inWindow({ since: 400 }))).toEqual(['r_2', 'r_3', 'r_4']);
      expect(ids(await queries.inWindow({ since: 0, limit: 2 }))).toEqual(['r_2', 'r_3']);
      expect(ids(await queries.inWindow({ since: 0, statuses: ['queued'] }))).toEqual(['r_1', 'r_5']);
      expect(await queries.inWindow({ since: 0, statuses: [] })).toEqual([]);
      expect(ids(await queries.inWindow({ since: 0, sessionIds: ['s2', 's3'] }))).toEqual([
        'r_3',
        'r_4',
        'r_5',
      ]);
      expect(await queries.inWindow({ since: 0, sessionIds: [] })).toEqual([]);
      expect(ids(await queries.inWindow({ since: 0, yolo: true }))).toEqual(['r_2']);
      expect(ids(await queries.inWindow({ since: 0, reasonPrefix: 'loop DETECTED' }))).toEqual(['r_2']);
      expect(ids(await queries.inWindow({ since: 0, reasonPrefix: 'Loop detected: 50%_' }))).toEqual(['r_2']);
      expect(await queries.inWindow({ since: 0, reasonPrefix: 'Loop detected: 5%' })).toEqual([]);
      expect(await queries.inWindow({ since: 0, reasonPrefix: 'max_stepsX' })).toEqual([]);
      expect(ids(await queries.childRuns({ state: 'running' }))).toEqual(['r_4']);
      expect(ids(await queries.childRuns({ state: 'ended', familySessionId: 's1' }))).toEqual(['r_3']);
      expect(await queries.childRuns({ state: 'ended', familySessionId: 's3' })).toEqual([]);
      expect(await queries.childStatusCounts()).toEqual([
        { status: 'failed', n: 1 },
        { status: 'running', n: 1 },
      ]);
      expect(await queries.childStatusCounts('s3')).toEqual([]);
      expect(await queries.statusCountsOf(['s1', 's3'])).toEqual([
        { status: 'completed', n: 1 },
        { status: 'queued', n: 2 },
      ]);
      expect(await queries.statusCountsOf([])).toEqual([]);
    }),
  );

  it(
    'STORE-PG-runq: events after a seq and by type, counts, recent newest first, findEvents with payload filters',
    seeded(async ({ queries, writes }) => {
      await writes.insertRun(row('r_1'));
      await writes.insertRun(row('r_2', { session_id: 's2', family_session_id: 's2' }));
      const ev = (run_id: string, type: string, payload: Record<string, unknown>, created_at: number) =>
        writes.insertEvent({
          run_id,
          session_id: run_id === 'r_1' ? 's1' : 's2',
          type,
          payload: JSON.stringify(payload),
          created_at,
        });
      await ev('r_1', 'run.queued', {}, 10);
      await ev('r_1', 'tool.finished', { tool: 'bash', is_error: true, code: 2, path: 'src/Main.ts' }, 20);
      await ev('r_2', 'tool.finished', { tool: 'read', is_error: false, code: '2', path: 'README' }, 30);
      await ev('r_1', 'error', { message: 'Rate Limited', nested: { a: 1 } }, 40);
      await ev('r_2', 'tool.finished', { tool: 'bash', is_error: 1, code: 2.0 }, 50);
      const all = await queries.events('r_1');
      expect(all.map((e) => [e.seq, e.type])).toEqual([
        [1, 'run.queued'],
        [2, 'tool.finished'],
        [3, 'error'],
      ]);
      expect(all[2]).toMatchObject({
        run_id: 'r_1',
        session_id: 's1',
        payload: { message: 'Rate Limited', nested: { a: 1 } },
        created_at: 40,
      });
      expect((await queries.events('r_1', { afterSeq: 1, limit: 1 })).map((e) => e.seq)).toEqual([2]);
      expect((await queries.events('r_1', { types: ['error', 'run.queued'] })).map((e) => e.seq)).toEqual([
        1, 3,
      ]);
      expect((await queries.events('r_1', { types: [] })).length).toBe(3);
      expect(await queries.events('nope')).toEqual([]);
      expect(await queries.eventCount('r_1')).toBe(3);
      expect(await queries.eventCount()).toBe(5);
      expect(await queries.eventCount('nope')).toBe(0);
      expect((await queries.recentEvents({ limit: 2 })).map((e) => e.created_at)).toEqual([50, 40]);
      expect((await queries.recentEvents({ sessionId: 's2' })).map((e) => e.created_at)).toEqual([50, 30]);
      expect((await queries.recentEvents({ type: 'error' })).map((e) => e.created_at)).toEqual([40]);
      const at = async (filter: Parameters<RunQueries['findEvents']>[0]) =>
        (await queries.findEvents(filter)).map((e) => e.created_at);
      expect(await at({})).toEqual([10, 20, 30, 40, 50]);
      expect(await at({ order: 'desc', limit: 2 })).toEqual([50, 40]);
      expect(await at({ types: ['tool.finished'], since: 25 })).toEqual([30, 50]);
      expect(await at({ types: [] })).toEqual([]);
      expect(await at({ sessionIds: [] })).toEqual([]);
      expect(await at({ sessionId: 's2' })).toEqual([30, 50]);
      expect(await at({ sessionIds: ['s1'], runIds: ['r_1', 'r_2'] })).toEqual([10, 20, 40]);
      expect(await at({ runId: 'r_2', types: ['tool.finished'] })).toEqual([30, 50]);
      expect(await at({ payloadEquals: { tool: 'bash' } })).toEqual([20, 50]);
      expect(await at({ payloadEquals: { code: 2 } })).toEqual([20, 50]);
      expect(await at({ payloadEquals: { code: '2' } })).toEqual([30]);
      expect(await at({ payloadEquals: { is_error: 1 } })).toEqual([20, 50]);
      expect(await at({ payloadEquals: { is_error: 0 } })).toEqual([30]);
      expect(await at({ payloadEquals: { missing: 'x' } })).toEqual([]);
      expect(await at({ payloadContains: { path: 'main' } })).toEqual([20]);
      expect(await at({ payloadContains: { message: 'rate lim' }, types: ['error'] })).toEqual([40]);
      expect(await at({ payloadContains: { path: 'zzz' } })).toEqual([]);
      await expect(queries.findEvents({ payloadEquals: { "a') OR 1=1 --": 1 } })).rejects.toThrow(
        /not an identifier/,
      );
    }),
  );

  it(
    'STORE-PG-runq: usageStats counts by status and origin, averages steps past the queue, ranks tools and sums days in UTC',
    seeded(async ({ queries, writes }) => {
      const day = 86_400_000;
      const t0 = Date.UTC(2026, 0, 10, 23, 30);
      await writes.insertRun(row('r_1', { created_at: t0, origin: 'http' }));
      await writes.insertRun(row('r_2', { created_at: t0 + 3_600_000 }));
      await writes.insertRun(row('r_3', { created_at: t0 + 2 * day }));
      await writes.insertRun(row('r_4', { created_at: t0 - 5 * day, origin: 'agent' }));
      await writes.updateRun('r_1', { status: 'completed', steps: 3, cost: 0.5 }, 1);
      await writes.updateRun('r_2', { status: 'failed', steps: 2, cost: 0.25 }, 1);
      const tool = (tool: string | undefined, is_error: unknown) =>
        writes.insertEvent({
          run_id: 'r_1',
          session_id: 's1',
          type: 'tool.finished',
          payload: JSON.stringify({ tool, is_error }),
          created_at: 1,
        });
      await tool('read', false);
      await tool('bash', true);
      await tool('bash', false);
      await tool('edit', true);
      await tool(undefined, false);
      const stats = await queries.usageStats({ since: t0 - day });
      expect(stats.by_status).toEqual([
        { status: 'completed', n: 1 },
        { status: 'failed', n: 1 },
        { status: 'queued', n: 2 },
      ]);
      expect(stats.by_origin).toEqual([
        { origin: 'agent', n: 1 },
        { origin: 'cli', n: 2 },
        { origin: 'http', n: 1 },
      ]);
      expect(stats.totals).toEqual({ total: 2, steps: 2.5 });
      expect(stats.tools).toEqual([
        { tool: 'bash', calls: 2, errors: 1 },
        { tool: null, calls: 1, errors: 0 },
        { tool: 'edit', calls: 1, errors: 1 },
        { tool: 'read', calls: 1, errors: 0 },
      ]);
      expect(stats.days).toEqual([
        { date: '2026-01-10', runs: 1, cost: 0.5 },
        { date: '2026-01-11', runs: 1, cost: 0.25 },
        { date: '2026-01-12', runs: 1, cost: 0 },
      ]);
      const empty = await queries.usageStats({ since: t0 + 10 * day });
      expect(empty.days).toEqual([]);
    }),
  );
}
