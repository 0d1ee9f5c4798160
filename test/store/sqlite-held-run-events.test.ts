/**
 * A SQLite transaction's run events written by one multi-row INSERT (issue 17 item 3, p-runev;
 * src/store/held-rows.ts, src/runs/run-events.ts): a run's first event of a transaction inserted at
 * once (its seq read from the table or the caller's, a conflict handled at the INSERT), its next
 * ones answered their ids and seqs and held until the next transaction statement, a read of the
 * table, or a delete whose cascade reaches them. Pinned: the statements (one INSERT where there
 * were one an event), the ids and seqs (as each INSERT gave them), the reads inside the
 * transaction (they see every event), and what a rolled-back body or a delete leaves.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createProcessRepository } from '../../src/runs/process-repository';
import { createSessionStore } from '../../src/sessions/session-store';
import { atomically, atomicallyAsync, type Db, stepBatch } from '../../src/store/db';
import { createIds, systemClock } from '../../src/util/ids';
import { reply } from '../helpers/fake-provider';
import { countStatements, openTestLedger, RUN_INPUT } from '../helpers/sqlite-ledger';
import { compatServer, settledNewestRun, sseData, streamedBody } from '../http/compat-helpers';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

const INSERT = /^INSERT INTO agent_run_events /;
const stored = (db: Db, runId: string) =>
  db
    .prepare('SELECT id, seq, type, payload FROM agent_run_events WHERE run_id = ? ORDER BY id')
    .all(runId) as { id: number; seq: number; type: string; payload: string }[];

describe('run events held for one INSERT a transaction (SQLite)', () => {
  it('COMPAT-PERF-478: five appends to a run in one transaction are two INSERTs, with the ids and seqs each INSERT gave', async () => {
    const { db, ledger } = openTestLedger(opened);
    const run = await ledger.create({ ...RUN_INPUT });
    const first = await ledger.append(run.id, 'before', {});
    const counted = countStatements(db);
    const appended = await atomicallyAsync(
      () => db,
      async () => {
        const events = [];
        for (let n = 1; n <= 5; n++) events.push(await ledger.append(run.id, `e${n}`, { n }));
        return events.map((event) => [event.id, event.seq]);
      },
    );
    await new Promise((resolve) => setImmediate(resolve));
    const inserts = counted.texts.filter((t) => INSERT.test(t));
    expect(inserts).toHaveLength(2);
    expect(inserts[1]).toBe(
      `INSERT INTO agent_run_events (id, run_id, session_id, seq, type, payload, created_at) VALUES ${Array(4).fill('(?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
    );
    expect(appended).toEqual([1, 2, 3, 4, 5].map((n) => [first.id + n, first.seq + n]));
    const rows = stored(db, run.id);
    expect(rows.slice(-6)).toEqual([
      { id: first.id, seq: first.seq, type: 'before', payload: '{}' },
      ...[1, 2, 3, 4, 5].map((n) => ({
        id: first.id + n,
        seq: first.seq + n,
        type: `e${n}`,
        payload: `{"n":${n}}`,
      })),
    ]);
    // The AUTOINCREMENT counter moved as with five INSERTs: the next id and seq follow.
    const after = await ledger.append(run.id, 'after', {});
    expect([after.id, after.seq]).toEqual([first.id + 6, first.seq + 6]);
  });

  it('COMPAT-PERF-479: reads of the run events inside the transaction see the held ones; a second run’s first append reads past them', async () => {
    const { db, ledger } = openTestLedger(opened);
    const run = await ledger.create({ ...RUN_INPUT });
    const other = await ledger.create({ ...RUN_INPUT });
    const processes = createProcessRepository(() => db);
    const counted = countStatements(db);
    const seen = await atomicallyAsync(
      () => db,
      async () => {
        await ledger.append(run.id, 'tool.finished', { tool: 'read', is_error: false });
        await ledger.append(run.id, 'tool.finished', { tool: 'read', is_error: false });
        const events = (await ledger.events(run.id)).map((event) => event.type);
        await ledger.append(run.id, 'process_started', { pid: 7 });
        const pending = (await processes.pending(0)).map((p) => p.payload.pid);
        await ledger.append(run.id, 'tool.finished', { tool: 'write', is_error: false });
        const count = await ledger.eventCount(run.id);
        await ledger.append(run.id, 'tool.finished', { tool: 'write', is_error: true });
        const tools = (await ledger.queries.usageStats({ since: 0 })).tools;
        await ledger.append(other.id, 'late', {});
        await ledger.append(run.id, 'last', {});
        const found = (await ledger.queries.findEvents({ runId: run.id, types: ['last'] })).map(
          (event) => event.seq,
        );
        await ledger.append(run.id, 'recent', {});
        const recent = (await ledger.recentEvents({ limit: 1 }))[0]?.type;
        for (const n of [1, 2, 3]) await ledger.append(run.id, 'unread', { n });
        return { events, pending, count, tools, found, recent };
      },
    );
    expect(seen).toEqual({
      events: ['run.queued', 'tool.finished', 'tool.finished'],
      pending: [7],
      count: 5,
      tools: [
        { tool: 'read', calls: 2, errors: 0 },
        { tool: 'write', calls: 2, errors: 1 },
      ],
      found: [7],
      recent: 'recent',
    });
    const rows = stored(db, run.id);
    expect(rows.map((row) => row.seq)).toEqual(rows.map((_, i) => i + 1));
    expect(rows.map((row) => row.id)).toEqual([...rows.map((row) => row.id)].sort((a, b) => a - b));
    expect(stored(db, other.id).map((row) => [row.seq, row.type])).toEqual([
      [1, 'run.queued'],
      [2, 'late'],
    ]);
    expect(rows.slice(-3).map((row) => row.type)).toEqual(['unread', 'unread', 'unread']);
    // Eleven appends: each held one written by the read after it (one INSERT a row, as before),
    // the three no read follows by one INSERT before the COMMIT. Before: eleven INSERTs.
    const inserts = counted.texts.filter((t) => INSERT.test(t));
    expect(inserts).toHaveLength(9);
    expect(inserts.at(-1)).toBe(
      `INSERT INTO agent_run_events (id, run_id, session_id, seq, type, payload, created_at) VALUES ${Array(3).fill('(?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
    );
  });

  it('COMPAT-PERF-480: a body that throws leaves the run events as before; a delete (a run’s, a session’s) inside the transaction takes the held ones', async () => {
    const { db, ledger } = openTestLedger(opened);
    const run = await ledger.create({ ...RUN_INPUT });
    const gone = await ledger.create({ ...RUN_INPUT });
    db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)').run('ses_2');
    const sessions = createSessionStore({
      db: () => db,
      clock: systemClock,
      ids: createIds(),
      workspace: '/w',
    });
    const inSession = await ledger.create({ ...RUN_INPUT, session_id: 'ses_2', family_session_id: 'ses_2' });
    stepBatch(() => db); // a batch open until the check phase: the bodies below are savepoints of it
    expect(db.inTransaction).toBe(true);
    await ledger.append(run.id, 'kept', {});
    await ledger.append(run.id, 'kept', {});
    await expect(
      atomicallyAsync(
        () => db,
        async () => {
          await ledger.append(run.id, 'gone', {});
          // A read inside the savepoint writes the held rows there: rolled back with it, held again.
          expect(await ledger.eventCount(run.id)).toBe(stored(db, run.id).length);
          await ledger.append(run.id, 'gone', {});
          throw new Error('body failed');
        },
      ),
    ).rejects.toThrow('body failed');
    const next = await ledger.append(run.id, 'next', {});
    expect(() =>
      atomically(
        () => db,
        () => {
          void ledger.append(run.id, 'gone', {});
          throw new Error('nested failed');
        },
      ),
    ).toThrow('nested failed');
    await ledger.append(run.id, 'last', {});
    // Events of a run held, then the run deleted in the same transaction: the cascade takes them.
    await ledger.append(gone.id, 'doomed', {});
    await ledger.append(gone.id, 'doomed', {});
    await ledger.delete(gone.id);
    // The same through a session's delete (its runs and their events by cascade).
    await ledger.append(inSession.id, 'doomed', {});
    await ledger.append(inSession.id, 'doomed', {});
    await sessions.delete('ses_2');
    await new Promise((resolve) => setImmediate(resolve));
    expect(db.inTransaction).toBe(false);
    const rows = stored(db, run.id);
    expect(rows.map((row) => row.type).slice(-4)).toEqual(['kept', 'kept', 'next', 'last']);
    expect(rows.map((row) => row.seq)).toEqual(rows.map((_, i) => i + 1));
    expect(next.seq).toBe(rows.length - 1);
    expect(stored(db, gone.id)).toEqual([]);
    expect(stored(db, inSession.id)).toEqual([]);
  });

  it('COMPAT-PERF-481: a lone compat request writes its run events in at most four INSERTs (ten before), ids and seqs as appended', async () => {
    const { app, post } = await compatServer([reply().text('one'), reply().text('two')]);
    const body = streamedBody;
    const settled = () => settledNewestRun(app);
    expect((await post('/v1/chat/completions', body('warm'))).status).toBe(200);
    await settled();
    const appended: { id: number; seq: number; type: string }[] = [];
    const unsubscribe = app.runs.onAppend((event) =>
      appended.push({ id: event.id, seq: event.seq, type: event.type }),
    );
    const counted = countStatements(app.db);
    const response = await post('/v1/chat/completions', body('count'));
    expect(response.status).toBe(200);
    expect((await sseData(response)).at(-1)).toBe('[DONE]');
    const runId = await settled();
    unsubscribe();
    vi.restoreAllMocks();
    // Before: one INSERT an event. Now the first event of each of its two transactions (start,
    // finish) alone, then one before each COMMIT; savepoints write nothing.
    expect(appended.length).toBeGreaterThanOrEqual(8);
    expect(counted.texts.filter((t) => INSERT.test(t)).length).toBeLessThanOrEqual(4);
    const logged = app.db
      .prepare('SELECT id, seq, type FROM agent_run_events WHERE run_id = ? ORDER BY id')
      .all(runId);
    expect(logged).toEqual(appended);
  });
});
