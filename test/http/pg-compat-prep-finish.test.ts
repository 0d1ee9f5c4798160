/**
 * A lone compat request's preparation writes in its run's finish on PostgreSQL (issue 18 item 6,
 * p-pgprep3, src/agent/held-event.ts `holdPreparation`): `model.resolved`, the prompt stack row and
 * `prompt.assembled` were a statement of their own at the first step's start (with its `phase`),
 * awaited before the step's recorder took the model's first part; they are held with that `phase`
 * and ride in the statement that takes it, here the step end held for the run's finish. Two
 * statements a request (the start, the finish). The run's events are SQLite's (types, seqs,
 * payloads); the prompt stack row is stored once. A merged statement that fails: the parts apart
 * (the step end alone carries them as the merged one did); a statement carrying them that fails
 * in the step's own fallback sends the row alone (so a row that cannot be stored fails nothing
 * else) and the events ride again with the step's.
 */
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { reply } from '../helpers/fake-provider';
import { driverStatements, loggedEvents, migratedDatabase, postgresForFile } from '../helpers/postgres';
import {
  BACKGROUND_STATEMENT,
  comparableRunEvents,
  compatServer,
  LONE_REQUEST_LOG,
  PG_LONE_RUN_EVENT_TYPES,
  settledCompatRow,
  streamedAnswer,
} from './compat-helpers';

const pg = postgresForFile();
const WRITE = /^(WITH|INSERT|UPDATE|DELETE)\b/;
const BUS_APPEND = /^SELECT event_id, previous_id FROM svc_append_events_across\(/;
const FINISH = /UPDATE agent_runs SET status = /;
const PROMPT_ROW = /INSERT INTO prompt_stack_builds /;

/** The run's events without what differs per run (ids, times, the request's id, the build's id). */
async function runEvents(app: App, runId: string) {
  return (await comparableRunEvents(app, runId)).map(({ seq, type, payload }) => ({ seq, type, payload }));
}

/**
 * The run's events as compared with SQLite's: their order and payloads, but for the compat row's
 * `openai_compat.request`, which PostgreSQL writes in the start's statement, ahead of the held
 * preparation (p-pgprep, p-pgcompat2), where SQLite appends it after `model.resolved`; the seqs
 * consecutive on both.
 */
function comparable(events: Awaited<ReturnType<typeof runEvents>>) {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  return events
    .filter((e) => e.type !== 'openai_compat.request')
    .map(({ type, payload }) => ({ type, payload }));
}

/** A warm request, then one measured: its writes (the start's first), its run's events and prompt rows. */
async function lone(postgres?: Awaited<ReturnType<typeof migratedDatabase>>, before?: () => Promise<void>) {
  const { app, client } = await compatServer([reply().text('warm'), reply().text('one').usage(10, 2)], {
    ...(postgres ? { postgres } : {}),
  });
  await streamedAnswer(client);
  await settledCompatRow(app);
  await app.bus.flush();
  await before?.();
  const statements = driverStatements();
  let answer: string;
  try {
    answer = await streamedAnswer(client);
    await settledCompatRow(app);
    await app.bus.flush();
  } finally {
    statements.restore();
  }
  const texts = statements.sent;
  const start = texts.findIndex((text) => /INSERT INTO sessions /.test(text));
  const writes = texts
    .slice(Math.max(start, 0))
    .filter((text) => WRITE.test(text) && !BUS_APPEND.test(text) && !BACKGROUND_STATEMENT.test(text));
  const row = await settledCompatRow(app);
  return {
    app,
    answer,
    row,
    writes,
    events: await runEvents(app, row.run_id),
    builds: await app.observe.promptStack.recent({ sessionId: row.session_id }),
  };
}

describe.skipIf(!pg.available)('a lone compat request’s preparation in its finish on PostgreSQL', () => {
  it('STORE-PG-550: two writes a request, the finish carrying the prompt stack row, model.resolved, prompt.assembled and the step’s phase; the run’s events SQLite’s (types, seqs, payloads), one prompt stack row, the session log the lone sequence', async () => {
    const lite = await lone();
    const sql = await migratedDatabase(pg.cluster());
    try {
      const r = await lone(sql);
      try {
        expect(r.answer).toBe('one');
        expect(r.writes, r.writes.map((t) => t.slice(0, 80)).join('\n')).toHaveLength(2);
        const finish = r.writes[1] ?? '';
        expect(finish).toMatch(FINISH);
        expect(finish).toMatch(PROMPT_ROW);
        // Its run events' list: the finish's own INSERT after one seq read (p-lastseq).
        expect(finish).toContain('svc_run_last_seq(');
        expect(r.writes.filter((t) => PROMPT_ROW.test(t))).toHaveLength(1);
        expect(comparable(r.events)).toEqual(comparable(lite.events));
        expect(r.events.map((e) => e.type).slice(3, 9)).toEqual(PG_LONE_RUN_EVENT_TYPES.slice(3, 9));
        expect(r.builds).toHaveLength(1);
        expect(lite.builds).toHaveLength(1);
        const size = ({ section_count, total_chars, token_estimate, run_id }: (typeof r.builds)[number]) => ({
          section_count,
          total_chars,
          token_estimate,
          own: run_id !== null,
        });
        expect(size(r.builds[0]!)).toEqual(size(lite.builds[0]!));
        expect(r.builds[0]?.run_id).toBe(r.row.run_id);
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

  /**
   * A lone request with `refusal` (SQL run before it: a trigger that refuses a write) against
   * SQLite's: the answer, the row completed, the run's events SQLite's, the session log the lone
   * sequence; `check`, what the refusal's own path leaves.
   */
  async function refused(refusal: string[], check: (r: Awaited<ReturnType<typeof lone>>) => void) {
    const lite = await lone();
    const sql = await migratedDatabase(pg.cluster());
    try {
      const r = await lone(sql, async () => {
        for (const text of refusal) await sql.run(text);
      });
      try {
        expect(r.answer).toBe('one');
        expect(r.row).toMatchObject({ status: 'completed', prompt_tokens: 10, completion_tokens: 2 });
        expect(comparable(r.events)).toEqual(comparable(lite.events));
        const log = await loggedEvents(sql, r.row.session_id);
        expect(log.map((e) => e.type)).toEqual(LONE_REQUEST_LOG);
        check(r);
      } finally {
        await r.app.close();
      }
    } finally {
      await lite.app.close();
      await sql.close();
    }
  }

  it('STORE-PG-551: the finish carrying them refused once (the step’s message): the parts apart, the step end alone carrying them, then the finish; the events once each in SQLite’s order, one prompt stack row, the run completed', async () => {
    const refusal = [
      'CREATE SEQUENCE svc_test_once',
      `CREATE FUNCTION svc_test_refuse_finish() RETURNS trigger LANGUAGE plpgsql AS $fn$
         BEGIN
           IF NEW.role = 'assistant' AND NEW.finished_at IS NOT NULL AND nextval('svc_test_once') = 1 THEN
             RAISE EXCEPTION 'step end refused';
           END IF;
           RETURN NEW;
         END $fn$`,
      `CREATE TRIGGER svc_test_refuse_finish BEFORE INSERT ON messages FOR EACH ROW
         EXECUTE FUNCTION svc_test_refuse_finish()`,
    ];
    await refused(refusal, (r) => {
      const rows = r.writes.filter((t) => PROMPT_ROW.test(t));
      // The merged finish (refused), then the step end alone with them (as it was in the
      // merged one), then the finish alone.
      expect(rows, r.writes.map((t) => t.slice(0, 80)).join('\n')).toHaveLength(2);
      expect(rows[0]).toMatch(FINISH);
      expect(rows[1]).not.toMatch(FINISH);
      expect(rows[1]).toMatch(/INSERT INTO messages /);
      expect(r.writes.filter((t) => FINISH.test(t))).toHaveLength(2);
      expect(r.builds).toHaveLength(1);
      expect(r.builds[0]?.run_id).toBe(r.row.run_id);
    });
  });

  it('STORE-PG-552: the prompt stack row refused always: the merged finish and the step end alone fail, the row goes alone (refused, logged), the events ride with the step’s message; the request completes, the run’s events SQLite’s, no row stored', async () => {
    const refusal = [
      `CREATE FUNCTION svc_test_refuse_row() RETURNS trigger LANGUAGE plpgsql AS $fn$
         BEGIN RAISE EXCEPTION 'prompt stack refused'; END $fn$`,
      `CREATE TRIGGER svc_test_refuse_row BEFORE INSERT ON prompt_stack_builds FOR EACH ROW
         EXECUTE FUNCTION svc_test_refuse_row()`,
    ];
    await refused(refusal, (r) => expect(r.builds).toEqual([]));
  });
});
