/**
 * A SQLite run's row and first seq known beyond the statement that wrote them (issue 17 item 3,
 * p-sqlrow; src/runs/run-repository.ts, src/runs/run-events.ts): an update that answers the row
 * (a finish's) returns only the columns another writer may change, the run's fixed ones (id,
 * session, agent, origin, prompt, options, created_at…) taken from the row this process inserted;
 * a run inserted inside a transaction has its first event held like the next ones (seq 1, no
 * INSERT of its own). Pinned: the statements, the answers equal to the stored rows (keys in order),
 * another connection's writes (a second better-sqlite3 handle on the same file) seen, a rolled-back
 * insert leaving nothing known.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it, vi } from 'vitest';
import { createRunWrites, type RunRowInsert } from '../../src/runs/run-repository';
import { atomicallyAsync, DB_FILE, type Db } from '../../src/store/db';
import {
  closedAfterEach,
  countStatements,
  openTestDb,
  openTestLedger,
  RUN_INPUT,
} from '../helpers/sqlite-ledger';

const { opened, others } = closedAfterEach();

/** A database holding `ses_1`, its file, and the SQLite run writes over it. */
function openWrites() {
  const { db, dataDir } = openTestDb(opened);
  db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)').run('ses_1');
  const writes = createRunWrites(
    (text) => db.prepare(text),
    (fn) => db.transaction(fn)(),
  );
  return { db, file: join(dataDir, DB_FILE), writes };
}

const runRow = (id: string, status: 'queued' | 'running' = 'running'): RunRowInsert => ({
  id,
  session_id: 'ses_1',
  parent_run_id: null,
  family_session_id: 'ses_1',
  status,
  agent: 'build',
  model: 'fake/m1',
  origin: 'http',
  prompt: 'a long prompt '.repeat(20),
  options: '{"max_steps":3}',
  created_at: 100,
  started_at: 100,
  pid: 1,
  host: 'h',
  runner: 'rnr_1',
});

const FINISH = {
  status: 'completed' as const,
  model: 'fake/m2',
  reason: null,
  error: null,
  failure: null,
  steps: 1,
  usage: { input_tokens: 5, output_tokens: 7, reasoning_tokens: 0, cached_input_tokens: 1 },
  cost: 0.5,
  result_message_id: 'msg_1',
  finished_at: 200,
};

const stored = (db: Db, id: string) =>
  db.prepare('SELECT * FROM agent_runs WHERE id = ?').get(id) as Record<string, unknown>;
const UPDATE = /^UPDATE agent_runs SET /;

describe('a run row known beyond its INSERT (SQLite)', () => {
  it('COMPAT-PERF-482: a finish of a run this process inserted returns no `*` (no prompt or options read back) and answers the stored row, keys in order', () => {
    const { db, writes } = openWrites();
    writes.insertRunRow(runRow('run_a'));
    writes.insertRunRow(runRow('run_b', 'queued'));
    const counted = countStatements(db);
    const queued = writes.updateRunRowQueued('run_a', FINISH, 300);
    const updated = writes.updateRunRow('run_b', { steps: 2, failure: { kind: 'x' } as never }, 301);
    vi.restoreAllMocks();
    const updates = counted.texts.filter((t) => UPDATE.test(t));
    expect(updates).toHaveLength(2);
    for (const text of updates) {
      expect(text).not.toMatch(/RETURNING \*/);
      expect(text).not.toMatch(/RETURNING .*\b(prompt|options|agent|origin)\b/);
    }
    expect(queued?.queued).toBe(true); // run_b is queued in the same session
    for (const [answer, id] of [
      [queued?.row, 'run_a'],
      [updated, 'run_b'],
    ] as const) {
      const row = stored(db, id);
      expect(answer).toEqual(row);
      expect(Object.keys(answer ?? {})).toEqual(Object.keys(row));
    }
  });

  it('COMPAT-PERF-483: another connection’s writes to the run (a second handle on the file) show in the answer; a rolled-back or deleted run answers nothing', () => {
    const { db, file, writes } = openWrites();
    writes.insertRunRow(runRow('run_a'));
    const other = new Database(file);
    others.push(other);
    other.pragma('busy_timeout = 5000');
    other
      .prepare(
        "UPDATE agent_runs SET cancel_requested = 1, pid = 9, host = 'elsewhere', runner = 'rnr_9', started_at = 150, reason = 'told' WHERE id = ?",
      )
      .run('run_a');
    other
      .prepare(
        `INSERT INTO agent_runs (id, session_id, family_session_id, status, agent, origin, prompt, options, created_at, updated_at)
         VALUES ('run_q', 'ses_1', 'ses_1', 'queued', 'build', 'cli', 'q', '{}', 1, 1)`,
      )
      .run();
    const answer = writes.updateRunRowQueued('run_a', { status: 'completed', finished_at: 200 }, 300);
    expect(answer?.queued).toBe(true);
    expect(answer?.row).toEqual(stored(db, 'run_a'));
    expect(answer?.row).toMatchObject({
      cancel_requested: 1,
      pid: 9,
      host: 'elsewhere',
      runner: 'rnr_9',
      started_at: 150,
      reason: 'told',
      prompt: runRow('run_a').prompt,
    });
    // Inserted (and so known) in a transaction that rolled back: there is no row to answer.
    expect(() =>
      db.transaction(() => {
        writes.insertRunRow(runRow('run_r'));
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(writes.updateRunRow('run_r', { steps: 1 }, 300)).toBeUndefined();
    expect(writes.updateRunRowQueued('run_r', FINISH, 300)).toBeUndefined();
    // Deleted by the other connection, then by this one.
    other.prepare("DELETE FROM agent_runs WHERE id = 'run_q'").run();
    writes.deleteRuns(['run_a']);
    expect(writes.updateRunRowQueued('run_a', FINISH, 300)).toBeUndefined();
  });
});

describe('a run inserted inside a transaction: its first event held (SQLite)', () => {
  const INSERT = /^INSERT INTO agent_run_events /;
  const events = (db: Db, runId: string) =>
    db.prepare('SELECT id, seq, type FROM agent_run_events WHERE run_id = ? ORDER BY id').all(runId);

  const ledgerOf = () => openTestLedger(opened);

  it('COMPAT-PERF-484: a run created after another run’s append in one transaction writes its first event with its next ones: two INSERTs (three before), ids and seqs as stored', async () => {
    const { db, ledger } = ledgerOf();
    const first = await ledger.create({ ...RUN_INPUT });
    const counted = countStatements(db);
    const appended = await atomicallyAsync(
      () => db,
      async () => {
        const seen = [await ledger.append(first.id, 'before', {})];
        const run = await ledger.create({ ...RUN_INPUT });
        seen.push(await ledger.append(run.id, 'next', {}));
        return { run, seen };
      },
    );
    await new Promise((resolve) => setImmediate(resolve));
    vi.restoreAllMocks();
    const inserts = counted.texts.filter((t) => INSERT.test(t));
    // `before` alone (the transaction's first row), the new run's two events in one.
    expect(inserts).toHaveLength(2);
    expect(inserts[1]).toMatch(/VALUES \(\?, \?, \?, \?, \?, \?, \?\), \(\?, \?, \?, \?, \?, \?, \?\)$/);
    const rows = events(db, appended.run.id) as { id: number; seq: number; type: string }[];
    expect(rows.map((r) => r.seq)).toEqual([1, 2]);
    expect(rows[0]?.id).toBe((appended.seen[0]?.id ?? 0) + 1);
    expect(rows[1]).toEqual({ id: appended.seen[1]?.id, seq: 2, type: 'next' });
    const after = await ledger.append(appended.run.id, 'after', {});
    expect([after.id, after.seq]).toEqual([rows[1]!.id + 1, 3]);
  });

  it('COMPAT-PERF-485: a run created in a body that rolls back leaves no event; the next run created and a run created outside a transaction start at seq 1', async () => {
    const { db, ledger } = ledgerOf();
    const first = await ledger.create({ ...RUN_INPUT });
    let lost = '';
    await expect(
      atomicallyAsync(
        () => db,
        async () => {
          await ledger.append(first.id, 'kept?', {});
          const run = await ledger.create({ ...RUN_INPUT });
          lost = run.id;
          await ledger.append(run.id, 'next', {});
          throw new Error('rolled back');
        },
      ),
    ).rejects.toThrow('rolled back');
    expect(events(db, lost)).toEqual([]);
    expect(db.prepare('SELECT 1 FROM agent_runs WHERE id = ?').get(lost)).toBeUndefined();
    const again = await atomicallyAsync(
      () => db,
      async () => {
        await ledger.append(first.id, 'again', {});
        const run = await ledger.create({ ...RUN_INPUT });
        await ledger.append(run.id, 'next', {});
        return run;
      },
    );
    const outside = await ledger.create({ ...RUN_INPUT });
    await ledger.append(outside.id, 'next', {});
    for (const run of [again, outside]) {
      const rows = events(db, run.id) as { seq: number }[];
      expect(rows.map((r) => r.seq)).toEqual([1, 2]);
    }
    const all = db.prepare('SELECT id FROM agent_run_events ORDER BY id').all() as { id: number }[];
    expect(new Set(all.map((r) => r.id)).size).toBe(all.length);
  });
});
