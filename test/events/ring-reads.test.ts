/**
 * The bus's rings on SQLite read a session's highest logged id only when something asks for it
 * (issue 17 item 3): publishing to a session this process just created reads nothing, and what the
 * ring answers (last id, replay and its source) is what the eager read gave, also when another
 * process (a second connection on the same file) appended to the session first.
 * @module
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEventBus } from '../../src/events/bus';
import { createEventStore } from '../../src/events/event-store';
import { openDb } from '../../src/store/db';
import { testClock } from '../helpers/make-test-app';
import { countStatements } from '../helpers/sqlite-ledger';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const MAX_ID = /^SELECT coalesce\(max\(id\), 0\) AS id FROM session_events WHERE session_id = \?/;

afterEach(() => {
  vi.restoreAllMocks();
});

function setup(options: { ringSize?: number; maxRings?: number } = {}) {
  const dataDir = tmpWorkspace();
  const db = openDb({ dataDir });
  const bus = createEventBus({
    db: () => db,
    clock: testClock(),
    ringSize: options.ringSize ?? 10,
    ...options,
  });
  return { dataDir, db, bus };
}

describe('event rings read the log lazily (SQLite)', () => {
  it('STORE-60 publishing to a new session reads no highest id; the answers stay those of the log', async () => {
    const { db, bus } = setup();
    bus.publish('warm', 'tick', {}); // statements prepared
    await bus.flush();
    const { texts } = countStatements(db);
    const first = await bus.publishStored('ses_new', 'session.created', { session_id: 'ses_new' });
    bus.publish('ses_new', 'run.started', {});
    await bus.flush();
    expect(texts.filter((t) => MAX_ID.test(t))).toEqual([]);
    vi.restoreAllMocks();
    const last = (await bus.retained('ses_new'))[1];
    expect(await bus.lastId('ses_new')).toBe(last.id);
    const replay = await bus.replay('ses_new', 0);
    expect(replay.source).toBe('ring'); // nothing of the session was logged before its first event
    expect(replay.events.map((e) => e.id)).toEqual([first.id, last.id]);
  });

  it('STORE-61 events another process appended before this ring began are replayed from the log', async () => {
    const { dataDir, bus } = setup();
    const other = createEventStore(openDb({ dataDir })); // a second svc on the same data dir
    const theirs = other.now.insert('ses_shared', 'note', '{"n":1}', 1);
    const mine = await bus.publishStored('ses_shared', 'note', { n: 2 });
    expect(mine.id).toBeGreaterThan(theirs);
    const fromStart = await bus.replay('ses_shared', 0);
    expect(fromStart.source).toBe('log');
    expect(fromStart.events.map((e) => e.payload.n)).toEqual([1, 2]);
    const fromTheirs = await bus.replay('ses_shared', theirs);
    expect(fromTheirs.source).toBe('ring');
    expect(fromTheirs.events.map((e) => e.payload.n)).toEqual([2]);
  });

  it('STORE-62 a ring that left memory unread comes back with the same answers', async () => {
    const { dataDir, bus } = setup({ maxRings: 1 });
    const other = createEventStore(openDb({ dataDir }));
    const theirs = other.now.insert('ses_a', 'note', '{"n":0}', 1);
    const a1 = await bus.publishStored('ses_a', 'note', { n: 1 });
    await bus.publishStored('ses_b', 'note', { n: 1 }); // ses_a's ring leaves memory (no listener)
    await bus.publishStored('ses_c', 'note', { n: 1 }); // and ses_b's
    const a2 = await bus.publishStored('ses_a', 'note', { n: 2 }); // ses_a's ring read back
    expect(await bus.lastId('ses_a')).toBe(a2.id);
    const fromStart = await bus.replay('ses_a', 0);
    expect(fromStart.source).toBe('log');
    expect(fromStart.events.map((e) => e.payload.n)).toEqual([0, 1, 2]);
    const fromTheirs = await bus.replay('ses_a', theirs);
    expect(fromTheirs.source).toBe('ring');
    expect(fromTheirs.events.map((e) => e.id)).toEqual([a1.id, a2.id]);
    const b = await bus.replay('ses_b', 0);
    expect(b).toMatchObject({ source: 'ring' });
    expect(b.events.map((e) => e.payload.n)).toEqual([1]);
  });
});

describe('event rings kept in memory (p-bus)', () => {
  it('ENGINE-BUS-5 a session published to again and again stays the most recently used: the least recently used ring leaves', async () => {
    const { db, bus } = setup({ maxRings: 2 });
    for (const [session, n] of [
      ['a', 1],
      ['b', 1],
      ['a', 2],
      ['a', 3],
      ['c', 1],
    ] as const)
      bus.publish(session, 'tick', { n });
    await bus.flush();
    const { texts } = countStatements(db);
    const reads = () => texts.filter((t) => t.startsWith('SELECT id, session_id, type, payload')).length;
    expect((await bus.replay('a', 0)).events.map((e) => e.payload.n)).toEqual([1, 2, 3]);
    expect(reads()).toBe(0); // in memory
    expect((await bus.replay('b', 0)).events.map((e) => e.payload.n)).toEqual([1]);
    expect(reads()).toBe(1); // it had left memory: read back from the log
  });
});
