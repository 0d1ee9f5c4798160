/**
 * A compat answer whose model streams it in more than one read, on PostgreSQL (issue 18 item 6,
 * p-pgcompat7, brief lead 4). A text step's assistant message is held for its step end
 * (p-heldstep); when the step does not end in the read that brought its first text, the message
 * and its deltas are written once that read is done (a check-phase hop), not when the recorder's
 * 50 ms flush timer fires: the client's first text waits for one round trip, as a model's first
 * token should. The pin runs the request with `setTimeout` faked (no timer fires), the model's
 * second text held until the client has its first: it fails where only the timer releases the
 * held text. The text, the ledger row and the session's log are SQLite's.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, loggedAsOnSqlite, settledCompatRow, sseText, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();
/** The real `setTimeout`, for the test's own bound while the process's timers are faked. */
const realSetTimeout = globalThis.setTimeout;
const INSERT_ASSISTANT = /INSERT INTO messages/;

/**
 * A warm request, then one whose model sends 'one tw' and holds 'o three' until the client has
 * its first text (or 10 s passed: `early` false), the process's `setTimeout` faked meanwhile.
 */
async function twoReads(options: { postgres?: Awaited<ReturnType<typeof migratedDatabase>> }) {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  // Chunk 0 is the role, 1 the first text piece ('one tw'), 2 the second ('o three').
  const { app, client, post } = await compatServer(
    [reply().text('warm'), reply().text('one two three').usage(10, 3).pauseAt(2, gate)],
    options.postgres ? { postgres: options.postgres } : {},
  );
  await streamedAnswer(client);
  await settledCompatRow(app);
  await app.bus.flush();
  const statements = driverStatements();
  let body = '';
  let early = false;
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
    const bound = new Promise<'bound'>((resolve) => realSetTimeout(() => resolve('bound'), 10_000));
    while (!sseText(body)) {
      const read = await Promise.race([reader.read(), bound]);
      if (read === 'bound' || read.done) break;
      body += decoder.decode(read.value, { stream: true });
    }
    early = sseText(body) === 'one tw';
    vi.useRealTimers();
    open();
    for (;;) {
      const read = await reader.read();
      if (read.done) break;
      body += decoder.decode(read.value, { stream: true });
    }
  } finally {
    vi.useRealTimers();
    open();
    statements.restore();
  }
  const row = await settledCompatRow(app);
  await app.bus.flush();
  return { app, early, text: sseText(body), done: body.trimEnd().endsWith('data: [DONE]'), row, statements };
}

describe.skipIf(!pg.available)('a compat answer in two reads on PostgreSQL', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    vi.useRealTimers();
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-570: the model’s first text alone in its read: the client has it before the model’s next read with no timer fired (was the 50 ms flush timer); the message written once, alone, before the step end; the text, the row and the session log SQLite’s', async () => {
    const sqlite = await twoReads({});
    closers.push(() => sqlite.app.close());
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    const postgres = await twoReads({ postgres: sql });
    closers.push(() => postgres.app.close());

    expect(sqlite.early).toBe(true);
    expect(postgres.early).toBe(true);
    for (const answer of [sqlite, postgres]) {
      expect(answer.text).toBe('one two three');
      expect(answer.done).toBe(true);
      expect(answer.row).toMatchObject({ status: 'completed', prompt_tokens: 10, completion_tokens: 3 });
    }
    // The held text's message went alone (its first delta with it), before the step end's
    // statement: one INSERT of an assistant message, the finish only updating it.
    const inserts = postgres.statements.calls.filter(
      (call) => INSERT_ASSISTANT.test(call.text) && (call.values ?? []).includes('one tw'),
    );
    expect(inserts).toHaveLength(1);
    const calls = postgres.statements.calls;
    const finish = calls.findIndex((call) => (call.values ?? []).includes('run.finished'));
    expect(finish).toBeGreaterThan(calls.indexOf(inserts[0]));
    const log = await loggedAsOnSqlite(
      sql,
      { app: postgres.app, sessionId: postgres.row.session_id },
      { app: sqlite.app, sessionId: sqlite.row.session_id },
    );
    const deltas = log.filter((e) => e.type === 'message.delta');
    expect(deltas).toHaveLength(2);
  });

  it('STORE-PG-571: that first text’s statement refused once (a trigger on the assistant message’s INSERT): the held text is held again, its deltas’ events with it, and written by the next write; the client reads the whole text, the run and its row complete, the session log SQLite’s', async () => {
    const sqlite = await compatServer([reply().text('warm'), reply().text('one two three').usage(10, 3)]);
    closers.push(() => sqlite.app.close());
    await streamedAnswer(sqlite.client);
    expect(await streamedAnswer(sqlite.client)).toBe('one two three');
    const sqliteRow = await settledCompatRow(sqlite.app);
    await sqlite.app.bus.flush();

    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const { app, client } = await compatServer(
      [reply().text('warm'), reply().text('one two three').usage(10, 3).pauseAt(2, gate)],
      { postgres: sql },
    );
    closers.push(() => app.close());
    await streamedAnswer(client);
    await settledCompatRow(app);
    await app.bus.flush();
    await sql.run('CREATE SEQUENCE svc_test_once');
    await sql.run(`CREATE FUNCTION svc_test_refuse_open() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF NEW.role = 'assistant' AND NEW.finished_at IS NULL AND nextval('svc_test_once') = 1 THEN
          RAISE EXCEPTION 'first text refused';
        END IF;
        RETURN NEW;
      END $fn$`);
    await sql.run(`CREATE TRIGGER svc_test_refuse_open BEFORE INSERT ON messages FOR EACH ROW
      EXECUTE FUNCTION svc_test_refuse_open()`);
    const answer = streamedAnswer(client);
    // The model's second text once the first text's statement was refused.
    for (let i = 0; i < 500; i++) {
      const [seq] = await sql.query<{ is_called: boolean }>('SELECT is_called FROM svc_test_once');
      if (seq?.is_called) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    open();
    expect(await answer).toBe('one two three');
    const row = await settledCompatRow(app);
    expect(row).toMatchObject({ status: 'completed', prompt_tokens: 10, completion_tokens: 3 });
    await app.bus.flush();
    const [seq] = await sql.query<{ last_value: string }>('SELECT last_value FROM svc_test_once');
    expect(Number(seq?.last_value)).toBeGreaterThanOrEqual(1);
    const _log = await loggedAsOnSqlite(
      sql,
      { app, sessionId: row.session_id },
      { app: sqlite.app, sessionId: sqliteRow.session_id },
    );
    const messages = await app.sessions.messages(row.session_id);
    const assistant = messages.filter((m) => m.role === 'assistant');
    expect(assistant).toHaveLength(1);
    expect(assistant[0]?.finished_at).not.toBeNull();
  });
});
