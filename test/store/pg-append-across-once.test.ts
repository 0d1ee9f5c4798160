/**
 * PostgreSQL migration 46 (issue 18 item 6, p-pgserver): `svc_append_events_across` inserts,
 * answers and notifies in one statement after its locks (its `NOTIFY`s were a statement of their
 * own, reading each session's highest id again). Counted with pg_stat_statements (`track = all`)
 * on a throwaway cluster that preloads it: a call runs its lock loop and that one statement; the
 * answers and notifications are STORE-PG-100's (test/store/pg-append-across.test.ts), checked here
 * for a call of two sessions too.
 */
import pgDriver from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { migratedInPlace, noticesOn, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile({ statements: true });

describe.skipIf(!pg.available)(
  'session event appends across sessions in one statement after the locks',
  () => {
    const closers: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
    });

    it('STORE-PG-633: a call is its locks and one statement: the events, each session’s previous id and one NOTIFY a session with its last id', async () => {
      const { url, sql, client, close } = await migratedInPlace(pg.cluster());
      closers.push(close);
      const notices = await noticesOn(
        new pgDriver.Client({ connectionString: url }),
        'svc_test_once',
        closers,
      );
      await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await client.query("SET pg_stat_statements.track = 'all'");
      const call = (sessions: string[], keys: number[]) =>
        client.query<{ event_id: string; previous_id: string }>(
          'SELECT event_id, previous_id FROM svc_append_events_across($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6)',
          [
            sessions,
            sessions.map((_, i) => `t${i}`),
            sessions.map(() => '{}'),
            sessions.map(() => 1),
            keys,
            'svc_test_once',
          ],
        );
      const before = (await call(['s1'], [11])).rows.map((r) => Number(r.event_id));
      await client.query('SELECT pg_stat_statements_reset()');

      const { rows } = await call(['s1', 's2', 's1', 's1'], [11, 12]);
      const ids = rows.map((r) => Number(r.event_id));
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(rows.map((r) => Number(r.previous_id))).toEqual([before[0], 0, before[0], before[0]]);
      const stored = await sql.query<{ id: string; session_id: string; type: string }>(
        'SELECT id, session_id, type FROM session_events ORDER BY id',
      );
      expect(stored.map((r) => [Number(r.id), r.session_id, r.type])).toEqual([
        [before[0], 's1', 't0'],
        [ids[0], 's1', 't0'],
        [ids[1], 's2', 't1'],
        [ids[2], 's1', 't2'],
        [ids[3], 's1', 't3'],
      ]);

      const nested = await client.query<{ query: string; calls: string }>(
        `SELECT query, calls FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND NOT toplevel`,
      );
      const calls = (pattern: RegExp) =>
        nested.rows.filter((r) => pattern.test(r.query)).reduce((n, r) => n + Number(r.calls), 0);
      // The lock loop (its keys' query, a lock a key), then one statement (on the base: two).
      expect(calls(/pg_advisory_xact_lock/)).toBe(2);
      expect(calls(/^WITH prev AS/)).toBe(1);
      expect(calls(/^SELECT pg_notify/), JSON.stringify(nested.rows)).toBe(0);
      expect(
        nested.rows.reduce((n, r) => n + Number(r.calls), 0),
        JSON.stringify(nested.rows),
      ).toBe(4);

      // One NOTIFY a session, its last id in the call (delivered at the call's commit).
      const expected = [`s1:${before[0]}`, `s1:${ids[3]}`, `s2:${ids[1]}`];
      for (let i = 0; i < 50 && notices.length < expected.length; i++)
        await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 50));
      expect([...notices].sort()).toEqual([...expected].sort());
    });
  },
);
