/**
 * A compat request's last step end in its run's finish statement on PostgreSQL (issue 18 item 6,
 * p-pglast, src/agent/last-step-end.ts), when that statement fails. The finish then writes the
 * parts apart: the step end alone, then the finish alone (the ledger row's end its own write); a
 * step end that fails alone too fails the run as a failing step end did: the client gets the
 * run's failure, the run and its ledger row end `failed`, the step's model call is stored once.
 */
import { describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { driverStatements, loggedEvents, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, LONE_REQUEST_LOG, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();
/** A step end: the step's messages (a held text's inserted closed, p-heldstep) and the run's row in one statement. */
const stepEnd = (text: string) =>
  /UPDATE agent_runs/.test(text) && /(UPDATE|INSERT INTO) messages/.test(text);
/** A finish: the run's status. */
const finish = (text: string) => /UPDATE agent_runs SET status = /.test(text);

/**
 * The assistant message's finish refused by a trigger: `once` (a sequence: not rolled back with it)
 * or always. Its INSERT already finished too (p-heldstep: the step end inserts a held text closed).
 */
const refuseFinish = (once: boolean) => [
  'CREATE SEQUENCE svc_test_once',
  `CREATE FUNCTION svc_test_refuse_finish() RETURNS trigger LANGUAGE plpgsql AS $fn$
     BEGIN
       IF NEW.role = 'assistant' AND NEW.finished_at IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.finished_at IS NULL) THEN
         IF ${once ? "nextval('svc_test_once') = 1" : 'true'} THEN RAISE EXCEPTION 'step end refused'; END IF;
       END IF;
       RETURN NEW;
     END $fn$`,
  `CREATE TRIGGER svc_test_refuse_finish BEFORE INSERT OR UPDATE ON messages FOR EACH ROW
     EXECUTE FUNCTION svc_test_refuse_finish()`,
];

describe.skipIf(!pg.available)('a compat request’s last step end in its finish, failing', () => {
  it('STORE-PG-532: the finish carrying the last step end refused once (the step’s message): the step end alone, then the finish alone; the client reads the whole answer, the run and its row complete, the session log is the lone sequence, the model call stored once', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { app, client } = await compatServer([reply().text('warm'), reply().text('one').usage(10, 2)], {
      postgres: sql,
    });
    try {
      await streamedAnswer(client);
      await settledCompatRow(app);
      await app.bus.flush();
      for (const text of refuseFinish(true)) await sql.run(text);
      const statements = driverStatements();
      let answer: string;
      try {
        answer = await streamedAnswer(client);
        await settledCompatRow(app);
        await app.bus.flush();
      } finally {
        statements.restore();
      }
      expect(answer).toBe('one');
      const texts = statements.calls.map((call) => call.text);
      const ends = texts.filter(stepEnd);
      const finishes = texts.filter(finish);
      // The merged statement (refused), the step end alone, the finish alone.
      expect(ends, texts.map((t) => t.slice(0, 80)).join('\n')).toHaveLength(2);
      expect(finish(ends[0])).toBe(true);
      expect(finish(ends[1])).toBe(false);
      expect(finishes).toHaveLength(2);
      expect(texts.indexOf(ends[1])).toBeLessThan(texts.lastIndexOf(finishes[1]));
      expect(stepEnd(finishes[1])).toBe(false);
      const row = await settledCompatRow(app);
      expect(row).toMatchObject({ status: 'completed', prompt_tokens: 10, completion_tokens: 2 });
      const run = await app.runs.require(row.run_id);
      expect(run.status).toBe('completed');
      const log = await loggedEvents(sql, row.session_id);
      expect(log.map((e) => e.type)).toEqual(LONE_REQUEST_LOG);
      const types = (await app.runs.events(row.run_id)).map((e) => e.type);
      expect(types.slice(-3)).toEqual(['step.finished', 'run.finished', 'openai_compat.response']);
      const calls = await sql.query('SELECT id FROM model_calls WHERE run_id = $1', [row.run_id]);
      expect(calls).toHaveLength(1);
      const messages = await app.sessions.messages(row.session_id);
      expect(messages.find((m) => m.role === 'assistant')?.finished_at).not.toBeNull();
    } finally {
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-533: the step’s message refused always: the merged statement and the step end alone fail, the run fails as a failing step end failed it (its error event, failed), the client gets the failure, the ledger row failed, the model call stored once', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { app, client } = await compatServer([reply().text('warm'), reply().text('one').usage(10, 2)], {
      postgres: sql,
    });
    try {
      await streamedAnswer(client);
      await settledCompatRow(app);
      for (const text of refuseFinish(false)) await sql.run(text);
      const answer = await streamedAnswer(client).then(
        (text) => ({ text }),
        (error: { message?: string }) => ({ error: String(error.message) }),
      );
      expect(answer).toMatchObject({ error: expect.stringContaining('the run failed') });
      const row = await settledCompatRow(app);
      expect(row.status).toBe('failed');
      const run = await app.runs.require(row.run_id);
      expect(run).toMatchObject({ status: 'failed', reason: 'error' });
      expect(run.error).toContain('step end refused');
      const types = (await app.runs.events(row.run_id)).map((e) => e.type);
      expect(types).not.toContain('step.finished');
      expect(types.slice(-3)).toEqual(['error', 'run.finished', 'openai_compat.response']);
      // No result message: the step's was never finished.
      expect(run.result_message_id).toBeNull();
      const calls = await sql.query('SELECT id FROM model_calls WHERE run_id = $1', [row.run_id]);
      expect(calls).toHaveLength(1);
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
