/**
 * PostgreSQL migration 47 (issue 18 item 6, p-pgappend): `svc_append_events_across` called with
 * one session's events (every `EventBus.joinAll` call: a finish's, a step end's, a tool's) takes
 * that session's lock as one expression and runs one statement, without migration 46's lock loop
 * (its keys' query and a statement a key). Counted with pg_stat_statements (`track = all`,
 * `track_planning`) on a throwaway cluster that preloads it; the answers, rows and NOTIFYs against
 * the same call of migration 46's body; two connections appending to one session stay serialized
 * (the second waits on the first's lock and reads its events as the session's previous ones).
 */
import pgDriver from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { appendAcrossOnceDdl } from '../../src/store/postgres/migrations/append-across-once';
import { postgresMigrations } from '../../src/store/postgres/migrations/index';
import { migratedInPlace, noticesOn, postgresForFile } from '../helpers/postgres';
import { until } from '../helpers/until';

const pg = postgresForFile({ statements: true });

const CALL =
  'SELECT event_id, previous_id FROM svc_append_events_across($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6)';
const args = (session: string, types: string[], key: number, channel: string) => [
  types.map(() => session),
  types,
  types.map((t) => JSON.stringify({ t, text: 'quote " ü' })),
  types.map((_, i) => 1_700_000_000_000 + i),
  types.map(() => key),
  channel,
];

describe.skipIf(!pg.available)('session event appends of one session without the lock loop', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-710: one session’s call is one statement planned once, with migration 46’s rows, answers and NOTIFY', async () => {
    // Migration 47's body is the one in place: no later migration defines the function again.
    expect(postgresMigrations.at(-1)?.id).toBeGreaterThanOrEqual(47);
    expect(
      postgresMigrations
        .filter((m) => m.id > 47 && m.sql.includes('svc_append_events_across'))
        .map((m) => m.id),
    ).toEqual([]);
    const { url, client, close } = await migratedInPlace(pg.cluster());
    closers.push(close);
    // Migration 46's body beside it, under another name, for the same calls.
    await client.query(
      appendAcrossOnceDdl.replace('FUNCTION svc_append_events_across(', 'FUNCTION svc_across_46('),
    );
    const notices = await noticesOn(new pgDriver.Client({ connectionString: url }), 'svc_test_one', closers);
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await client.query("SET pg_stat_statements.track = 'all'");
    await client.query('SET pg_stat_statements.track_planning = on');

    // An event of s1 and one of s2 before (another session's ids between).
    const before = Number(
      (await client.query(CALL, args('s1', ['first'], 11, 'svc_test_one'))).rows[0].event_id,
    );
    await client.query(CALL, args('s2', ['other'], 12, 'svc_test_one'));
    await client.query('SELECT pg_stat_statements_reset()');
    const calls = 12;
    const answers: { event_id: string; previous_id: string }[][] = [];
    for (let n = 0; n < calls; n++)
      answers.push((await client.query(CALL, args('s1', ['a', 'b', 'c'], 11, 'svc_test_one'))).rows);

    const nested = await client.query<{ query: string; calls: string; plans: string }>(
      `SELECT query, calls, plans FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND NOT toplevel`,
    );
    const dump = JSON.stringify(nested.rows);
    // One statement a call (migration 46: the keys' query, the lock's, the statement: 3).
    expect(
      nested.rows.reduce((sum, r) => sum + Number(r.calls), 0),
      dump,
    ).toBe(calls);
    expect(
      nested.rows.filter((r) => /pg_advisory_xact_lock/.test(r.query)),
      dump,
    ).toEqual([]);
    expect(nested.rows, dump).toHaveLength(1);
    // On its generic plan: planned once, not once a call.
    expect(Number(nested.rows[0].plans), dump).toBeLessThanOrEqual(2);

    // Each call: three ids ascending, the session's highest before as their previous id.
    let previous = before;
    for (const rows of answers) {
      const ids = rows.map((r) => Number(r.event_id));
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(ids[0]).toBeGreaterThan(previous);
      expect(rows.map((r) => Number(r.previous_id))).toEqual([previous, previous, previous]);
      previous = ids[2];
    }
    const stored = await client.query<{ id: string; type: string; payload: string; created_at: string }>(
      "SELECT id, type, payload, created_at FROM session_events WHERE session_id = 's1' ORDER BY id",
    );
    expect(stored.rows.map((r) => Number(r.id))).toEqual([
      before,
      ...answers.flat().map((r) => Number(r.event_id)),
    ]);
    expect(
      stored.rows.slice(1, 4).map((r) => [r.type, JSON.parse(r.payload).t, Number(r.created_at)]),
    ).toEqual([
      ['a', 'a', 1_700_000_000_000],
      ['b', 'b', 1_700_000_000_001],
      ['c', 'c', 1_700_000_000_002],
    ]);

    // Migration 46's body given the same call: the same shape of answer and rows.
    const old = (
      await client.query(
        CALL.replace('svc_append_events_across', 'svc_across_46'),
        args('s1', ['a', 'b', 'c'], 11, 'svc_test_one'),
      )
    ).rows;
    expect(old.map((r) => Number(r.previous_id))).toEqual([previous, previous, previous]);
    const again = (await client.query(CALL, args('s1', ['a', 'b', 'c'], 11, 'svc_test_one'))).rows;
    const lastOld = Number(old[2].event_id);
    expect(again.map((r) => Number(r.previous_id))).toEqual([lastOld, lastOld, lastOld]);

    // One NOTIFY a call, the session and its last id.
    const expected = [
      `s1:${before}`,
      expect.stringMatching(/^s2:\d+$/),
      ...answers.map((rows) => `s1:${rows[2].event_id}`),
      `s1:${lastOld}`,
      `s1:${again[2].event_id}`,
    ];
    await until(() => notices.length >= expected.length);
    await new Promise((r) => setTimeout(r, 50));
    expect(notices).toEqual(expected);

    // Nothing to append: no row, no answer, no NOTIFY.
    expect((await client.query(CALL, [[], [], [], [], [], 'svc_test_one'])).rows).toEqual([]);
    await new Promise((r) => setTimeout(r, 50));
    expect(notices).toHaveLength(expected.length);
  });

  it('STORE-PG-711: two connections appending to one session stay serialized; another session does not wait', async () => {
    const { url, client, close } = await migratedInPlace(pg.cluster());
    closers.push(close);
    const other = new pgDriver.Client({ connectionString: url });
    await other.connect();
    closers.push(() => other.end());
    const third = new pgDriver.Client({ connectionString: url });
    await third.connect();
    closers.push(() => third.end());
    await client.query('BEGIN');
    const held = (await client.query(CALL, args('s1', ['a', 'b'], 21, 'svc_test_two'))).rows;
    // The second appender of s1 waits on the first's lock.
    const pid = Number((await other.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    const waiting = other.query(CALL, args('s1', ['c'], 21, 'svc_test_two'));
    await until(async () => {
      const { rows } = await client.query(
        "SELECT 1 FROM pg_locks WHERE pid = $1 AND locktype = 'advisory' AND NOT granted",
        [pid],
      );
      return rows.length === 1;
    });
    // Another session's appender does not.
    const t = (await third.query(CALL, args('t1', ['x'], 22, 'svc_test_two'))).rows;
    expect(t.map((r) => Number(r.previous_id))).toEqual([0]);
    await client.query('COMMIT');
    const after = (await waiting).rows;
    // It read the first's events, committed while it waited, as the session's previous ones.
    expect(after.map((r) => Number(r.previous_id))).toEqual([Number(held[1].event_id)]);
    expect(Number(after[0].event_id)).toBeGreaterThan(Number(t[0].event_id));
  });
});
