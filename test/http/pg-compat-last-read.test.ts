/**
 * A compat answer streamed in three reads on PostgreSQL (issue 18 item 6, p-pgtail, p-pglone Left
 * 1): once the text step's message is written (its first read's end, p-pgcompat7), a read's deltas
 * are held until that read is done; a middle read's are then appended (the client has its text at
 * the read's end, as before), the last read's, which brings the step's end, ride in the run's
 * finish (its step end held for it, p-pglast): one statement after the model's last byte where the
 * deltas' append and the finish waiting behind it were two. The text, the ledger row and the
 * session log (order, payloads, ids) are SQLite's; a finish refused once still writes them.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { driverStatements, loggedEvents, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, loggedAsOnSqlite, settledCompatRow, sseText, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();
/** The real `setTimeout`, for the test's own bounds while the process's timers are faked. */
const realSetTimeout = globalThis.setTimeout;

/** Whether a statement's parameters hold the `message.delta` of `delta` (its payload's JSON). */
function carriesDelta(values: unknown[] | undefined, delta: string): boolean {
  const needle = `"delta":${JSON.stringify(delta)}`;
  const has = (value: unknown): boolean =>
    typeof value === 'string' ? value.includes(needle) : Array.isArray(value) && value.some(has);
  return (values ?? []).some(has);
}

const carriesFinish = (values: unknown[] | undefined) => (values ?? []).includes('run.finished');

/**
 * A warm request, then one whose model streams 'one' | ' two' | ' th', 'ree' and its finish in three
 * reads, each after the client has the text before it (`timely`: every time within 10 s), the
 * process's `setTimeout` faked meanwhile (no flush timer fires). `lastRead`: the statements sent
 * from the third read on.
 */
async function threeReads(options: {
  postgres?: Awaited<ReturnType<typeof migratedDatabase>>;
  /** After the warm request. */
  warm?: () => Promise<unknown>;
}) {
  const gates = [0, 1].map(() => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    return { gate, open };
  });
  // Chunk 0 is the role, 1 'one', 2 ' two', 3 ' th', 4 'ree'.
  const { app, client, post } = await compatServer(
    [
      reply().text('warm'),
      reply().text('one two').text(' three').usage(10, 3).pauseAt(2, gates[0].gate).pauseAt(3, gates[1].gate),
    ],
    options.postgres ? { postgres: options.postgres } : {},
  );
  await streamedAnswer(client);
  await settledCompatRow(app);
  await app.bus.flush();
  await options.warm?.();
  const statements = driverStatements();
  let body = '';
  const timely: boolean[] = [];
  let lastFrom = -1;
  try {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const response = await post('/v1/chat/completions', {
      model: 'fake/m1',
      messages: [{ role: 'user', content: 'hello' }],
      stream: true,
    });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    for (const [i, expected] of ['one', 'one two'].entries()) {
      const bound = new Promise<'bound'>((resolve) => realSetTimeout(() => resolve('bound'), 10_000));
      while (sseText(body) !== expected) {
        const read = await Promise.race([reader.read(), bound]);
        if (read === 'bound' || read.done) break;
        body += decoder.decode(read.value, { stream: true });
      }
      timely.push(sseText(body) === expected);
      if (i === 1) lastFrom = statements.calls.length;
      gates[i].open();
    }
    vi.useRealTimers();
    for (;;) {
      const read = await reader.read();
      if (read.done) break;
      body += decoder.decode(read.value, { stream: true });
    }
  } finally {
    vi.useRealTimers();
    for (const { open } of gates) open();
    statements.restore();
  }
  const row = await settledCompatRow(app);
  await app.bus.flush();
  return {
    app,
    timely,
    text: sseText(body),
    done: body.trimEnd().endsWith('data: [DONE]'),
    row,
    calls: statements.calls,
    lastRead: statements.calls.slice(lastFrom),
  };
}

describe.skipIf(!pg.available)('a compat answer’s last read in its finish on PostgreSQL', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    vi.useRealTimers();
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-680: the last read’s deltas (it brings the step’s end) ride in the run’s finish: one statement after the model’s last byte carries them and `run.finished` (was their append, then the finish behind it); the text, the row and the session log (order, payloads, ids) SQLite’s', async () => {
    const sqlite = await threeReads({});
    closers.push(() => sqlite.app.close());
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    const postgres = await threeReads({ postgres: sql });
    closers.push(() => postgres.app.close());

    for (const answer of [sqlite, postgres]) {
      expect(answer.timely).toEqual([true, true]);
      expect(answer.text).toBe('one two three');
      expect(answer.done).toBe(true);
      expect(answer.row).toMatchObject({ status: 'completed', prompt_tokens: 10, completion_tokens: 3 });
    }
    const { lastRead } = postgres;
    const finishes = lastRead.filter((call) => carriesFinish(call.values));
    expect(finishes).toHaveLength(1);
    for (const delta of [' th', 'ree']) {
      const carrying = lastRead.filter((call) => carriesDelta(call.values, delta));
      expect(carrying, delta).toHaveLength(1);
      expect(carrying[0]).toBe(finishes[0]);
    }
    // Nothing of the run's was sent between the model's last byte and the finish.
    expect(lastRead.findIndex((call) => carriesFinish(call.values))).toBe(0);

    const log = await loggedAsOnSqlite(
      sql,
      { app: postgres.app, sessionId: postgres.row.session_id },
      { app: sqlite.app, sessionId: sqlite.row.session_id },
    );
    expect(log.filter((e) => e.type === 'message.delta')).toHaveLength(4);
  });

  it('STORE-PG-681: a middle read’s delta (the step does not end in it) is appended at its read’s end, alone: the client has its text before the model’s next read with no timer fired, the finish does not carry it', async () => {
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    const postgres = await threeReads({ postgres: sql });
    closers.push(() => postgres.app.close());

    expect(postgres.timely).toEqual([true, true]);
    expect(postgres.text).toBe('one two three');
    const middle = postgres.calls.filter((call) => carriesDelta(call.values, ' two'));
    expect(middle).toHaveLength(1);
    expect(carriesFinish(middle[0]?.values)).toBe(false);
    expect(postgres.calls.indexOf(middle[0])).toBeLessThan(
      postgres.calls.findIndex((call) => carriesFinish(call.values)),
    );
  });

  it('STORE-PG-682: that finish refused once (a trigger on the run’s completing UPDATE): the step end it carried goes alone with the last read’s deltas, then the finish; the text, the row and the session log SQLite’s, each delta once', async () => {
    const sqlite = await threeReads({});
    closers.push(() => sqlite.app.close());
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    const refuseOnce = async () => {
      await sql.run('CREATE SEQUENCE svc_test_once');
      await sql.run(`CREATE FUNCTION svc_test_refuse_finish() RETURNS trigger LANGUAGE plpgsql AS $fn$
        BEGIN
          IF NEW.status = 'completed' AND OLD.status <> 'completed' AND nextval('svc_test_once') = 1 THEN
            RAISE EXCEPTION 'finish refused';
          END IF;
          RETURN NEW;
        END $fn$`);
      await sql.run(`CREATE TRIGGER svc_test_refuse_finish BEFORE UPDATE ON agent_runs FOR EACH ROW
        EXECUTE FUNCTION svc_test_refuse_finish()`);
    };
    const postgres = await threeReads({ postgres: sql, warm: refuseOnce });
    closers.push(() => postgres.app.close());

    const [seq] = await sql.query<{ last_value: string; is_called: boolean }>(
      'SELECT last_value, is_called FROM svc_test_once',
    );
    // The second request's finish was refused once (the trigger made after the warm one).
    expect({ ...seq, last_value: Number(seq?.last_value) }).toEqual({ last_value: 2, is_called: true });
    const finishes = postgres.lastRead.filter((call) => carriesFinish(call.values));
    expect(finishes.length).toBeGreaterThanOrEqual(2);
    expect(postgres.text).toBe('one two three');
    expect(postgres.done).toBe(true);
    expect(postgres.row).toMatchObject({ status: 'completed', prompt_tokens: 10, completion_tokens: 3 });
    const log = await loggedAsOnSqlite(
      sql,
      { app: postgres.app, sessionId: postgres.row.session_id },
      { app: sqlite.app, sessionId: sqlite.row.session_id },
    );
    expect(log.filter((e) => e.type === 'message.delta')).toHaveLength(4);
  });

  it('STORE-PG-683: the step’s end refused every time (a trigger on the assistant message’s closing UPDATE): the finish that carried it and then the step end alone fail, the last read’s deltas it carried are held again and appended, each once, in order, before the run’s failure', async () => {
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    const refuse = async () => {
      await sql.run(`CREATE FUNCTION svc_test_refuse_close() RETURNS trigger LANGUAGE plpgsql AS $fn$
        BEGIN
          IF NEW.role = 'assistant' AND NEW.finished_at IS NOT NULL AND OLD.finished_at IS NULL THEN
            RAISE EXCEPTION 'step end refused';
          END IF;
          RETURN NEW;
        END $fn$`);
      await sql.run(`CREATE TRIGGER svc_test_refuse_close BEFORE UPDATE ON messages FOR EACH ROW
        EXECUTE FUNCTION svc_test_refuse_close()`);
    };
    const postgres = await threeReads({ postgres: sql, warm: refuse });
    closers.push(() => postgres.app.close());

    expect(postgres.timely).toEqual([true, true]);
    expect(postgres.row.status).not.toBe('completed');
    // The step end went at least twice (in the finish, then alone), each carrying the last read's deltas.
    const carrying = postgres.lastRead.filter((call) => carriesDelta(call.values, 'ree'));
    expect(carrying.length).toBeGreaterThanOrEqual(2);
    const log = await loggedEvents(sql, postgres.row.session_id);
    const deltas = log
      .filter((e) => e.type === 'message.delta')
      .map((e) => (JSON.parse(String(e.payload)) as { delta: string }).delta);
    expect(deltas).toEqual(['one', ' two', ' th', 'ree']);
    const lastDelta = log.findLastIndex((e) => e.type === 'message.delta');
    const runEnd = log.findIndex((e) => e.type.startsWith('run.') && e.type !== 'run.started');
    expect(runEnd).toBeGreaterThan(lastDelta);
    // The assistant message never completed: nothing but its deltas after its `message.created`.
    expect(log.slice(log.findLastIndex((e) => e.type === 'message.created')).map((e) => e.type)).toEqual([
      'message.created',
      ...deltas.map(() => 'message.delta'),
      'run.finished',
      'state.changed',
    ]);
  });
});
