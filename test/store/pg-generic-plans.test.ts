/**
 * PostgreSQL migration 44 (issue 18, item 6, p-pgwall): `svc_append_events_across` runs its
 * statements on generic plans, so a connection plans them once, not on every call (with
 * `plan_cache_mode = auto` its `prev` CTE and its `pg_notify` statement were planned on every call:
 * ≈ 0.3 ms of the server's time a call, one call a statement of an agent-loop step). Counted with
 * pg_stat_statements (`track = all`, `track_planning`) on a throwaway cluster that preloads it; the
 * function's answers are STORE-PG-100's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { migratedInPlace, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile({ statements: true });

describe.skipIf(!pg.available)('session event appends across sessions on generic plans', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-320: a connection plans svc_append_events_across statements once, not on every call', async () => {
    const { client, close } = await migratedInPlace(pg.cluster());
    closers.push(close);
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await client.query("SET pg_stat_statements.track = 'all'");
    await client.query('SET pg_stat_statements.track_planning = on');
    await client.query('SELECT pg_stat_statements_reset()');
    const calls = 12;
    for (let n = 0; n < calls; n++) {
      const { rows } = await client.query(
        'SELECT event_id, previous_id FROM svc_append_events_across($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6)',
        [['s1', 's2', 's1'], ['a', 'b', 'c'], ['{}', '{}', '{}'], [n, n, n], [11, 12], 'svc_test_plans'],
      );
      expect(rows).toHaveLength(3);
    }
    const { rows } = await client.query<{ query: string; calls: string; plans: string }>(
      `SELECT query, calls, plans FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND NOT toplevel AND (query LIKE 'WITH prev AS%' OR query LIKE 'SELECT pg_notify(p_channel%')`,
    );
    // One statement since migration 46 (p-pgserver): the NOTIFYs are in the `WITH prev` statement.
    expect(rows).toHaveLength(1);
    for (const row of rows) {
      expect(Number(row.calls), row.query).toBe(calls);
      // The first call's plan (a generic plan is made once); with `auto` it was one a call.
      expect(Number(row.plans), row.query).toBeLessThanOrEqual(2);
    }
  });
});
