/**
 * A run's totals held while a SQLite transaction lasts (src/runs/held-run-totals.ts, p-sqlprof5):
 * the run's last step end holds its `UPDATE agent_runs SET steps …` for the finish, which writes
 * them again. Pins: the finish in the same transaction takes its place (one UPDATE); a COMMIT, a
 * read of the run ledger or another write of the run writes it first, so the row is what the
 * step end's own UPDATE would have left; a ROLLBACK (TO its savepoint) drops it, and a ROLLBACK TO
 * a savepoint the finish ran in puts it back; outside a transaction it is written at once.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../src/store/db';
import { countStatements, openTestLedger, RUN_INPUT } from '../helpers/sqlite-ledger';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

const USAGE = { input_tokens: 10, output_tokens: 2, reasoning_tokens: 0, cached_input_tokens: 0 };
const TOTALS = { steps: 1, usage: USAGE, cost: 0.5 };
const totalsOf = (db: Db, id: string) =>
  db.prepare('SELECT status, steps, input_tokens, output_tokens, cost FROM agent_runs WHERE id = ?').get(id);
const stepTotals = { steps: 1, input_tokens: 10, output_tokens: 2, cost: 0.5 };
const runUpdates = (texts: string[]) => texts.filter((t) => t.startsWith('UPDATE agent_runs'));

async function claimedRun() {
  const { db, ledger } = openTestLedger(opened);
  const run = await ledger.create({ ...RUN_INPUT });
  await ledger.claim(run.id);
  return { db, ledger, id: run.id };
}

describe('a run’s totals held for its finish on SQLite', () => {
  it('COMPAT-PERF-492: the finish in the same transaction takes their place: one UPDATE, the row the finish’s', async () => {
    const { db, ledger, id } = await claimedRun();
    const counted = countStatements(db);
    db.exec('BEGIN IMMEDIATE');
    await ledger.holdTotals?.(id, TOTALS);
    expect(runUpdates(counted.texts)).toEqual([]);
    await ledger.update(id, { status: 'completed', ...TOTALS });
    db.exec('COMMIT');
    vi.restoreAllMocks();
    expect(runUpdates(counted.texts)).toHaveLength(1);
    expect(runUpdates(counted.texts)[0]).toMatch(/^UPDATE agent_runs SET status = \?/);
    expect(totalsOf(db, id)).toEqual({ status: 'completed', ...stepTotals });
  });

  it('COMPAT-PERF-493: written before the COMMIT, before a read of the ledger and before another write of the run; at once outside a transaction', async () => {
    const { db, ledger, id } = await claimedRun();
    // No finish in the transaction (a service closed between the step end and its finish).
    db.exec('BEGIN IMMEDIATE');
    await ledger.holdTotals?.(id, TOTALS);
    db.exec('COMMIT');
    expect(totalsOf(db, id)).toEqual({ status: 'running', ...stepTotals });
    // A read of the run ledger inside the transaction sees them.
    db.exec('BEGIN IMMEDIATE');
    await ledger.holdTotals?.(id, { ...TOTALS, steps: 2 });
    expect((await ledger.get(id))?.steps).toBe(2);
    db.exec('COMMIT');
    // Another write of the run without the totals (a cancel request): written first, kept.
    db.exec('BEGIN IMMEDIATE');
    await ledger.holdTotals?.(id, { ...TOTALS, steps: 3 });
    await ledger.requestCancel(id);
    db.exec('COMMIT');
    expect(totalsOf(db, id)).toMatchObject({ status: 'running', steps: 3 });
    // Outside a transaction: at once.
    const counted = countStatements(db);
    await ledger.holdTotals?.(id, { ...TOTALS, steps: 4 });
    vi.restoreAllMocks();
    expect(runUpdates(counted.texts)).toHaveLength(1);
    expect(totalsOf(db, id)).toMatchObject({ steps: 4 });
  });

  it('COMPAT-PERF-494: a ROLLBACK drops them; a ROLLBACK TO drops what its savepoint held and puts back what it took', async () => {
    const { db, ledger, id } = await claimedRun();
    db.exec('BEGIN IMMEDIATE');
    await ledger.holdTotals?.(id, TOTALS);
    db.exec('ROLLBACK');
    db.exec('BEGIN IMMEDIATE');
    db.exec('COMMIT');
    expect(totalsOf(db, id)).toEqual({
      status: 'running',
      steps: 0,
      input_tokens: 0,
      output_tokens: 0,
      cost: 0,
    });
    // Held inside a savepoint rolled back: dropped.
    db.exec('BEGIN IMMEDIATE');
    expect(() =>
      db.transaction(() => {
        void ledger.holdTotals?.(id, TOTALS);
        throw new Error('body failed');
      })(),
    ).toThrow('body failed');
    db.exec('COMMIT');
    expect(totalsOf(db, id)).toMatchObject({ steps: 0 });
    // Held before a savepoint whose finish is rolled back: back, written at the COMMIT.
    db.exec('BEGIN IMMEDIATE');
    await ledger.holdTotals?.(id, TOTALS);
    expect(() =>
      db.transaction(() => {
        void ledger.update(id, { status: 'completed', ...TOTALS, steps: 9 });
        throw new Error('finish failed');
      })(),
    ).toThrow('finish failed');
    db.exec('COMMIT');
    expect(totalsOf(db, id)).toEqual({ status: 'running', ...stepTotals });
  });
});
