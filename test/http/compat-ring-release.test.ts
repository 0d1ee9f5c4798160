/**
 * A compat request's own session leaves the bus's rings when the request ends (issue 17 item 4,
 * p-pin): nobody listened to it but the request, so its events need not stay in memory (and be
 * promoted with the ring) until 128 newer sessions push them out. The ring is read back from the
 * log, as it was, when the session is used again: a replay from the start or after a
 * `Last-Event-ID` answers the same events. A session with a listener of its own, or one a request
 * is bound to, keeps its ring. Counted through the SQLite handle: a replay that reads the log is
 * one `SELECT … FROM session_events WHERE session_id = ? AND id > ?`.
 * @module
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createEventBus } from '../../src/events/bus';
import { openDb } from '../../src/store/db';
import { reply } from '../helpers/fake-provider';
import { testClock } from '../helpers/make-test-app';
import { countStatements } from '../helpers/sqlite-ledger';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { compatServer, sseData } from './compat-helpers';

afterEach(() => {
  vi.restoreAllMocks();
});

const LOG_READ =
  /^SELECT id, session_id, type, payload, created_at FROM session_events WHERE session_id = \? AND id > \?/;
const body = (content: string) => ({ model: 'fake/m1', messages: [{ role: 'user', content }], stream: true });

describe('a finished compat session leaves the rings (p-pin)', () => {
  it('COMPAT-PERF-475: a streamed compat request reads no event back while it runs; afterwards its ring is out of memory and a replay reads it back, the same events', async () => {
    const { app, post } = await compatServer([reply().text('one'), reply().text('two')]);
    expect((await post('/v1/chat/completions', body('warm'))).status).toBe(200);
    const seen: string[] = [];
    app.bus.subscribe('*', (event) => {
      seen.push(`${event.session_id} ${event.id} ${event.type}`);
    });
    const counted = countStatements(app.db);
    const response = await post('/v1/chat/completions', body('count'));
    const sessionId = response.headers.get('x-svc-session-id') as string;
    expect(sessionId).toBeTruthy();
    expect((await sseData(response)).at(-1)).toBe('[DONE]');
    await app.bus.flush();
    await new Promise((resolve) => setImmediate(resolve));
    const reads = () => counted.texts.filter((t) => LOG_READ.test(t)).length;
    // The request's own events came from its ring, never from the log.
    expect(reads()).toBe(0);
    const published = seen.filter((s) => s.startsWith(`${sessionId} `)).map((s) => Number(s.split(' ')[1]));
    expect(published.length).toBeGreaterThan(2);
    // Its ring left memory when the request ended: the replay reads the log, once.
    const replay = await app.bus.replay(sessionId, 0);
    expect(reads()).toBe(1);
    expect(replay.events.map((e) => e.id)).toEqual(published);
    // Read back, it is in memory again; a `Last-Event-ID` replay answers what follows the id.
    const after = await app.bus.replay(sessionId, published[1]);
    expect(after.events.map((e) => e.id)).toEqual(published.slice(2));
    expect(reads()).toBe(1);
  });

  it('COMPAT-PERF-476: a compat session someone else listens to keeps its ring, and a bound session keeps its own', async () => {
    const { app, post } = await compatServer([reply().text('one'), reply().text('two')]);
    const first = await post('/v1/chat/completions', body('first'));
    const sessionId = first.headers.get('x-svc-session-id') as string;
    await sseData(first);
    await app.bus.replay(sessionId, 0); // read back: in memory again
    const got: number[] = [];
    const off = app.bus.subscribe(sessionId, (event) => {
      got.push(event.id);
    });
    const counted = countStatements(app.db);
    // Bound to the session (a listener of its own too): the ring stays through the request's end.
    const second = await post('/v1/chat/completions', body('second'), { 'x-svc-session-id': sessionId });
    expect((await sseData(second)).at(-1)).toBe('[DONE]');
    await app.bus.flush();
    const replay = await app.bus.replay(sessionId, 0);
    expect(counted.texts.filter((t) => LOG_READ.test(t))).toEqual([]);
    expect(replay.source).toBe('ring');
    expect(replay.events.slice(-got.length).map((e) => e.id)).toEqual(got);
    off();
  });

  it('COMPAT-PERF-477: the bus releases a session without listeners only: a listened one and a bus without a log keep their rings', async () => {
    const dataDir = tmpWorkspace();
    const db = openDb({ dataDir });
    const bus = createEventBus({ db: () => db, clock: testClock(), ringSize: 10 });
    const a1 = await bus.publishStored('ses_a', 'note', { n: 1 });
    const a2 = await bus.publishStored('ses_a', 'note', { n: 2 });
    await bus.publishStored('ses_b', 'note', { n: 1 });
    const off = bus.subscribe('ses_b', () => {});
    const { texts } = countStatements(db);
    const reads = () => texts.filter((t) => LOG_READ.test(t)).length;
    bus.release?.('ses_a');
    bus.release?.('ses_b'); // listened: kept
    expect((await bus.replay('ses_b', 0)).events.map((e) => e.payload.n)).toEqual([1]);
    expect(reads()).toBe(0);
    const replayA = await bus.replay('ses_a', 0);
    expect(reads()).toBe(1); // ses_a had left memory
    expect(replayA.events.map((e) => e.id)).toEqual([a1.id, a2.id]);
    expect((await bus.replay('ses_a', a1.id)).events.map((e) => e.id)).toEqual([a2.id]);
    const a3 = await bus.publishStored('ses_a', 'note', { n: 3 });
    expect(await bus.lastId('ses_a')).toBe(a3.id);
    off();
    // In memory only (no log): the ring is the only copy, it stays.
    const memory = createEventBus({ clock: testClock(), ringSize: 10 });
    const m1 = await memory.publishStored('ses_m', 'note', { n: 1 });
    memory.release?.('ses_m');
    expect((await memory.replay('ses_m', 0)).events.map((e) => e.id)).toEqual([m1.id]);
  });
});
