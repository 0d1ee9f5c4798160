/**
 * The run ledger's writes of a compat request on SQLite (issue 17 item 3, p-ledger2): a new run's
 * first event takes seq 1 without reading the run's highest seq (unless another writer's event
 * already holds it).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../src/store/db';
import { countStatements, openTestLedger, RUN_INPUT } from '../helpers/sqlite-ledger';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

const eventsOf = (db: Db, runId: string) =>
  db.prepare('SELECT seq, type FROM agent_run_events WHERE run_id = ? ORDER BY seq').all(runId);

describe('a new run’s first event on SQLite', () => {
  it('STORE-120 takes seq 1 as a plain value; another writer’s event at seq 1 moves it to seq 2', async () => {
    const { db, ledger } = openTestLedger(opened);
    const counted = countStatements(db);
    const run = await ledger.create({ ...RUN_INPUT });
    const inserts = counted.texts.filter((t) => t.startsWith('INSERT INTO agent_run_events'));
    vi.restoreAllMocks();
    expect(inserts).toHaveLength(1);
    expect(inserts[0]).not.toContain('max(seq)');
    expect(eventsOf(db, run.id)).toEqual([{ seq: 1, type: 'run.queued' }]);
    // Another writer's event lands at seq 1 as the row is inserted (a trigger stands in for it).
    db.exec(`CREATE TRIGGER other_writer AFTER INSERT ON agent_runs BEGIN
      INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
        VALUES (NEW.id, NEW.session_id, 1, 'other', '{}', 0); END`);
    const raced = await ledger.create({ ...RUN_INPUT });
    expect(eventsOf(db, raced.id)).toEqual([
      { seq: 1, type: 'other' },
      { seq: 2, type: 'run.queued' },
    ]);
    // Inside a transaction the run's first event is held (seq 1 known: no writer but this ledger
    // appends to a run inserted in the open transaction, p-sqlrow); the stand-in trigger, which no
    // svc schema has, would make it conflict, so it goes first.
    db.exec('DROP TRIGGER other_writer');
    db.exec('BEGIN IMMEDIATE');
    const creating = ledger.create({ ...RUN_INPUT });
    db.exec('COMMIT');
    const inTx = await creating;
    const next = await ledger.append(inTx.id, 'after');
    expect(next.seq).toBe(2);
    expect(eventsOf(db, inTx.id)).toEqual([
      { seq: 1, type: 'run.queued' },
      { seq: 2, type: 'after' },
    ]);
  });

  it('STORE-122 a step’s run update answers only whether a cancel was requested, and writes what update writes', async () => {
    const { db, ledger } = openTestLedger(opened);
    const run = await ledger.create({ ...RUN_INPUT, status: 'running' });
    const twin = await ledger.create({ ...RUN_INPUT, status: 'running' });
    const usage = { input_tokens: 10, output_tokens: 2, reasoning_tokens: 1, cached_input_tokens: 0 };
    const patch = { steps: 1, usage, cost: 0.25 };
    const counted = countStatements(db);
    expect(await ledger.updateCancel?.(run.id, patch)).toEqual({ cancel_requested: false });
    const texts = counted.texts.filter((t) => t.startsWith('UPDATE agent_runs'));
    vi.restoreAllMocks();
    expect(texts).toHaveLength(1);
    expect(texts[0]).toMatch(/ RETURNING cancel_requested$/);
    const updated = await ledger.update(twin.id, patch);
    const stored = await ledger.require(run.id);
    // The two runs were created a clock tick apart: their times differ, the rest is the same.
    const same = ({ id, created_at, updated_at, started_at, ...rest }: typeof stored) => rest;
    expect(same(stored)).toEqual(same(updated));
    await ledger.requestCancel(run.id);
    expect(await ledger.updateCancel?.(run.id, { steps: 2 })).toEqual({ cancel_requested: true });
    await expect(ledger.updateCancel?.('run_none', { steps: 1 })).rejects.toMatchObject({
      code: 'not_found',
    });
  });
});
