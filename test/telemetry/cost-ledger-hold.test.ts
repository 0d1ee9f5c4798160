/**
 * The cost ledger's held step calls (PostgreSQL, issue 18 item 6, p-pgfirst; src/telemetry/
 * cost-ledger.ts `HeldCalls`), over an in-memory store: a run's step call is held, not inserted,
 * and rides in the statement that takes it (inserted alone after it when that statement did not
 * write it); a second call while one is held, a compaction's or summary's, a call of another run
 * are inserted at once; the run's end writes what is held; a store without `insertWrite` (SQLite)
 * holds nothing.
 */
import { describe, expect, it } from 'vitest';
import type { ModelCallEnd, ModelCallStart } from '../../src/providers/types';
import { createCostLedger } from '../../src/telemetry/cost-ledger';
import type { ModelCallRow, ModelCallStore } from '../../src/telemetry/model-call-store';

function memoryStore(riding: boolean) {
  const inserted: string[] = [];
  const store: ModelCallStore = {
    async insert(row) {
      inserted.push(row.id);
    },
    ...(riding
      ? {
          insertWrite: (row: ModelCallRow, wrote: () => void) => ({ values: [row.id], sql: () => '', wrote }),
        }
      : {}),
    stats: async () => [],
    totals: async () => ({ calls: 0, input_tokens: 0, output_tokens: 0, cost: 0 }),
    list: async () => [],
  };
  let n = 0;
  const ledger = createCostLedger({
    store,
    clock: { now: () => 86_400_000 },
    ids: { next: (prefix: string) => `${prefix}_${++n}` } as never,
    budget: () => ({}),
  });
  return { ledger, inserted };
}

const start = (runId: string | null, purpose: ModelCallStart['purpose'] = 'agent_step'): ModelCallStart => ({
  purpose,
  session_id: 's1',
  run_id: runId,
  provider: 'fake',
  model: 'm1',
  prompt: [],
});
const end: ModelCallEnd = {
  provider: 'fake',
  model: 'm1',
  input_tokens: 1,
  output_tokens: 2,
  reasoning_tokens: 0,
  cached_input_tokens: 0,
  cost: 0,
  ttft_ms: null,
  duration_ms: 1,
  status: 'ok',
};

describe('cost ledger: held step calls', () => {
  it('STORE-PG-287: a held step call rides (not inserted) or is inserted alone after a statement that did not write it; others at once; the run`s end writes what is held', async () => {
    const { ledger, inserted } = memoryStore(true);
    const calls = ledger.hold('r1');
    expect(calls).toBeDefined();
    const row = await ledger.record(start('r1'), end);
    expect(row).toMatchObject({ id: 'mc_1', day: '1970-01-02', run_id: 'r1', purpose: 'agent_step' });
    expect(inserted).toEqual([]);
    // A second call while one is held, a compaction, another run: at once, as before.
    await ledger.record(start('r1'), end);
    await ledger.record(start('r1', 'compaction'), end);
    await ledger.record(start('r2'), end);
    expect(inserted).toEqual(['mc_2', 'mc_3', 'mc_4']);

    // Taken and written by the statement (told): not inserted again; nothing left to take.
    const taken = calls?.take();
    expect(taken?.insert.values).toEqual(['mc_1']);
    taken?.insert.wrote();
    await taken?.after();
    expect(inserted).toEqual(['mc_2', 'mc_3', 'mc_4']);
    expect(calls?.take()).toBeUndefined();

    // Taken, the statement failed (never told): inserted alone.
    await ledger.record(start('r1'), end);
    await calls?.take()?.after();
    expect(inserted).toEqual(['mc_2', 'mc_3', 'mc_4', 'mc_5']);

    // Still held at the run's end: written; after it the run's calls are inserted at once.
    await ledger.record(start('r1'), end);
    expect(inserted).toHaveLength(4);
    await calls?.release();
    expect(inserted.at(-1)).toBe('mc_6');
    await ledger.record(start('r1'), end);
    expect(inserted.at(-1)).toBe('mc_7');
  });

  it('STORE-PG-288: SQLite (no insertWrite): nothing is held, every call inserted at once', async () => {
    const { ledger, inserted } = memoryStore(false);
    expect(ledger.hold('r1')).toBeUndefined();
    await ledger.record(start('r1'), end);
    expect(inserted).toEqual(['mc_1']);
  });
});
