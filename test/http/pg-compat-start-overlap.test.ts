/**
 * A lone compat request's run launched while its start statement is on its way, on PostgreSQL
 * (issue 18 item 6, p-pgoverlap, src/agent/run-control.ts `launchEarly`): the run's preparation
 * (its model, history, tools, system prompt) runs during the statement's round trip. The statement
 * is slowed at the database (a trigger's `pg_sleep`) so the window is wide whatever the load. A
 * failed start answers the client as before with nothing of the run written; a stop in the window
 * waits for the answer and ends the run as on SQLite.
 *
 * Changed by p-pgmodel (src/agent/early-request.ts): the model request now goes out in the window
 * too, its stream read only after the answer. Where these tests said "no model asked" they now say
 * "the model request, if sent, was aborted": the provider saw its connection closed before its
 * answer was written whole (`FakeProvider.closed`), and nothing of it is stored (the table counts).
 * The order of the model request and the answer is pinned with the answer held in
 * ./pg-compat-start-model.test.ts (STORE-PG-915..917).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { reply } from '../helpers/fake-provider';
import { laterOnly } from '../helpers/held-answer';
import { loggedEvents, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { until } from '../helpers/until';
import { compatServer, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();
type Sql = Awaited<ReturnType<typeof migratedDatabase>>;

/** The events with what differs per App (ids, times) masked. */
function masked(events: { type: string; payload: unknown }[]): string[] {
  return events.map(
    (e) =>
      `${e.type} ${JSON.stringify(e.payload)
        .replace(/"(ses|run|msg|call|req|chatcmpl)[-_][^"]*"/g, '"<id>"')
        .replace(/"(\w*_at|at|created)":\d+/g, '"$1":0')}`,
  );
}

/** A trigger on the run's INSERT: sleeps `seconds`, then raises `fail` when given. */
async function slowStart(sql: Sql, seconds: number, fail?: string): Promise<() => Promise<void>> {
  const raise = fail ? `RAISE EXCEPTION '${fail}';` : '';
  await sql.query(
    `CREATE FUNCTION svc_test_slow_start() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_sleep(${seconds}); ${raise} RETURN NEW; END $$`,
  );
  await sql.query(
    'CREATE TRIGGER svc_test_slow_start BEFORE INSERT ON agent_runs FOR EACH ROW EXECUTE FUNCTION svc_test_slow_start()',
  );
  return async () => {
    await sql.query('DROP TRIGGER svc_test_slow_start ON agent_runs');
    await sql.query('DROP FUNCTION svc_test_slow_start()');
  };
}

/**
 * A PostgreSQL compat server after one request; `atRest` checks that nothing of a failed start was
 * written (six tables' counts as before), its model request, if sent, was aborted (p-pgmodel), and
 * no run is active.
 */
async function warmedForAFailingStart(closers: (() => Promise<unknown>)[]) {
  const sql = await migratedDatabase(pg.cluster());
  closers.push(() => sql.close());
  const server = await compatServer([reply().text('warm'), laterOnly, laterOnly, laterOnly], {
    postgres: sql,
  });
  closers.push(() => server.app.close());
  const { app, post, provider } = server;
  await streamedAnswer(server.client);
  await settledCompatRow(app);
  const tables = [
    'sessions',
    'agent_runs',
    'agent_run_events',
    'messages',
    'openai_compat_requests',
    'session_events',
  ];
  const counts = () =>
    Promise.all(
      tables.map(async (table) =>
        Number((await sql.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`))[0]!.n),
      ),
    );
  const before = await counts();
  const requests = provider.requests.length;
  const atRest = async () => {
    await app.bus.flush();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await counts()).toEqual(before);
    // At most one model request since, closed by svc before its answer was written whole.
    const sent = provider.requests.slice(requests);
    expect(sent.length).toBeLessThanOrEqual(1);
    await until(
      () => sent.every((r) => provider.closed.some((c) => c.request === r)),
      'the model request closed',
    );
    expect(provider.closed.filter((c) => sent.includes(c.request)).map((c) => c.outcome)).toEqual(
      sent.map(() => 'aborted'),
    );
    expect(app.agent.active()).toEqual([]);
  };
  return { sql, app, post, atRest };
}

/**
 * What happens in order: `prepared` (the run binds its handed model: its preparation), `answered`
 * (the start's `createClaimed` answered or failed), `model` (the model request arrives);
 * `onPrepared`, called at `prepared`.
 */
function marks(app: App, onPrepared?: (sessionId: string) => void): string[] {
  const order: string[] = [];
  const bind = app.models.bind.bind(app.models);
  app.models.bind = (resolved, request) => {
    order.push('prepared');
    if (request.sessionId) onPrepared?.(request.sessionId);
    return bind(resolved, request);
  };
  const create = app.runs.createClaimed?.bind(app.runs);
  if (create) {
    app.runs.createClaimed = async (...args) => {
      try {
        return await create(...args);
      } finally {
        order.push('answered');
      }
    };
  }
  return order;
}

const body = (content: string) => ({ model: 'fake/m1', messages: [{ role: 'user', content }] });

describe.skipIf(!pg.available)('a lone compat start overlapping its run’s preparation on PostgreSQL', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-890: the run prepares during its start statement’s round trip (its model request goes in it too, p-pgmodel); the answer, the row and the session log SQLite’s', async () => {
    const run = async (postgres?: Sql) => {
      let order: string[] = [];
      const script = [
        reply().text('warm'),
        () => {
          order.push('model');
          return reply().text('the answer').usage(10, 3);
        },
      ];
      const server = await compatServer(script, postgres ? { postgres } : {});
      closers.push(() => server.app.close());
      await streamedAnswer(server.client);
      await settledCompatRow(server.app);
      order = marks(server.app);
      const slow = postgres ? await slowStart(postgres, 0.3) : undefined;
      const text = await streamedAnswer(server.client);
      await slow?.();
      const row = await settledCompatRow(server.app);
      await server.app.bus.flush();
      const replay = (await server.app.bus.replay(row.session_id, 0)).events;
      return { order, text, row, replay };
    };
    const sqlite = await run();
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    const postgres = await run(sql);

    // SQLite has no lone start statement: prepared after its start, as before.
    expect(sqlite.order).toEqual(['prepared', 'model']);
    // Prepared before the answer (on the base: after it). The model request goes in the window
    // too since p-pgmodel, so its mark and the answer's may come in either order here (the order
    // with the answer held: STORE-PG-915).
    expect(postgres.order[0]).toBe('prepared');
    expect([...postgres.order].sort()).toEqual(['answered', 'model', 'prepared']);
    for (const answer of [sqlite, postgres]) {
      expect(answer.text).toBe('the answer');
      expect(answer.row).toMatchObject({ status: 'completed', prompt_tokens: 10, completion_tokens: 3 });
    }
    expect(masked(postgres.replay)).toEqual(masked(sqlite.replay));
    const log = await loggedEvents(sql, postgres.row.session_id);
    expect(postgres.replay.map((e) => e.id)).toEqual(log.map((e) => Number(e.id)));
  });

  it('STORE-PG-891: a start statement failing after the run prepared answers the client as a failing start does, writes nothing of the run, its model request (if sent) aborted, resets the session’s runtime; a later request works', async () => {
    const { sql, app, post, atRest } = await warmedForAFailingStart(closers);
    const order = marks(app);

    const drop = await slowStart(sql, 0.3, 'injected start fault');
    // The same failure with the run launched after the answer (the base's path: no
    // `messagesVersion`, no early launch), then as it is.
    const version = app.sessions.messagesVersion;
    app.sessions.messagesVersion = undefined;
    const late = await post('/v1/chat/completions', body('fail me'));
    app.sessions.messagesVersion = version;
    expect(order).toEqual(['answered']);
    order.length = 0;
    const failed = await post('/v1/chat/completions', body('fail me'));
    await drop();
    const answer = { status: failed.status, body: await failed.json() };
    expect(answer).toEqual({ status: late.status, body: await late.json() });
    expect(answer.status).toBeGreaterThanOrEqual(500);
    expect(answer.body).toEqual({
      error: expect.stringMatching(/injected start fault/),
      code: answer.status,
    });
    // Prepared in the window (on the base: never, the run launched only after a good answer).
    expect(order).toEqual(['prepared', 'answered']);
    await atRest();

    const later = await post('/v1/chat/completions', body('later'));
    expect(later.status).toBe(200);
    const laterBody = (await later.json()) as { choices: { message: { content: string } }[] };
    expect(laterBody.choices[0]!.message.content).toBe('later');
    expect((await settledCompatRow(app)).status).toBe('completed');
    expect(app.agent.active()).toEqual([]);
  });

  it('STORE-PG-893: a cancel in the window of a start whose statement then fails: nothing of the run written, its model request (if sent) aborted, the cancel answers, the runtime at rest; a later request works', async () => {
    const { sql, app, post, atRest } = await warmedForAFailingStart(closers);
    let cancelled: Promise<unknown> | undefined;
    const order = marks(app, (sessionId) => {
      cancelled ??= app.agent.cancel(sessionId).then(
        () => order.push('cancel answered'),
        () => order.push('cancel refused'),
      );
    });

    const drop = await slowStart(sql, 0.3, 'injected start fault');
    const failed = await post('/v1/chat/completions', body('fail me'));
    await drop();
    await cancelled;
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(await failed.json()).toEqual({
      error: expect.stringMatching(/injected start fault/),
      code: failed.status,
    });
    expect(order[0]).toBe('prepared');
    expect(order).toContain('answered');
    expect(order.filter((mark) => mark.startsWith('cancel'))).toHaveLength(1);
    await atRest();

    const later = await post('/v1/chat/completions', body('later'));
    expect(later.status).toBe(200);
    expect((await settledCompatRow(app)).status).toBe('completed');
    expect(app.agent.active()).toEqual([]);
  });
});
