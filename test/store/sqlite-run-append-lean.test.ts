/**
 * The run ledger's writes on SQLite without `RETURNING` where the answer is known (issue 17 item 3,
 * p-bus): an append with a known seq answers its id from `lastInsertRowid`, a new run its row
 * from the values it inserted. Pins: the answers are the stored rows (ids ascending in append
 * order, seqs without a gap, the run's columns in the table's order), and the append listeners
 * see each event once, as added or removed between appends.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../src/store/db';
import { countStatements, openTestLedger, RUN_INPUT } from '../helpers/sqlite-ledger';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

const storedEvents = (db: Db, runId: string) =>
  db.prepare('SELECT id, seq, type FROM agent_run_events WHERE run_id = ? ORDER BY id').all(runId);

describe('run ledger appends on SQLite', () => {
  it('ENGINE-CPU-10 an append with a known seq inserts without RETURNING and answers the stored id and seq', async () => {
    const { db, ledger } = openTestLedger(opened);
    const run = await ledger.create({ ...RUN_INPUT, status: 'running' });
    const other = await ledger.create({ ...RUN_INPUT, status: 'running' });
    const counted = countStatements(db);
    // One transaction: the ledger knows each run's next seq after its first append there.
    db.exec('BEGIN IMMEDIATE');
    const answered = [];
    for (const [runId, type] of [
      [run.id, 'a'],
      [other.id, 'b'],
      [run.id, 'c'],
      [run.id, 'd'],
      [other.id, 'e'],
    ] as const)
      answered.push(await ledger.append(runId, type, { type }));
    db.exec('COMMIT');
    const inserts = counted.texts.filter((t) => t.startsWith('INSERT INTO agent_run_events'));
    vi.restoreAllMocks();
    const plain = inserts.filter((t) => !t.includes('max(seq)'));
    // The three appends with a known seq: held, one multi-row INSERT before the COMMIT (p-runev).
    expect(plain).toHaveLength(1);
    expect(plain[0]?.split('), (')).toHaveLength(3);
    for (const text of plain) expect(text).not.toContain('RETURNING');
    const ids = answered.map((event) => event.id);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    const stored = [...storedEvents(db, run.id), ...storedEvents(db, other.id)];
    for (const event of answered)
      expect(stored).toContainEqual({ id: event.id, seq: event.seq, type: event.type });
    expect(storedEvents(db, run.id)).toEqual([
      { id: expect.any(Number), seq: 1, type: 'run.created' },
      { id: ids[0], seq: 2, type: 'a' },
      { id: ids[2], seq: 3, type: 'c' },
      { id: ids[3], seq: 4, type: 'd' },
    ]);
    expect(storedEvents(db, other.id).map((row) => (row as { seq: number }).seq)).toEqual([1, 2, 3]);
  });

  it('ENGINE-CPU-11 a new run is answered as stored, its columns in the table’s order, without RETURNING', async () => {
    const { db, ledger } = openTestLedger(opened);
    const counted = countStatements(db);
    const queued = await ledger.create({ ...RUN_INPUT });
    const running = await ledger.create({
      ...RUN_INPUT,
      status: 'running',
      model: 'fake/m1',
      parent_run_id: queued.id,
      options: { max_steps: 7, tools: ['view'] } as never,
    });
    const inserts = counted.texts.filter((t) => t.startsWith('INSERT INTO agent_runs'));
    vi.restoreAllMocks();
    expect(inserts).toHaveLength(2);
    for (const text of inserts) expect(text).not.toContain('RETURNING');
    for (const created of [queued, running]) {
      const read = await ledger.get(created.id);
      // JSON text: the same keys in the same order with the same values (a response's bytes).
      expect(JSON.stringify(created)).toBe(JSON.stringify(read));
    }
    expect(running).toMatchObject({
      status: 'running',
      pid: process.pid,
      runner: 'rnr_test',
      model: 'fake/m1',
    });
    expect(queued).toMatchObject({ status: 'queued', pid: null, runner: null, started_at: null });
  });

  it('ENGINE-CPU-12 an append listener added or removed during an append counts from the next append', async () => {
    const { ledger } = openTestLedger(opened);
    const run = await ledger.create({ ...RUN_INPUT, status: 'running' });
    const seen: string[] = [];
    const late = (event: { type: string }) => seen.push(`late:${event.type}`);
    let offLate: (() => void) | undefined;
    let offSecond: () => void = () => {};
    // The first listener, during the first append, removes the second and adds a late one.
    const offFirst = ledger.onAppend((event) => {
      seen.push(`first:${event.type}`);
      if (event.type === 'one') {
        offSecond();
        offLate = ledger.onAppend(late);
      }
    });
    offSecond = ledger.onAppend((event) => seen.push(`second:${event.type}`));
    await ledger.append(run.id, 'one');
    await ledger.append(run.id, 'two');
    offFirst();
    offLate?.();
    await ledger.append(run.id, 'three');
    expect(seen).toEqual(['first:one', 'second:one', 'first:two', 'late:two']);
  });
});
