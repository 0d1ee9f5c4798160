/**
 * A SQLite transaction's session events written by one multi-row INSERT (issue 17 item 3, p-sqlev;
 * src/store/held-rows.ts): the transaction's first event inserted at once, the next ones answered
 * their ids and held until the next transaction statement or a read of the log. Pinned: the
 * statements (one INSERT where there were one an event), the ids (as each INSERT gave them), the
 * reads inside the transaction (they see every event), and what a rolled-back body leaves (as
 * before: its events gone, the ones before it kept, the next id the one SQLite gives).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEventStore } from '../../src/events/event-store';
import { createEventLogQueries } from '../../src/events/log-queries';
import { atomically, atomicallyAsync, type Db, stepBatch } from '../../src/store/db';
import { MAX_ROWS } from '../../src/store/held-rows';
import { reply } from '../helpers/fake-provider';
import { countStatements, openTestDb } from '../helpers/sqlite-ledger';
import { compatServer, settledNewestRun, sseData, streamedBody } from '../http/compat-helpers';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

const INSERT = /^INSERT INTO session_events /;
const stored = (db: Db) =>
  db.prepare('SELECT id, session_id, type, payload, created_at FROM session_events ORDER BY id').all() as {
    id: number;
    type: string;
  }[];

describe('session events held for one INSERT a transaction', () => {
  it('COMPAT-PERF-465: five events of one transaction are two INSERTs, with the ids each INSERT gave', async () => {
    const { db } = openTestDb(opened);
    const log = createEventStore(db);
    log.now.insert('s1', 'before', '{}', 1);
    const counted = countStatements(db);
    const ids = atomically(
      () => db,
      () => [1, 2, 3, 4, 5].map((n) => log.now.insert(n % 2 ? 's1' : 's2', `e${n}`, `{"n":${n}}`, 10 + n)),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(counted.texts.filter((t) => INSERT.test(t))).toEqual([
      'INSERT INTO session_events (session_id, type, payload, created_at) VALUES (?, ?, ?, ?)',
      'INSERT INTO session_events (id, session_id, type, payload, created_at) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?), (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)',
    ]);
    expect(ids).toEqual([2, 3, 4, 5, 6]);
    expect(stored(db)).toEqual([
      { id: 1, session_id: 's1', type: 'before', payload: '{}', created_at: 1 },
      ...[1, 2, 3, 4, 5].map((n) => ({
        id: n + 1,
        session_id: n % 2 ? 's1' : 's2',
        type: `e${n}`,
        payload: `{"n":${n}}`,
        created_at: 10 + n,
      })),
    ]);
    // The AUTOINCREMENT counter moved as with five INSERTs: the next id follows.
    expect(log.now.insert('s1', 'after', '{}', 20)).toBe(7);
  });

  it('COMPAT-PERF-466: reads inside the transaction see the held events; more than MAX_ROWS are written in chunks', async () => {
    const { db } = openTestDb(opened);
    const log = createEventStore(db);
    const queries = createEventLogQueries(() => db);
    const counted = countStatements(db);
    const seen = await atomicallyAsync(
      () => db,
      async () => {
        for (let n = 0; n < 3; n++) log.now.insert('s1', 'tick', '{}', n);
        const max = log.now.maxId('s1');
        const before = log.now.maxIdBefore('s1', 3);
        log.now.insert('s1', 'tock', '{}', 3);
        const after = log.now.after('s1', 2).map((e) => e.id);
        log.now.insert('s1', 'late', '{}', 4);
        const found = (await queries.find({ sessionId: 's1', types: ['late'] })).map((e) => e.id);
        for (let n = 0; n < MAX_ROWS + 2; n++) log.now.insert('s2', 'many', '{}', n);
        const counts = await queries.count({ sessionId: 's2', type: 'many' });
        return { max, before, after, found, counts };
      },
    );
    expect(seen).toEqual({ max: 3, before: 2, after: [3, 4], found: [5], counts: MAX_ROWS + 2 });
    expect(stored(db).map((row) => row.id)).toEqual(Array.from({ length: MAX_ROWS + 7 }, (_, i) => i + 1));
    // 3 + 1 + 1 + 66 events: 2 (first + a held one) + 1 + 1 + 2 (a full chunk, then two).
    expect(counted.texts.filter((t) => INSERT.test(t)).length).toBe(6);
  });

  it('COMPAT-PERF-467: a body that throws inside a batch leaves the log as before: its events gone, the ones before kept, the next id SQLite’s', async () => {
    const { db } = openTestDb(opened);
    const log = createEventStore(db);
    stepBatch(() => db); // a batch open until the check phase: the body below is a savepoint of it
    expect(db.inTransaction).toBe(true);
    log.now.insert('s1', 'kept', '{}', 1);
    log.now.insert('s1', 'kept', '{}', 2);
    await expect(
      atomicallyAsync(
        () => db,
        async () => {
          log.now.insert('s1', 'gone', '{}', 3);
          // A read inside the savepoint writes the held rows there, the batch's second one too:
          // rolled back with it by SQLite, it must be held again.
          expect(log.now.maxId('s1')).toBe(3);
          log.now.insert('s1', 'gone', '{}', 4);
          throw new Error('body failed');
        },
      ),
    ).rejects.toThrow('body failed');
    const next = log.now.insert('s1', 'next', '{}', 5);
    // A nested synchronous transaction that throws: its events gone too.
    expect(() =>
      atomically(
        () => db,
        () => {
          log.now.insert('s1', 'gone', '{}', 6);
          throw new Error('nested failed');
        },
      ),
    ).toThrow('nested failed');
    log.now.insert('s1', 'last', '{}', 7);
    await new Promise((resolve) => setImmediate(resolve));
    expect(db.inTransaction).toBe(false);
    expect(stored(db).map((row) => [row.id, row.type])).toEqual([
      [1, 'kept'],
      [2, 'kept'],
      [next, 'next'],
      [next + 1, 'last'],
    ]);
    // SQLite's own answer after a ROLLBACK TO: the counter rolled back with the rows.
    expect(next).toBe(3);
  });

  it('COMPAT-PERF-468: a lone compat request writes its session events in at most four INSERTs (fourteen before), ids and order as delivered', async () => {
    const { app, post } = await compatServer([reply().text('one'), reply().text('two')]);
    const body = streamedBody;
    const settled = () => settledNewestRun(app);
    expect((await post('/v1/chat/completions', body('warm'))).status).toBe(200);
    await settled();
    const delivered: { id: number; session_id: string; type: string }[] = [];
    const unsubscribe = app.bus.subscribe('*', (event) =>
      delivered.push({ id: event.id, session_id: event.session_id, type: event.type }),
    );
    const counted = countStatements(app.db);
    const response = await post('/v1/chat/completions', body('count'));
    expect(response.status).toBe(200);
    expect((await sseData(response)).at(-1)).toBe('[DONE]');
    await settled();
    unsubscribe();
    vi.restoreAllMocks();
    const sessionId = response.headers.get('x-svc-session-id') as string;
    const mine = delivered.filter((event) => event.session_id === sessionId);
    // Before: one INSERT an event. Now the first event of each of its two transactions (start,
    // finish) alone, then one before each COMMIT; savepoints write nothing.
    expect(mine.length).toBeGreaterThanOrEqual(12);
    expect(counted.texts.filter((t) => INSERT.test(t)).length).toBeLessThanOrEqual(4);
    // What the log holds is what was delivered: the same ids, types and order.
    const logged = app.db
      .prepare('SELECT id, session_id, type FROM session_events WHERE session_id = ? ORDER BY id')
      .all(sessionId);
    expect(logged).toEqual(mine);
  });
});
