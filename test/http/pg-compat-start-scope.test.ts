/**
 * A lone compat start's run preparation outside the start's transaction on PostgreSQL (issue 18
 * item 6, p-pgscope): the run prepares during its start statement's round trip (p-pgoverlap,
 * src/agent/run-early.ts `launchEarly`). A read of the preparation that reaches the database (the
 * codebase summary, not kept while the App's LISTEN is not in place: the first requests after
 * start-up, or after a write to a kept table) is a statement of its own on another connection, not
 * BEGIN, the read and COMMIT after the lone statement on its connection (what STORE-PG-390 met in
 * stop 66's CI). The statement is slowed at the database (a trigger's `pg_sleep`) so the read
 * falls in the window whatever the load; the answer, the row and both logs are a lone request's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { tableChanges } from '../../src/store/postgres/table-changes';
import { reply } from '../helpers/fake-provider';
import { driverStatements, loggedEvents, migratedDatabase, postgresForFile } from '../helpers/postgres';
import {
  compatServer,
  LONE_REQUEST_LOG,
  PG_LONE_RUN_EVENTS,
  settledCompatRow,
  streamedAnswer,
} from './compat-helpers';

const pg = postgresForFile();
type Sql = Awaited<ReturnType<typeof migratedDatabase>>;
const SUMMARY_READ = /^SELECT summary, computed_at\b.* FROM codebase_context_cache /s;

/** A trigger on the run's INSERT that sleeps `seconds` (the start statement's window held open). */
async function slowStart(sql: Sql, seconds: number): Promise<() => Promise<void>> {
  await sql.query(
    `CREATE FUNCTION svc_test_slow_scope() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_sleep(${seconds}); RETURN NEW; END $$`,
  );
  await sql.query(
    'CREATE TRIGGER svc_test_slow_scope BEFORE INSERT ON agent_runs FOR EACH ROW EXECUTE FUNCTION svc_test_slow_scope()',
  );
  return async () => {
    await sql.query('DROP TRIGGER svc_test_slow_scope ON agent_runs');
    await sql.query('DROP FUNCTION svc_test_slow_scope()');
  };
}

describe.skipIf(!pg.available)(
  'a lone compat start’s run preparation outside its transaction on PostgreSQL',
  () => {
    const closers: (() => Promise<unknown>)[] = [];
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
    });

    it('STORE-PG-906: with nothing kept (the LISTEN not in place), the preparation’s read in the start’s round trip is its own statement on another connection: no BEGIN/COMMIT for the start; the answer, row and logs a lone request’s', async () => {
      const sql = await migratedDatabase(pg.cluster());
      closers.push(() => sql.close());
      const statements = driverStatements();
      closers.push(async () => statements.restore());
      const { app, client } = await compatServer([reply().text('warm'), reply().text('one')], {
        postgres: sql,
      });
      closers.push(() => app.close());
      await streamedAnswer(client);
      await settledCompatRow(app);
      await app.bus.flush();
      // As before the App's LISTEN is in place (or once it is lost): nothing read is kept, so the
      // preparation reads the codebase summary from the database.
      tableChanges(sql).lost();
      const slow = await slowStart(sql, 0.3);
      // The statements sent when the start's statement answered.
      let answeredAt = -1;
      const create = app.runs.createClaimed!.bind(app.runs);
      app.runs.createClaimed = async (...args) => {
        try {
          return await create(...args);
        } finally {
          answeredAt = statements.calls.length;
        }
      };
      const from = statements.calls.length;
      expect(await streamedAnswer(client)).toBe('one');
      await slow();
      const row = await settledCompatRow(app);
      await app.bus.flush();
      const calls = statements.calls.slice(from);
      const clients = statements.clients.slice(from);
      const start = calls.findIndex((call) => /INSERT INTO sessions /.test(call.text));
      const read = calls.findIndex((call) => SUMMARY_READ.test(call.text));
      expect(start).toBeGreaterThanOrEqual(0);
      // The read is the preparation's, sent while the start's statement was on its way …
      expect(read).toBeGreaterThan(start);
      expect(from + read).toBeLessThan(answeredAt);
      // … with no transaction of its own: the request's statements hold no BEGIN or COMMIT at all
      // (each with the statements around it, to name it), and on another connection than the start's.
      const controls = calls.flatMap((call, i) =>
        call.text === 'BEGIN' || call.text === 'COMMIT'
          ? [`${call.text} around ${calls.slice(Math.max(0, i - 2), i + 3).map((c) => c.text.slice(0, 60))}`]
          : [],
      );
      expect(controls).toEqual([]);
      expect(clients[read]).not.toBe(clients[start]);
      expect(row.status).toBe('completed');
      expect((await loggedEvents(sql, row.session_id)).map((e) => e.type)).toEqual(LONE_REQUEST_LOG);
      const events = await app.runs.events(row.run_id as string);
      // PostgreSQL's order: the request's event went in the start's statement (p-pgcompat).
      expect(events.map((e) => [e.seq, e.type])).toEqual(PG_LONE_RUN_EVENTS);
    });
  },
);
