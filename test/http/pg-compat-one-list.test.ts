/**
 * A lone compat request's finish on PostgreSQL appends all its run events in one list call (issue
 * 18 item 6, p-pglone, p-pgserver Left 1): the step end it carries held the run's preparation
 * events and the step's `phase` (p-pgprep3), appended by a list call of their own in the step end's
 * `WITH`s before the run's UPDATE, then the finish's own list (the step end's `step.finished`,
 * `run.finished`, the compat row's `openai_compat.response`) after it: two run row locks, two seq
 * reads, two INSERTs. Now the step end's `WITH` hands its events' arrays to the finish's list,
 * which appends them first. Pins: one list call and one INSERT into `agent_run_events` in the
 * finish (a statement-level trigger counts the INSERT statements of each transaction), the run's
 * events SQLite's (types, payloads, consecutive seqs, ids in seq order), each announced once in seq
 * order, and the session log the lone sequence.
 */
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../src/runs/types';
import { reply } from '../helpers/fake-provider';
import { driverStatements, loggedEvents, migratedDatabase, postgresForFile } from '../helpers/postgres';
import {
  comparableRunEvents,
  compatServer,
  LONE_REQUEST_LOG,
  PG_LONE_RUN_EVENT_TYPES,
  settledCompatRow,
  streamedAnswer,
} from './compat-helpers';

const pg = postgresForFile();
const FINISH = /UPDATE agent_runs SET status = /;

/** A warm request, then one measured: its finish's text, its run's events, the events announced. */
async function lone(postgres?: Awaited<ReturnType<typeof migratedDatabase>>) {
  const { app, client } = await compatServer([reply().text('warm'), reply().text('one').usage(10, 2)], {
    ...(postgres ? { postgres } : {}),
  });
  await streamedAnswer(client);
  await settledCompatRow(app);
  await app.bus.flush();
  // Each INSERT statement into the run events (a `WITH`'s or a function's), by its transaction.
  if (postgres)
    for (const text of [
      'CREATE TABLE svc_test_event_inserts (tx bigint NOT NULL, at bigserial)',
      `CREATE FUNCTION svc_test_count_insert() RETURNS trigger LANGUAGE plpgsql AS $fn$
         BEGIN INSERT INTO svc_test_event_inserts (tx) VALUES (txid_current()); RETURN NULL; END $fn$`,
      `CREATE TRIGGER svc_test_count_insert AFTER INSERT ON agent_run_events FOR EACH STATEMENT
         EXECUTE FUNCTION svc_test_count_insert()`,
    ])
      await postgres.run(text);
  const announced: RunEvent[] = [];
  const stop = app.runs.onAppend((event) => announced.push(event));
  const statements = driverStatements();
  let answer: string;
  try {
    answer = await streamedAnswer(client);
    await settledCompatRow(app);
    await app.bus.flush();
  } finally {
    statements.restore();
    stop();
  }
  const row = await settledCompatRow(app);
  const inserts = postgres
    ? (
        await postgres.query<{ tx: string; n: string }>(
          'SELECT tx, count(*) AS n FROM svc_test_event_inserts GROUP BY tx ORDER BY min(at)',
        )
      ).map((r) => Number(r.n))
    : [];
  return {
    app,
    answer,
    row,
    finish: statements.sent.filter((text) => FINISH.test(text)),
    inserts,
    events: await comparableRunEvents(app, row.run_id),
    announced: announced.filter((e) => e.run_id === row.run_id),
  };
}

describe.skipIf(!pg.available)('a lone compat request’s finish on PostgreSQL', () => {
  it('STORE-PG-650: one run-event list call and one INSERT in the finish (the step end’s held events handed to it); the run’s events SQLite’s, each announced once in seq order', async () => {
    const lite = await lone();
    const sql = await migratedDatabase(pg.cluster());
    try {
      const r = await lone(sql);
      try {
        expect(r.answer).toBe('one');
        expect(r.finish).toHaveLength(1);
        const finish = r.finish[0] ?? '';
        // One list call (on the base: the step end's `WITH`, then the finish's own).
        // Since p-lastseq no call: the finish's own INSERT after one seq read.
        expect(finish.match(/INSERT INTO agent_run_events/g)).toHaveLength(1);
        expect(finish.match(/svc_run_last_seq\(/g)).toHaveLength(1);
        expect(finish).not.toMatch(/svc_append_run_event(_list)?\(/);
        // The start's INSERTs (its `WITH`s: one query, its statement trigger fires once), the
        // finish's one (on the base two: each list call's INSERT is a query of its own).
        expect(r.inserts).toEqual([1, 1]);

        const types = r.events.map((e) => e.type);
        expect(types.slice(3)).toEqual(PG_LONE_RUN_EVENT_TYPES.slice(3));
        expect(r.events.map((e) => e.seq)).toEqual(r.events.map((_, i) => i + 1));
        // The finish's (from `model.resolved`): ids in seq order, as one list gives them.
        const ids = r.events.slice(4).map((e) => e.id);
        expect(ids).toEqual([...ids].sort((a, b) => a - b));
        // SQLite's, but for `openai_compat.request`, which PostgreSQL writes in the start (p-pgprep).
        const comparable = (events: typeof r.events) =>
          events
            .filter((e) => e.type !== 'openai_compat.request')
            .map(({ type, payload }) => ({ type, payload }));
        expect(comparable(r.events)).toEqual(comparable(lite.events));
        // The finish's events announced once each, in seq order (the handed ones first).
        const finished = r.announced.filter((e) => e.seq >= 5);
        expect(finished.map((e) => [e.seq, e.type])).toEqual(r.events.slice(4).map((e) => [e.seq, e.type]));
        expect(finished.map((e) => e.id)).toEqual(r.events.slice(4).map((e) => e.id));

        const log = await loggedEvents(sql, r.row.session_id);
        expect(log.map((e) => e.type)).toEqual(LONE_REQUEST_LOG);
        expect(r.row).toMatchObject({ status: 'completed', prompt_tokens: 10, completion_tokens: 2 });
      } finally {
        await r.app.close();
      }
    } finally {
      await lite.app.close();
      await sql.close();
    }
  });
});
