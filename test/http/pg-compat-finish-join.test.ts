/**
 * A compat request's `run.finished` and idle state in its run's finish statement on PostgreSQL
 * (issue 18 item 6, p-finishjoin): the finish joins them as the bus's next write
 * (`EventBus.joinAll`'s `next`, `RunLedger.updateAndAppend`'s `announce`), so no bus append
 * follows the finish. Pins: a lone request's finish carries both and no append comes after it; the
 * session's log (types, payloads) is SQLite's, and another node replays the same; a failing finish
 * statement publishes them after the finish written alone, as before; ten requests at once keep
 * each session's order in the log and in what the node's listeners got.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { followOtherNodes } from '../../src/events/pg-notify';
import type { SqlClient } from '../../src/store/postgres/client';
import { migratePostgres } from '../../src/store/postgres/migrate';
import { reply } from '../helpers/fake-provider';
import { busNode, type Closers, openClient } from '../helpers/pg-bus-node';
import { driverStatements, loggedEvents, postgresForFile } from '../helpers/postgres';
import {
  compatServer,
  LONE_REQUEST_LOG,
  maskedEvents,
  settledCompatRow,
  streamedAnswer,
} from './compat-helpers';

const pg = postgresForFile();
const BUS_APPEND = /^SELECT event_id, previous_id FROM svc_append_events_across\(/;
const RUN_FINISH = /^WITH .*r AS \(UPDATE agent_runs .*(svc_append_run_event|svc_run_last_seq)/s;
const FINISH_EVENTS = ['run.finished', 'state.changed'];
/**
 * The finish's session events with the last step end's before them (p-pglast: one statement), and
 * its held text's (p-heldstep: the message inserted closed by that step end, its delta with it).
 */
const LAST_FINISH_EVENTS = [
  'message.created',
  'message.delta',
  'message.completed',
  'context.usage',
  ...FINISH_EVENTS,
];
type Call = { text: string; values?: unknown[] };
/**
 * A run's finish: its ledger event's type (`run.finished`) is one of the statement's own values.
 * The last step end's statement updates the run too and, on a quiet box, joins its session events
 * as well, so neither the statement's shape nor a joined append tells the two apart.
 */
const isFinish = (call: Call) => RUN_FINISH.test(call.text) && (call.values ?? []).includes('run.finished');
/** How many `run.finished` session events a statement carries (in its joined or appended types). */
const finishedCarried = (call: Call) =>
  (call.values ?? [])
    .filter(Array.isArray)
    .flat()
    .filter((type) => type === 'run.finished').length;

/** A migrated database of the file's cluster, and its url (another node opens it too). */
async function database(closers: Closers): Promise<{ url: string; sql: SqlClient }> {
  const url = await pg.cluster().createDatabase();
  const sql = await openClient(url, 10);
  closers.push(() => sql.close());
  await migratePostgres(sql);
  return { url, sql };
}

/** A warm request, then `n` at once: each one's session, and every session event its node delivered. */
async function requests(options: { postgres?: SqlClient; n?: number; before?: (app: App) => Promise<void> }) {
  const n = options.n ?? 1;
  const script = [reply().text('warm'), ...Array.from({ length: n }, () => reply().text('one').usage(10, 2))];
  const { app, client } = await compatServer(script, options.postgres ? { postgres: options.postgres } : {});
  await streamedAnswer(client);
  await settledCompatRow(app);
  await app.bus.flush();
  await options.before?.(app);
  const delivered = new Map<string, { id: number; type: string }[]>();
  const off = app.bus.subscribe('*', (event) => {
    const list = delivered.get(event.session_id) ?? [];
    list.push({ id: event.id, type: event.type });
    delivered.set(event.session_id, list);
  });
  const statements = driverStatements();
  const answers = await Promise.all(Array.from({ length: n }, () => streamedAnswer(client)));
  const rows = (await app.compatRequests.list({ limit: n })).rows;
  for (const row of rows) expect(row.status).not.toBe('running');
  await app.bus.flush();
  statements.restore();
  off();
  return { app, answers, sessions: rows.map((r) => r.session_id), delivered, calls: statements.calls };
}

describe.skipIf(!pg.available)(
  'a compat request’s run.finished and idle state in its finish statement',
  () => {
    const closers: Closers = [];
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
    });

    it('STORE-PG-472: a lone request: the finish statement carries run.finished and the idle state, no bus append after it; the session’s log is SQLite’s, the node delivered it in that order, another node replays the same', async () => {
      const sqlite = await requests({});
      closers.push(() => sqlite.app.close());
      const { url, sql } = await database(closers);
      const postgres = await requests({ postgres: sql });
      closers.push(() => postgres.app.close());
      expect(postgres.answers).toEqual(['one']);
      const [sessionId] = postgres.sessions;
      const { calls } = postgres;
      const finish = calls.findIndex(isFinish);
      expect(finish, calls.map((c) => c.text.slice(0, 60)).join('\n')).toBeGreaterThanOrEqual(0);
      expect(calls[finish].text).toContain('svc_append_events_across(');
      expect(calls[finish].values).toContainEqual(LAST_FINISH_EVENTS);
      // No append of the bus's own after the finish, and none carries the finish's events.
      expect(calls.slice(finish + 1).filter((call) => BUS_APPEND.test(call.text))).toEqual([]);
      const appended = calls
        .filter((call) => BUS_APPEND.test(call.text))
        .flatMap((call) => call.values?.[1] as string[]);
      expect(appended).not.toContain('run.finished');
      // The log: SQLite's sequence and payloads.
      const log = await loggedEvents(sql, sessionId);
      expect(log.map((e) => e.type)).toEqual(LONE_REQUEST_LOG);
      const pgReplay = (await postgres.app.bus.replay(sessionId, 0)).events;
      const sqliteReplay = (await sqlite.app.bus.replay(sqlite.sessions[0], 0)).events;
      expect(maskedEvents(pgReplay)).toEqual(maskedEvents(sqliteReplay));
      expect(pgReplay.map((e) => e.id)).toEqual(log.map((e) => Number(e.id)));
      // What this node's listeners got, in the log's order (the warm request's events aside).
      expect(postgres.delivered.get(sessionId)).toEqual(log.map((e) => ({ id: Number(e.id), type: e.type })));
      // Another node on the same log: the same sequence.
      const other = await busNode(pg.cluster(), closers, url);
      const following = followOtherNodes(other.bus, other.sql);
      closers.push(() => following.stop());
      await following.started;
      expect(maskedEvents((await other.bus.replay(sessionId, 0)).events)).toEqual(maskedEvents(pgReplay));
    });

    it('STORE-PG-473: the finish statement failing once: the run finished alone, run.finished and the idle state published after it by the bus as before, the log SQLite’s sequence', async () => {
      const { sql } = await database(closers);
      const postgres = await requests({
        postgres: sql,
        // The next completed run's UPDATE refused once (a sequence: not rolled back with it).
        before: async () => {
          await sql.run('CREATE SEQUENCE svc_test_once');
          await sql.run(`CREATE FUNCTION svc_test_refuse_once() RETURNS trigger LANGUAGE plpgsql AS $fn$
          BEGIN IF nextval('svc_test_once') = 1 THEN RAISE EXCEPTION 'finish refused once'; END IF; RETURN NEW; END $fn$`);
          await sql.run(`CREATE TRIGGER svc_test_refuse_once BEFORE UPDATE ON agent_runs
          FOR EACH ROW WHEN (NEW.status = 'completed') EXECUTE FUNCTION svc_test_refuse_once()`);
        },
      });
      closers.push(() => postgres.app.close());
      expect(postgres.answers).toEqual(['one']);
      const [sessionId] = postgres.sessions;
      const { calls } = postgres;
      const finishes = calls.flatMap((call, at) => (isFinish(call) ? [at] : []));
      // The joined finish with the last step end (refused), then the finish alone.
      expect(finishes).toHaveLength(2);
      expect(calls[finishes[0]].values).toContainEqual(LAST_FINISH_EVENTS);
      expect(calls[finishes[1]].text).not.toContain('svc_append_events_across(');
      const after = calls.slice(finishes[1] + 1).filter((call) => BUS_APPEND.test(call.text));
      expect(after.flatMap((call) => call.values?.[1] as string[])).toEqual(FINISH_EVENTS);
      const log = await loggedEvents(sql, sessionId);
      expect(log.map((e) => e.type)).toEqual(LONE_REQUEST_LOG);
      expect(postgres.delivered.get(sessionId)).toEqual(log.map((e) => ({ id: Number(e.id), type: e.type })));
      expect((await postgres.app.runs.get((await settledCompatRow(postgres.app)).run_id))?.status).toBe(
        'completed',
      );
    });

    it('STORE-PG-474: ten requests at once: each session’s log is the lone sequence, its events delivered in id order and the log’s order; the finishes that joined carry their events', async () => {
      const { sql } = await database(closers);
      const postgres = await requests({ postgres: sql, n: 10 });
      closers.push(() => postgres.app.close());
      expect(postgres.answers).toEqual(Array.from({ length: 10 }, () => 'one'));
      expect(new Set(postgres.sessions).size).toBe(10);
      for (const sessionId of postgres.sessions) {
        const log = await loggedEvents(sql, sessionId);
        expect(
          log.map((e) => e.type),
          sessionId,
        ).toEqual(LONE_REQUEST_LOG);
        expect(postgres.delivered.get(sessionId), sessionId).toEqual(
          log.map((e) => ({ id: Number(e.id), type: e.type })),
        );
      }
      // Each finish's events once: in its statement or in a bus append.
      const finishes = postgres.calls.filter(isFinish);
      expect(finishes).toHaveLength(10);
      const joined = finishes.reduce((n, call) => n + finishedCarried(call), 0);
      const appended = postgres.calls
        .filter((call) => BUS_APPEND.test(call.text))
        .reduce((n, call) => n + finishedCarried(call), 0);
      expect(joined + appended).toBe(10);
      // And in no other statement (a step end's join carries its own step's events only).
      const elsewhere = postgres.calls.filter((call) => !isFinish(call) && !BUS_APPEND.test(call.text));
      expect(elsewhere.reduce((n, call) => n + finishedCarried(call), 0)).toBe(0);
    });
  },
);
