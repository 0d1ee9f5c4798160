/**
 * A compat answer's text deltas that wait for their assistant message, on PostgreSQL (p-pgcritical):
 * the deltas of one read of the model's answer are recorded together once the message is written,
 * so their `message.delta` events are one bus append. Before, the stream waited for the first
 * delta's recording: it went alone, and the next one's append waited for its answer (one round trip
 * more on the path to `[DONE]`). The assistant message's INSERT is slowed by a trigger so that every
 * delta of the answer is there while it runs, whatever the machine's load.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { driverStatements, loggedEvents, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();
const BUS_APPEND = /^SELECT event_id, previous_id FROM svc_append_events_across\(/;
const LONE_ANSWER = [
  'message.created',
  'message.delta',
  'message.delta',
  'message.completed',
  'context.usage',
  'run.finished',
  'state.changed',
];

describe.skipIf(!pg.available)('a compat answer’s waiting deltas on PostgreSQL', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('STORE-PG-490: two text deltas that come while the assistant message is written are one bus append (were two, the second sent after the first answered); the client’s text, the log and the deltas’ order as before', async () => {
    // The answer's message written at its first delta, its deltas appended by the bus: a text step
    // held for its step end (p-heldstep, test/store/pg-held-step.test.ts) has neither, so off here.
    vi.stubEnv('SVC_STEP_ONCE', '0');
    const sql = await migratedDatabase(pg.cluster());
    const statements = driverStatements();
    // 'one two three' is streamed as two deltas in one read: 'one t', 'wo three'.
    const { app, client } = await compatServer(
      [reply().text('warm'), reply().text('one two three').usage(10, 3)],
      {
        postgres: sql,
      },
    );
    try {
      await streamedAnswer(client);
      await settledCompatRow(app);
      await app.bus.flush();
      await sql.run(`CREATE FUNCTION svc_test_slow_assistant() RETURNS trigger LANGUAGE plpgsql AS $fn$
        BEGIN PERFORM pg_sleep(0.3); RETURN NEW; END $fn$`);
      await sql.run(`CREATE TRIGGER svc_test_slow_assistant BEFORE INSERT ON messages
        FOR EACH ROW WHEN (NEW.role = 'assistant') EXECUTE FUNCTION svc_test_slow_assistant()`);
      const from = statements.calls.length;
      expect(await streamedAnswer(client)).toBe('one two three');
      const row = await settledCompatRow(app);
      expect(row.status).toBe('completed');
      await app.bus.flush();
      const appended = statements.calls
        .slice(from)
        .filter((call) => BUS_APPEND.test(call.text))
        .map((call) => (call.values?.[1] as string[] | undefined) ?? []);
      const withDeltas = appended.filter((types) => types.includes('message.delta'));
      expect(withDeltas).toEqual([['message.delta', 'message.delta']]);
      const log = await loggedEvents(sql, row.session_id);
      expect(log.map((e) => e.type).slice(-LONE_ANSWER.length)).toEqual(LONE_ANSWER);
      const deltas = log
        .filter((e) => e.type === 'message.delta')
        .map((e) => (typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload) as { delta: string })
        .map((payload) => payload.delta);
      expect(deltas.join('')).toBe('one two three');
      expect(deltas).toHaveLength(2);
    } finally {
      statements.restore();
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-492: the assistant message’s INSERT refused while its deltas wait, the model’s chunks apart: the stream ends at its next part with that error (no unhandled rejection), the run fails, the client gets an error and no text, as before', async () => {
    const sql = await migratedDatabase(pg.cluster());
    // Each chunk 150 ms after the one before: the refusal comes back before the next part.
    const { app, client } = await compatServer(
      [reply().text('warm'), reply().text('one two three').usage(10, 3).slow(150)],
      { postgres: sql },
    );
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await streamedAnswer(client);
      await settledCompatRow(app);
      await sql.run(`CREATE FUNCTION svc_test_refuse_assistant() RETURNS trigger LANGUAGE plpgsql AS $fn$
        BEGIN RAISE EXCEPTION 'assistant refused'; END $fn$`);
      await sql.run(`CREATE TRIGGER svc_test_refuse_assistant BEFORE INSERT ON messages
        FOR EACH ROW WHEN (NEW.role = 'assistant') EXECUTE FUNCTION svc_test_refuse_assistant()`);
      const answer = await streamedAnswer(client).then(
        (text) => ({ text }),
        (error: { message?: string }) => ({ error: String(error.message) }),
      );
      expect(answer).toMatchObject({ error: expect.stringContaining('the run failed') });
      const row = await settledCompatRow(app);
      expect(row.status).toBe('failed');
      const run = await app.runs.require(row.run_id);
      expect(run.status).toBe('failed');
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await app.close();
      await sql.close();
    }
  });
});
