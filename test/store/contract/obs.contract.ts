/**
 * The read models' query bundle contract (issue 18, src/observe/read-model-queries.ts): the failed
 * pack hook runs (`HookRunQueries`), the coordination trace (`TraceQueries`) and the bundle's
 * wiring of the event log, message and usage reads, run on SQLite and PostgreSQL by
 * ./obs.contract.test.ts. Pins: hook runs newest first, `ok` runs and older runs left out, a
 * session list filters (an empty one matches none); claims, negotiations and markers since a time
 * (inclusive), paths parsed from JSON, in creation order, a negotiation carrying its claim's paths
 * and mode.
 */
import { expect, it } from 'vitest';
import type { ReadModelQueries } from '../../../src/observe/read-model-queries';
import { withOpened } from './fixture';

export interface ObsFixture {
  queries: ReadModelQueries;
  /** A raw statement with `?` parameters, to seed the tables. */
  exec(statement: string, params: unknown[]): Promise<void>;
  close(): Promise<void>;
}

export function obsContract(open: () => Promise<ObsFixture>): void {
  const withObs = withOpened(open, (f) => f);

  const session = (f: ObsFixture, id: string) =>
    f.exec('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, ?, ?)', [id, 1, 1]);
  const hookRun = (f: ObsFixture, sessionId: string, pack: string, status: string, startedAt: number) =>
    f.exec(
      `INSERT INTO pack_hook_runs (session_id, pack_name, hook_index, event, event_id, status, exit_code, duration_ms, started_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [sessionId, pack, 2, 'tool.finished', null, status, status === 'ok' ? 0 : 1, 5, startedAt],
    );
  const claim = (
    f: ObsFixture,
    id: string,
    sessionId: string,
    paths: string[],
    createdAt: number,
    released?: number,
  ) =>
    f.exec(
      `INSERT INTO workspace_claims (id, session_id, paths, mode, reason, created_at, renewed_at, expires_at, released_at, release_reason)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        id,
        sessionId,
        JSON.stringify(paths),
        'hard',
        'r',
        createdAt,
        createdAt,
        createdAt + 1000,
        released ?? null,
        released ? 'done' : null,
      ],
    );

  it(
    'STORE-PG-obs: failed hook runs newest first; ok and older runs left out; a session list filters, an empty one matches none',
    withObs(async (f) => {
      await session(f, 's1');
      await session(f, 's2');
      await hookRun(f, 's1', 'p1', 'failed', 100);
      await hookRun(f, 's1', 'p1', 'ok', 200);
      await hookRun(f, 's2', 'p2', 'timeout', 300);
      await hookRun(f, 's1', 'p3', 'error', 400);
      const runs = f.queries.hookRuns;
      expect(await runs.failed({ since: 0 })).toEqual([
        {
          session_id: 's1',
          pack_name: 'p3',
          hook_index: 2,
          event: 'tool.finished',
          status: 'error',
          started_at: 400,
        },
        {
          session_id: 's2',
          pack_name: 'p2',
          hook_index: 2,
          event: 'tool.finished',
          status: 'timeout',
          started_at: 300,
        },
        {
          session_id: 's1',
          pack_name: 'p1',
          hook_index: 2,
          event: 'tool.finished',
          status: 'failed',
          started_at: 100,
        },
      ]);
      expect((await runs.failed({ since: 300 })).map((r) => r.started_at)).toEqual([400, 300]);
      expect((await runs.failed({ since: 0, sessionIds: ['s1'] })).map((r) => r.pack_name)).toEqual([
        'p3',
        'p1',
      ]);
      expect(await runs.failed({ since: 0, sessionIds: [] })).toEqual([]);
      expect(await runs.failed({ since: 500 })).toEqual([]);
    }),
  );

  it(
    'STORE-PG-obs: claims, negotiations and markers since a time, in creation order, paths parsed',
    withObs(async (f) => {
      await claim(f, 'c1', 's1', ['a.ts'], 100);
      await claim(f, 'c2', 's2', ['b.ts', 'c.ts'], 200, 250);
      await f.exec(
        'INSERT INTO claim_negotiations (id, claim_id, from_session_id, message, created_at, outcome) VALUES (?, ?, ?, ?, ?, ?)',
        ['n1', 'c1', 's2', 'please', 150, 'pending'],
      );
      await f.exec(
        'INSERT INTO claim_negotiations (id, claim_id, from_session_id, message, created_at, outcome) VALUES (?, ?, ?, ?, ?, ?)',
        ['n2', 'c2', 's1', '', 260, 'pending'],
      );
      for (const [id, path, at] of [
        ['m1', 'a.ts', 120],
        ['m2', 'd.ts', 220],
      ] as const)
        await f.exec(
          'INSERT INTO workspace_markers (id, session_id, path, kind, message, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
          [id, 's1', path, 'note', 'm', at, null],
        );
      const trace = f.queries.trace;
      const claims = await trace.claimsSince(0);
      expect(claims.map((c) => c.id)).toEqual(['c1', 'c2']);
      expect(claims[1]).toMatchObject({
        id: 'c2',
        session_id: 's2',
        paths: ['b.ts', 'c.ts'],
        mode: 'hard',
        created_at: 200,
        released_at: 250,
      });
      expect(claims[0].released_at).toBeNull();
      expect((await trace.claimsSince(200)).map((c) => c.id)).toEqual(['c2']);
      expect(await trace.claimsSince(201)).toEqual([]);
      expect(await trace.negotiationsSince(0)).toEqual([
        { from_session_id: 's2', created_at: 150, paths: ['a.ts'], mode: 'hard' },
        { from_session_id: 's1', created_at: 260, paths: ['b.ts', 'c.ts'], mode: 'hard' },
      ]);
      expect((await trace.negotiationsSince(151)).map((n) => n.created_at)).toEqual([260]);
      expect(await trace.markersSince(0)).toEqual([
        { session_id: 's1', path: 'a.ts', created_at: 120 },
        { session_id: 's1', path: 'd.ts', created_at: 220 },
      ]);
      expect(await trace.markersSince(220)).toEqual([{ session_id: 's1', path: 'd.ts', created_at: 220 }]);
    }),
  );

  it(
    'STORE-PG-obs: the bundle reads the event log, the conversation and the usage of the same store',
    withObs(async (f) => {
      await session(f, 's1');
      await f.exec('INSERT INTO session_events (session_id, type, payload, created_at) VALUES (?, ?, ?, ?)', [
        's1',
        'context.usage',
        '{"ratio":0.5}',
        10,
      ]);
      await f.exec(
        'INSERT INTO messages (id, session_id, role, parts, model, usage, cost, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        ['m1', 's1', 'user', '[{"type":"text","text":"hi"}]', null, null, 0, 1, 1],
      );
      const events = await f.queries.events.find({ sessionId: 's1' });
      expect(events.map((e) => [e.type, e.payload])).toEqual([['context.usage', { ratio: 0.5 }]]);
      expect(await f.queries.events.count({ sessionId: 's1', type: 'context.usage' })).toBe(1);
      expect(await f.queries.messages.conversation('s1')).toEqual([
        { id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hi' }] },
      ]);
      const usage = await f.queries.usage.sessionUsage();
      expect(usage.sessions.total).toBe(1);
      expect(usage.byRole).toEqual([{ role: 'user', n: 1 }]);
    }),
  );
}
