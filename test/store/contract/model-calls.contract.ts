/**
 * The ModelCallStore contract (issue 18): the cost ledger's `model_calls` table on every backend,
 * run on SQLite and PostgreSQL by ./model-calls.contract.test.ts. Pins: rows round-trip (a null
 * ttft stays null); `list` filters by session and run, orders by time then id, and limits; `totals`
 * filters by session, day and since, and is all zeros when nothing matches; `stats` groups by
 * purpose, provider/model or day, counts errors, orders by cost then key (days newest first) and
 * leaves out calls before `since`.
 */
import { expect, it } from 'vitest';
import type { ModelCallRow, ModelCallStore } from '../../../src/telemetry/model-call-store';
import { withOpened } from './fixture';

export type OpenModelCallStore = () => Promise<{ store: ModelCallStore; close: () => Promise<void> }>;

const DAY = 86_400_000;

function call(id: string, at: number, patch: Partial<ModelCallRow> = {}): ModelCallRow {
  return {
    id,
    at,
    day: new Date(at).toISOString().slice(0, 10),
    session_id: 's1',
    run_id: 'r1',
    provider: 'fake',
    model: 'm1',
    purpose: 'agent_step',
    input_tokens: 10,
    output_tokens: 5,
    reasoning_tokens: 1,
    cached_input_tokens: 2,
    cost: 0.5,
    ttft_ms: 30,
    duration_ms: 100,
    status: 'ok',
    ...patch,
  };
}

export function modelCallsContract(open: OpenModelCallStore): void {
  const withStore = withOpened(open, (f) => f.store);

  it(
    'STORE-PG-model-calls: rows round-trip; list filters, orders by time then id, and limits',
    withStore(async (store) => {
      const a = call('mc_b', 1000, { ttft_ms: null, status: 'error' });
      const b = call('mc_a', 1000, { run_id: 'r2' });
      const c = call('mc_c', 500, { session_id: 's2', run_id: null });
      for (const row of [a, b, c]) await store.insert(row);
      expect(await store.list({ limit: 10 })).toEqual([c, b, a]);
      expect(await store.list({ sessionId: 's1', limit: 10 })).toEqual([b, a]);
      expect(await store.list({ sessionId: 's1', runId: 'r1', limit: 10 })).toEqual([a]);
      expect(await store.list({ limit: 2 })).toEqual([c, b]);
      expect(await store.list({ sessionId: 'nope', limit: 10 })).toEqual([]);
    }),
  );

  it(
    'STORE-PG-model-calls: totals by session, day and since; zeros when nothing matches',
    withStore(async (store) => {
      const day1 = Date.UTC(2026, 0, 1, 12);
      await store.insert(call('mc_1', day1, { cost: 0.25, input_tokens: 3, output_tokens: 4 }));
      await store.insert(call('mc_2', day1 + DAY, { cost: 1.5, session_id: 's2' }));
      expect(await store.totals({})).toEqual({ calls: 2, input_tokens: 13, output_tokens: 9, cost: 1.75 });
      expect(await store.totals({ sessionId: 's1' })).toEqual({
        calls: 1,
        input_tokens: 3,
        output_tokens: 4,
        cost: 0.25,
      });
      expect((await store.totals({ day: '2026-01-02' })).calls).toBe(1);
      expect((await store.totals({ since: day1 + 1 })).cost).toBe(1.5);
      expect(await store.totals({ sessionId: 'nope' })).toEqual({
        calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        cost: 0,
      });
    }),
  );

  it(
    'STORE-PG-model-calls: stats group by purpose, model and day, count errors, order and window',
    withStore(async (store) => {
      const day1 = Date.UTC(2026, 0, 1, 12);
      await store.insert(call('mc_1', day1, { purpose: 'summary', cost: 1 }));
      await store.insert(call('mc_2', day1 + DAY, { cost: 1, status: 'error' }));
      await store.insert(call('mc_3', day1 + DAY, { cost: 2, provider: 'other', model: 'Z' }));
      await store.insert(call('mc_4', day1 - DAY, { cost: 9, purpose: 'compaction' }));
      const byPurpose = await store.stats('purpose', day1);
      expect(byPurpose).toEqual([
        { key: 'agent_step', calls: 2, errors: 1, input_tokens: 20, output_tokens: 10, cost: 3 },
        { key: 'summary', calls: 1, errors: 0, input_tokens: 10, output_tokens: 5, cost: 1 },
      ]);
      expect((await store.stats('model', day1)).map((r) => [r.key, r.cost])).toEqual([
        ['fake/m1', 2],
        ['other/Z', 2],
      ]);
      expect((await store.stats('day', 0)).map((r) => r.key)).toEqual([
        '2026-01-02',
        '2026-01-01',
        '2025-12-31',
      ]);
      expect(await store.stats('purpose', day1 + 10 * DAY)).toEqual([]);
    }),
  );
}
