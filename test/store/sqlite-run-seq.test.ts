/**
 * The run ledger's sequence numbers on SQLite (issue 17 item 3): within one transaction the first
 * append of a run reads its highest seq, the later ones insert the number the transaction already
 * knows (`transactionMemo`, src/store/db.ts); a commit, a rollback or a rolled-back savepoint drops
 * what it knew, and another process appending to the same run between two transactions is seen.
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunLedger } from '../../src/runs/run-ledger';
import { DB_FILE, type Db } from '../../src/store/db';
import { countStatements, openTestLedger, RUN_INPUT } from '../helpers/sqlite-ledger';

const require = createRequire(import.meta.url);
const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

const seqsOf = async (ledger: RunLedger, runId: string) =>
  (await ledger.events(runId)).map((e) => [e.seq, e.type]);

describe('the run ledger’s seq on SQLite', () => {
  it('STORE-40 in one transaction only a run’s first append reads its highest seq; the numbers stay consecutive', async () => {
    const { db, ledger } = openTestLedger(opened);
    const a = await ledger.create({ ...RUN_INPUT });
    const b = await ledger.create({ ...RUN_INPUT });
    const counted = countStatements(db);
    const appended = db.transaction(() => [
      ledger.append(a.id, 'a1'),
      ledger.append(b.id, 'b1'),
      ledger.append(a.id, 'a2'),
      ledger.append(b.id, 'b2'),
      ledger.append(a.id, 'a3'),
    ])();
    const events = await Promise.all(appended);
    const inserts = counted.texts.filter((t) => t.startsWith('INSERT INTO agent_run_events'));
    vi.restoreAllMocks();
    // Each run's first append reads its highest seq; the three after it are held and written by
    // one multi-row INSERT before the COMMIT (p-runev, src/store/held-rows.ts).
    expect(inserts).toHaveLength(3);
    expect(inserts.map((t) => t.includes('max(seq)'))).toEqual([true, true, false]);
    expect(inserts[2]?.split('), (')).toHaveLength(3);
    expect(events.map((e) => e.seq)).toEqual([2, 2, 3, 3, 4]);
    expect(await seqsOf(ledger, a.id)).toEqual([
      [1, 'run.queued'],
      [2, 'a1'],
      [3, 'a2'],
      [4, 'a3'],
    ]);
    // The next transaction reads the highest seq again.
    const next = countStatements(db);
    expect((await db.transaction(() => [ledger.append(a.id, 'a4')])()[0]).seq).toBe(5);
    expect(next.texts.filter((t) => t.includes('max(seq)'))).toHaveLength(1);
  });

  it('STORE-41 a rolled-back transaction or savepoint leaves no number behind', async () => {
    const { db, ledger } = openTestLedger(opened);
    const run = await ledger.create({ ...RUN_INPUT });
    expect(() =>
      db.transaction(() => {
        void ledger.append(run.id, 'gone1');
        void ledger.append(run.id, 'gone2');
        throw new Error('undo');
      })(),
    ).toThrow('undo');
    // A savepoint (a nested transaction) rolled back inside a transaction that goes on.
    const kept = db.transaction(() => {
      const first = ledger.append(run.id, 'kept1');
      try {
        db.transaction(() => {
          void ledger.append(run.id, 'gone3');
          throw new Error('undo');
        })();
      } catch {
        // rolled back to the savepoint
      }
      return [first, ledger.append(run.id, 'kept2')];
    })();
    expect((await Promise.all(kept)).map((e) => e.seq)).toEqual([2, 3]);
    // Transactions and savepoints run as statements (the async transactions, the group commit).
    db.exec('BEGIN IMMEDIATE');
    void ledger.append(run.id, 'gone4');
    db.exec('ROLLBACK');
    db.exec('BEGIN IMMEDIATE');
    const kept3 = ledger.append(run.id, 'kept3');
    db.exec('SAVEPOINT s1');
    void ledger.append(run.id, 'gone5');
    db.exec('ROLLBACK TO s1; RELEASE s1');
    const kept4 = ledger.append(run.id, 'kept4');
    db.exec('COMMIT');
    expect((await kept3).seq).toBe(4);
    expect((await kept4).seq).toBe(5);
    expect(await seqsOf(ledger, run.id)).toEqual([
      [1, 'run.queued'],
      [2, 'kept1'],
      [3, 'kept2'],
      [4, 'kept3'],
      [5, 'kept4'],
    ]);
  });

  it('STORE-42 another process appending to the same run between this one’s transactions: every seq once, no gap', async () => {
    const { db, ledger } = openTestLedger(opened);
    const run = await ledger.create({ ...RUN_INPUT });
    const file = db.name;
    expect(file.endsWith(DB_FILE)).toBe(true);
    // The other process appends as svc does (the statement of `insertEvent`), two per transaction.
    const script = `const db = new (require(${JSON.stringify(require.resolve('better-sqlite3'))}))(${JSON.stringify(file)}, { timeout: 10000 });
const insert = db.prepare("INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at) VALUES (?, 'ses_1', (SELECT coalesce(max(seq), 0) + 1 FROM agent_run_events WHERE run_id = ?), 'other', '{}', 0)");
const pair = db.transaction(() => { insert.run(${JSON.stringify(run.id)}, ${JSON.stringify(run.id)}); insert.run(${JSON.stringify(run.id)}, ${JSON.stringify(run.id)}); });
const mine = db.prepare("SELECT count(*) AS n FROM agent_run_events WHERE run_id = ? AND type = 'mine'");
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
// Waits (bounded) for this test's appends so the two processes interleave at any load.
const awaitMine = (n) => { for (let t = 0; t < 10000 && mine.get(${JSON.stringify(run.id)}).n < n; t++) sleep(2); };
for (let i = 0; i < 60; i++) { if (i === 1) awaitMine(1); if (i === 30) awaitMine(150); pair.immediate(); sleep(2); }`;
    const child = spawn(process.execPath, ['-e', script], { cwd: join(file, '..'), stdio: 'inherit' });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const count = db.prepare(
      "SELECT count(*) AS n FROM agent_run_events WHERE run_id = ? AND type = 'other'",
    );
    while ((count.get(run.id) as { n: number }).n === 0) await new Promise((r) => setTimeout(r, 2));
    const appendThree = () => [
      ledger.append(run.id, 'mine'),
      ledger.append(run.id, 'mine'),
      ledger.append(run.id, 'mine'),
    ];
    for (let i = 0; i < 60; i++) {
      // Two transactions of either kind in a row: `db.transaction()`, statements (group commit).
      let three: Promise<{ seq: number }>[];
      if (i % 4 < 2) three = db.transaction(appendThree)();
      else {
        db.exec('BEGIN IMMEDIATE');
        three = appendThree();
        db.exec('COMMIT');
      }
      const seqs = (await Promise.all(three)).map((e) => e.seq);
      expect(seqs).toEqual([seqs[0], seqs[0] + 1, seqs[0] + 2]);
      await new Promise((r) => setTimeout(r, 2));
    }
    expect(await exited).toBe(0);
    const events = await ledger.events(run.id, { limit: 1000 });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.type === 'other')).toHaveLength(120);
    expect(events.filter((e) => e.type === 'mine')).toHaveLength(180);
    // The two processes' transactions did interleave (else the test shows nothing).
    const types = events.map((e) => e.type).join(' ');
    expect(types).toMatch(/mine.*other.*mine/);
  });

  it('STORE-43 a claim inside an open transaction writes its one row without a savepoint; one that interrupts a dead run keeps a savepoint', async () => {
    const { db, ledger } = openTestLedger(opened);
    const first = await ledger.create({ ...RUN_INPUT });
    const second = await ledger.create({ ...RUN_INPUT });
    const counted = countStatements(db);
    db.exec('BEGIN IMMEDIATE');
    const claimed = ledger.claim(first.id);
    db.exec('COMMIT');
    const savepoints = () => counted.texts.filter((t) => /^(SAVEPOINT|RELEASE|ROLLBACK)/.test(t));
    expect(savepoints()).toEqual([]);
    expect(await claimed).toMatchObject({ ok: true, run: { id: first.id, status: 'running' } });
    // A failed check inside the transaction writes nothing and leaves the transaction usable.
    db.exec('BEGIN IMMEDIATE');
    await expect(ledger.claim(first.id)).rejects.toMatchObject({ code: 'conflict' });
    const blocked = ledger.claim(second.id);
    db.exec('COMMIT');
    expect(await blocked).toMatchObject({ ok: false, blocking: { id: first.id } });
    expect(savepoints()).toEqual([]);
    // The first run's process is gone: the claim interrupts it and claims, both in one savepoint.
    db.prepare("UPDATE agent_runs SET runner = 'rnr_gone', pid = NULL WHERE id = ?").run(first.id);
    db.exec('BEGIN IMMEDIATE');
    const taken = ledger.claim(second.id);
    db.exec('COMMIT');
    expect(savepoints()).toHaveLength(2);
    vi.restoreAllMocks();
    expect(await taken).toMatchObject({ ok: true, run: { id: second.id, status: 'running' } });
    expect(await ledger.get(first.id)).toMatchObject({ status: 'interrupted' });
  });
});
