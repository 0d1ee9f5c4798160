/**
 * Nothing held for a later statement is lost when a run's end goes wrong on PostgreSQL (issue 18
 * item 6's correctness debt, p-closehold). A text step's last step end is held for its run's finish
 * (p-pglast), and with it the step's message (held text, p-heldstep) and its last read's deltas
 * (p-pgtail): what SQLite had in its log at the step's end. Each scenario's stored run is checked
 * against SQLite's log of the same script (`loggedAsOnSqlite`: the session log's events, payloads
 * masked, in order; the messages; the run events and row):
 * - the store lost at the run's finish (unreachable: its statement and everything after it refused
 *   until the finish's retry; a statement the database refuses keeps the parts-apart path): the
 *   step end stays with the finish and both are written once the store is back (was: the step end
 *   alone refused too, the run failed, its message lost);
 * - the service closed while the run's last step end waits for its finish (the finish held past the
 *   close's bounded wait): the stop's release writes it alone, before the store closes; after a
 *   restart the run is interrupted with its step's message, deltas and `step.finished` in the log.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app';
import { SvcError } from '../../src/errors';
import type { SessionEvent } from '../../src/events/bus';
import type { LogRecord } from '../../src/log';
import type { SqlClient } from '../../src/store/postgres/client';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { wrappedClient } from '../helpers/faulty-client';
import { makeTestApp } from '../helpers/make-test-app';
import { betweenBodyAndFinish } from '../helpers/pg-recorded-app';
import { migratedDatabase, migratedInPlace, postgresForFile, twoNodes } from '../helpers/postgres';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { loggedAsOnSqlite } from '../http/compat-helpers';

const pg = postgresForFile();

/** The model's answer: one text step in one read (its deltas ride in the step end). */
const answer = () => reply().text('hello there').usage(100, 20);

/** The run's stored parts to compare across stores: messages, run events, the row. */
async function stored(app: App, sessionId: string, runId: string) {
  const messages = await app.sessions.messages(sessionId);
  const run = await app.runs.require(runId);
  return {
    messages: messages.map((m) => [m.role, m.parts, m.usage, m.finished_at !== null]),
    events: (await app.runs.events(runId)).map((e) => `${e.seq} ${e.type}`),
    run: {
      status: run.status,
      reason: run.reason,
      steps: run.steps,
      usage: run.usage,
      result: run.result_message_id === messages.find((m) => m.role === 'assistant')?.id,
    },
  };
}

type TestApp = Awaited<ReturnType<typeof makeTestApp>>;

/** Until `app` has logged `message` (10 s at most). */
async function untilLogged(app: Pick<TestApp, 'memoryLog'>, message: string): Promise<void> {
  await vi.waitFor(
    () => {
      expect(app.memoryLog.records.map((r) => r.message)).toContain(message);
    },
    { timeout: 10_000, interval: 20 },
  );
}

/** A run of `answer` on SQLite, ended as it ends there. */
async function onSqlite(closers: (() => Promise<unknown>)[]) {
  const { app } = await agentApp([answer()]);
  closers.push(() => app.close());
  const session = await app.sessions.create({ title: 'held' });
  const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
  await app.agent.wait(run_id);
  await app.bus.flush();
  return { app, sessionId: session.id, runId: run_id };
}

/** The events `app` delivers to the listeners of `sessionId` from now on. */
function watch(app: Pick<App, 'bus'>, sessionId: string): SessionEvent[] {
  const seen: SessionEvent[] = [];
  app.bus.subscribe(sessionId, (event) => seen.push(event));
  return seen;
}

/** A run of `answer` on SQLite, and what its session's listeners and its `*` listeners got of it. */
async function watchedOnSqlite(closers: (() => Promise<unknown>)[]) {
  const { app, events } = await agentApp([answer()]);
  closers.push(() => app.close());
  const session = await app.sessions.create({ title: 'held' });
  const before = await app.bus.lastId(session.id);
  const onSession = watch(app, session.id);
  const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
  await app.agent.wait(run_id);
  await app.bus.flush();
  const onEvery = events.filter((e) => e.session_id === session.id && e.id > before);
  return { app, sessionId: session.id, onSession, onEvery };
}

/** Another node's recovery marks the running run `interrupted` on the store this one cannot reach. */
async function interruptedElsewhere(sql: SqlClient, runId: string): Promise<void> {
  const now = Date.now();
  expect(
    await sql.run(
      "UPDATE agent_runs SET status = 'interrupted', reason = 'owner gone', finished_at = $1, updated_at = $1 WHERE id = $2 AND status = 'running'",
      [now, runId],
    ),
  ).toBe(1);
}

/**
 * A run that takes the workspace lease (a `write`, then a text step): its finish gives the lease up
 * between its events, so it cannot carry its last step end, which is sent alone first (`lastAlone`).
 */
const leased = () => [reply().toolCall('write', { path: 'held.txt', content: 'x' }, 'call_w'), answer()];
/** The `write` allowed: the lease is taken for a change made. */
const writes = { permissions: { allowed_tools: ['write'] } };

/** The statement of the run's second step end (the text step's, sent alone before the finish). */
function secondStepEnd(): (values: unknown[]) => boolean {
  let seen = 0;
  return (values) => values.includes('step.finished') && ++seen === 2;
}

/** `leased` on SQLite, ended as it ends there. */
async function leasedOnSqlite(closers: (() => Promise<unknown>)[]) {
  const { app } = await agentApp(leased(), { extraConfig: writes });
  closers.push(() => app.close());
  const session = await app.sessions.create({ title: 'held' });
  const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
  await app.agent.wait(run_id);
  await app.bus.flush();
  return { app, sessionId: session.id, runId: run_id };
}

/**
 * `sql` as svc's client, the store lost from the first statement carrying `run.finished` (every
 * statement refused `unavailable`) until the finish waits for the store (its log line): it is back
 * for the finish's retry, whatever the load (`back`: when the test says). `lost`: the statements
 * refused (`committed`: the first of them sent and committed, only its answer lost); `sent`: every
 * statement's text. `at`: the
 * statement the store is lost at (its values; default: the first carrying `run.finished`).
 */
function losingAtFinish(
  sql: SqlClient,
  app: () => { memoryLog: { records: LogRecord[] } } | undefined,
  back: () => boolean = () =>
    app()?.memoryLog.records.some((r) => r.message === 'run finish waits for the store') === true,
  committed = false,
  at: (values: unknown[]) => boolean = (values) => values.includes('run.finished'),
) {
  let down = false;
  let was = false;
  const lost: string[] = [];
  const sent: string[] = [];
  const guard = <R>(send: (text: string, values?: unknown[]) => Promise<R>) => {
    return async (text: string, values: unknown[] = []): Promise<R> => {
      sent.push(text);
      if (!was && at(values)) {
        down = was = true;
        // `committed`: that statement is sent and commits; its answer is lost with the store.
        if (committed) await send(text, values);
      }
      if (down && back()) down = false;
      if (down) {
        lost.push(text);
        throw new SvcError('unavailable', 'injected: the store went away', {
          details: { reason: 'unreachable' },
        });
      }
      return send(text, values);
    };
  };
  const client = wrappedClient(sql, guard);
  return { client, lost, sent };
}

/**
 * `client` with the store lost once more from the first step end statement once `after()` (every
 * statement refused, unreachable; `committed`: that one sent and committed first, its answer lost)
 * until the finish's retry reads the run's row again: what is written in that outage is lost.
 */
function losingAgain(client: SqlClient, after: () => boolean, committed: boolean) {
  const state = { lost: false, down: false, refused: [] as string[] };
  const guard = <R>(send: (text: string, values?: unknown[]) => Promise<R>) => {
    return async (text: string, values: unknown[] = []): Promise<R> => {
      if (after() && !state.lost && values.includes('step.finished')) {
        state.lost = state.down = true;
        if (committed) await send(text, values);
      } else if (state.down && /^SELECT \* FROM agent_runs WHERE id = \$1$/.test(text.trim()))
        state.down = false;
      if (state.down) {
        state.refused.push(text);
        throw new SvcError('unavailable', 'injected: the store went away again', {
          details: { reason: 'unreachable' },
        });
      }
      return send(text, values);
    };
  };
  return { client: wrappedClient(client, guard), state };
}

/**
 * A service on `workspace` (its PostgreSQL store `url`'s pool its own, as `[store] url` makes it;
 * undefined: SQLite in the workspace) closed while its run's last step end waits for the run's
 * finish, held past the close's bounded wait (never let go); then a new service on the same store
 * (a restart, its recovery run): what it reads of the run.
 */
async function closedWhileHeld(url: string | undefined, closers: (() => Promise<unknown>)[]) {
  const workspace = tmpWorkspace({});
  const extraConfig = url ? { store: { url } } : {};
  const { app } = await agentApp([answer()], { workspace, extraConfig });
  let arrived!: () => void;
  const there = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  // The finish never comes: the close's wait for the run ends at its bound.
  betweenBodyAndFinish(app, () => {
    arrived();
    return new Promise(() => {});
  });
  const session = await app.sessions.create({ title: 'held' });
  const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
  await there;
  await app.close();
  vi.restoreAllMocks();
  const { app: again } = await agentApp([], { workspace, extraConfig });
  closers.push(() => again.close());
  await again.runs.recover();
  await again.bus.flush();
  return { app: again, sessionId: session.id, runId: run_id, closed: app };
}

describe.skipIf(!pg.available)('nothing held is lost at a run’s troubled end on PostgreSQL', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const close of closers.splice(0).reverse()) await close();
  });

  /**
   * `leased` on both stores, PostgreSQL's losing the store at the step end sent alone before the
   * finish (`committed`: that send committed, only its answer lost) until the finish waits for it.
   */
  async function leasedLosingStepEnd(committed: boolean) {
    const sqlite = await leasedOnSqlite(closers);
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    let pgApp: Awaited<ReturnType<typeof agentApp>>['app'] | undefined;
    const losing = losingAtFinish(
      sql,
      () => pgApp,
      () => pgApp?.memoryLog.records.some((r) => r.message === 'run finish waits for the store') === true,
      committed,
      secondStepEnd(),
    );
    const { app } = await agentApp(leased(), { postgres: losing.client, extraConfig: writes });
    pgApp = app;
    closers.push(() => app.close());
    const session = await app.sessions.create({ title: 'held' });
    const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
    const result = await app.agent.wait(run_id);
    await app.bus.flush();
    return { sqlite, sql, losing, app, session, run_id, result };
  }

  /**
   * The store lost at the run's finish (`wrap`: svc's client around the losing one) and, while this
   * node waits for it, another node's recovery marks the run `interrupted`: returned once this node
   * logged its finish and its bus flushed. `watched`: the session's events this node's session
   * listener got; `every`: its `*` listeners'; `waiting`: the run's waiter taken before the loss.
   */
  async function finishedElsewhere(
    wrap: (client: SqlClient, elsewhere: () => boolean) => SqlClient = (c) => c,
  ) {
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    let pgApp: Awaited<ReturnType<typeof agentApp>>['app'] | undefined;
    let elsewhere = false;
    const losing = losingAtFinish(
      sql,
      () => pgApp,
      () => elsewhere,
    );
    const { app, events: every } = await agentApp([answer()], {
      postgres: wrap(losing.client, () => elsewhere),
    });
    pgApp = app;
    closers.push(() => app.close());
    const session = await app.sessions.create({ title: 'held' });
    const watched = watch(app, session.id);
    const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
    const waiting = app.agent.wait(run_id);
    await untilLogged(app, 'run finish waits for the store');
    // Another node's recovery, on the store this one cannot reach.
    await interruptedElsewhere(sql, run_id);
    elsewhere = true;
    // The run's waiters read the row the other node finished: this node's finish is its log line.
    await untilLogged(app, 'run finished');
    await app.bus.flush();
    return { app, session, run_id, watched, every, waiting };
  }

  it('STORE-PG-700: the store lost at the run’s finish (its statement, and all after it until the finish’s retry, refused: `unavailable`, unreachable): the last step end held for it is written with it once the store is back, its message, deltas and `step.finished` before `run.finished`; the run completed, its log, messages, events and row SQLite’s (was: the step end alone refused too, the run failed, its message lost)', async () => {
    const sqlite = await onSqlite(closers);
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    let pgApp: Awaited<ReturnType<typeof agentApp>>['app'] | undefined;
    const losing = losingAtFinish(sql, () => pgApp);
    const { app } = await agentApp([answer()], { postgres: losing.client });
    pgApp = app;
    closers.push(() => app.close());
    const session = await app.sessions.create({ title: 'held' });
    const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
    const result = await app.agent.wait(run_id);
    await app.bus.flush();

    // The store was lost at the finish and came back for its retry.
    expect(losing.lost.length).toBeGreaterThanOrEqual(1);
    expect(app.memoryLog.records.filter((r) => r.message === 'run finish waits for the store')).toHaveLength(
      1,
    );
    expect(result).toMatchObject({ status: 'completed', text: 'hello there' });
    expect(await stored(app, session.id, run_id)).toEqual(
      await stored(sqlite.app, sqlite.sessionId, sqlite.runId),
    );
    const log = await loggedAsOnSqlite(
      sql,
      { app, sessionId: session.id },
      { app: sqlite.app, sessionId: sqlite.sessionId },
    );
    expect(
      log.filter((e) => e.type === 'message.delta').map((e) => JSON.parse(String(e.payload)).delta),
    ).toEqual(['hello', ' there']);
  });

  it('STORE-PG-730: the store lost at the run’s finish and, while this node waits for it, another node finishes the run (its recovery: `interrupted`): the retry finds the row finished, sees the step end not stored (no `step.finished` of its step) and writes it alone: the step’s message finished with its text and usage, `step.finished` in the run’s events, its deltas in the session log (was: counted written, none of it stored)', async () => {
    const { app, session, run_id } = await finishedElsewhere();

    const run = await stored(app, session.id, run_id);
    expect(run.run.status).toBe('interrupted');
    expect(run.events.map((e) => e.split(' ')[1])).toContain('step.finished');
    expect(run.messages.at(-1)).toEqual([
      'assistant',
      [{ type: 'text', text: 'hello there' }],
      { input_tokens: 100, output_tokens: 20, reasoning_tokens: 0, cached_input_tokens: 0 },
      true,
    ]);
    const log = (await app.bus.replay(session.id, 0)).events;
    expect(
      log.filter((e) => e.type === 'message.delta').map((e) => (e.payload as { delta: string }).delta),
    ).toEqual(['hello', ' there']);
    // Written once: one assistant message, one `step.finished` of the step.
    expect(run.messages.filter((m) => m[0] === 'assistant')).toHaveLength(1);
    expect(run.events.filter((e) => e.endsWith(' step.finished'))).toHaveLength(1);
    const messages = app.memoryLog.records.map((r) => r.message);
    expect(messages).toContain('run finished elsewhere before its last step end; writing it alone');
    expect(messages).not.toContain('run last step end lost');
  });

  it('STORE-PG-731: the finish’s statement carrying the last step end commits and its answer is lost with the store: the retry finds the row finished and the step’s `step.finished` stored, so counts the step end written (nothing sent twice): one assistant message, one `step.finished`, the run completed, its messages, events and row SQLite’s', async () => {
    const sqlite = await onSqlite(closers);
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    let pgApp: Awaited<ReturnType<typeof agentApp>>['app'] | undefined;
    const losing = losingAtFinish(
      sql,
      () => pgApp,
      () => pgApp?.memoryLog.records.some((r) => r.message === 'run finish waits for the store') === true,
      true,
    );
    const { app } = await agentApp([answer()], { postgres: losing.client });
    pgApp = app;
    closers.push(() => app.close());
    const session = await app.sessions.create({ title: 'held' });
    const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
    await untilLogged(app, 'run finished');
    await app.bus.flush();

    expect(losing.lost.length).toBeGreaterThanOrEqual(1);
    const run = await stored(app, session.id, run_id);
    expect(run).toEqual(await stored(sqlite.app, sqlite.sessionId, sqlite.runId));
    expect(run.events.filter((e) => e.endsWith(' step.finished'))).toHaveLength(1);
    const messages = app.memoryLog.records.map((r) => r.message);
    expect(messages).not.toContain('run finished elsewhere before its last step end; writing it alone');
    // The session log and its watchers: STORE-PG-740.
  });

  it('STORE-PG-740: the finish’s statement (step end, `run.finished`, the idle state) commits and its answer is lost: its session events are in the log once, SQLite’s log and order; this node’s session listener, its `*` listeners and another node’s session listener each get them once, with their stored ids (was: `run.finished` and `state.changed` published again by the retry, new ids; `*` never told the stored ones)', async () => {
    const sqlite = await watchedOnSqlite(closers);
    const nodes = await twoNodes(pg.cluster());
    closers.push(() => nodes.close());
    let pgApp: Awaited<ReturnType<typeof agentApp>>['app'] | undefined;
    const losing = losingAtFinish(
      nodes.sql,
      () => pgApp,
      () => pgApp?.memoryLog.records.some((r) => r.message === 'run finish waits for the store') === true,
      true,
    );
    const { app, events: everyA } = await agentApp([answer()], { postgres: losing.client });
    pgApp = app;
    closers.push(() => app.close());
    const appB = await makeTestApp({ postgres: nodes.other });
    closers.push(() => appB.close());
    const session = await app.sessions.create({ title: 'held' });
    const before = await app.bus.lastId(session.id);
    const onA = watch(app, session.id);
    const onB = watch(appB, session.id);
    await appB.bus.lastId(session.id);
    const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
    await untilLogged(app, 'run finished');
    await app.bus.flush();

    expect(losing.lost.length).toBeGreaterThanOrEqual(1);
    const log = await loggedAsOnSqlite(
      nodes.sql,
      { app, sessionId: session.id },
      { app: sqlite.app, sessionId: sqlite.sessionId },
    );
    const stored = log.filter((e) => Number(e.id) > before).map((e) => `${e.id} ${e.type}`);
    expect(stored.filter((e) => e.endsWith(' run.finished'))).toHaveLength(1);
    const seen = (events: SessionEvent[]) => events.map((e) => `${e.id} ${e.type}`);
    await vi.waitFor(() => expect(seen(onB)).toEqual(stored), { timeout: 10_000, interval: 20 });
    expect(seen(onA)).toEqual(stored);
    expect(seen(everyA.filter((e) => e.session_id === session.id && e.id > before))).toEqual(stored);
    // The same events, in the same order, as SQLite's listeners got them.
    const types = (events: SessionEvent[]) => events.map((e) => e.type);
    expect(types(onA)).toEqual(types(sqlite.onSession));
    expect(types(everyA.filter((e) => e.session_id === session.id && e.id > before))).toEqual(
      types(sqlite.onEvery),
    );
    expect(await app.agent.result(run_id)).toMatchObject({ status: 'completed' });
  });

  it('STORE-PG-741: the store lost at the finish and another node’s recovery marks the run `interrupted` meanwhile: this node publishes and answers what is stored, once: `run.finished` with status `interrupted` and the row’s steps and usage in the log and to its listeners, the run’s waiters and its log line `interrupted` (was: `run.finished` `completed`, this node’s outcome, against the stored `interrupted`)', async () => {
    const { app, session, run_id, watched: onA, every: everyA, waiting } = await finishedElsewhere();

    const row = await app.runs.require(run_id);
    expect(row).toMatchObject({ status: 'interrupted', reason: 'owner gone', steps: 1 });
    const expected = {
      status: 'interrupted',
      reason: 'owner gone',
      steps: row.steps,
      usage: { input_tokens: row.usage.input_tokens, output_tokens: row.usage.output_tokens },
      cost: row.cost,
    };
    const finishedIn = (events: SessionEvent[]) =>
      events.filter((e) => e.type === 'run.finished' && e.session_id === session.id).map((e) => e.payload);
    const log = (await app.bus.replay(session.id, 0)).events;
    expect(finishedIn(log)).toEqual([expect.objectContaining(expected)]);
    expect(finishedIn(onA)).toEqual([expect.objectContaining(expected)]);
    expect(finishedIn(everyA)).toEqual([expect.objectContaining(expected)]);
    expect(await waiting).toMatchObject({ status: 'interrupted' });
    expect(await app.agent.result(run_id)).toMatchObject({ status: 'interrupted' });
    const line = app.memoryLog.records.find((r) => r.message === 'run finished');
    expect(line).toMatchObject({ status: 'interrupted', reason: 'owner gone' });
  });

  it('STORE-PG-743: the store lost at the run’s finish and the service closed while the finish waits for it: the store back within the close’s wait, the finish (its last step end with it) is written then: the run completed, its message finished with its usage, `step.finished` stored (was: the first try after the close began gave up, the step end and the finish written apart and refused, the row left running)', async () => {
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    let pgApp: Awaited<ReturnType<typeof agentApp>>['app'] | undefined;
    let backAt: number | undefined;
    const losing = losingAtFinish(
      sql,
      () => pgApp,
      () => backAt !== undefined && Date.now() >= backAt,
    );
    const { app } = await agentApp([answer()], { postgres: losing.client });
    pgApp = app;
    const session = await app.sessions.create({ title: 'held' });
    const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
    await untilLogged(app, 'run finish waits for the store');
    // The close begins (its runs' wait: 5 s); the store is back 0.7 s later, after the finish's
    // next try (0.5 s after its first).
    const closed = app.close();
    backAt = Date.now() + 700;
    await closed;

    const messages = app.memoryLog.records.map((r) => r.message);
    expect(messages).toContain('run finish recorded after the store came back');
    expect(messages).not.toContain('run finalize failed');
    const row = await sql.one<{ status: string; steps: number }>(
      'SELECT status, steps FROM agent_runs WHERE id = $1',
      [run_id],
    );
    expect(row).toEqual({ status: 'completed', steps: 1 });
    const events = await sql.query<{ type: string }>(
      'SELECT type FROM agent_run_events WHERE run_id = $1 ORDER BY seq',
      [run_id],
    );
    expect(events.map((e) => e.type).slice(-2)).toEqual(['step.finished', 'run.finished']);
    const assistant = await sql.query<{ finished_at: unknown; usage: unknown }>(
      "SELECT finished_at, usage FROM messages WHERE session_id = $1 AND role = 'assistant'",
      [session.id],
    );
    expect(assistant).toHaveLength(1);
    expect(assistant[0]?.finished_at).not.toBeNull();
  }, 30_000);

  it('STORE-PG-744: the store lost at the run’s finish and not back within the close’s wait: the close ends (no hang) and says once what of the run’s end is lost: its row left running for a recovery, `run.finished`, the kept step end (its messages and usage, `step.finished`, its events) (was: written apart, refused, logged `run finalize failed` only)', async () => {
    const sql = await migratedDatabase(pg.cluster());
    closers.push(() => sql.close());
    let pgApp: Awaited<ReturnType<typeof agentApp>>['app'] | undefined;
    const losing = losingAtFinish(
      sql,
      () => pgApp,
      () => false,
    );
    const { app } = await agentApp([answer()], { postgres: losing.client });
    pgApp = app;
    const session = await app.sessions.create({ title: 'held' });
    const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
    await untilLogged(app, 'run finish waits for the store');
    await app.close();

    const lost = app.memoryLog.records.filter(
      (r) => r.message === 'run end lost at the close: the store unreachable',
    );
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ run_id, session_id: session.id });
    expect(lost[0]?.lost).toEqual(
      expect.arrayContaining([
        'the run’s end (its row stays running until a recovery marks it interrupted)',
        'run.finished',
        'step.finished',
      ]),
    );
    const row = await sql.one<{ status: string }>('SELECT status FROM agent_runs WHERE id = $1', [run_id]);
    expect(row?.status).toBe('running');
  }, 30_000);

  it('STORE-PG-780: a run that gave its workspace lease up (its finish cannot carry its last step end, sent alone first) with the store lost at that send: the step end is kept and written once the store is back, then the finish: the run completed, its message finished with its usage, one `step.finished` of the step; messages, run events, row and the session log SQLite’s (was: the run failed, its message and deltas lost)', async () => {
    const { sqlite, sql, losing, app, session, run_id, result } = await leasedLosingStepEnd(false);

    // The lease was taken and given up: the step end went alone, and the store was lost there.
    expect(losing.sent.some((text) => /DELETE FROM workspace_leases/.test(text))).toBe(true);
    expect(losing.lost.length).toBeGreaterThanOrEqual(1);
    expect(losing.lost[0]).toMatch(/step/i);
    expect(app.memoryLog.records.filter((r) => r.message === 'run finish waits for the store')).toHaveLength(
      1,
    );
    expect(result).toMatchObject({ status: 'completed', text: 'hello there' });
    const run = await stored(app, session.id, run_id);
    expect(run).toEqual(await stored(sqlite.app, sqlite.sessionId, sqlite.runId));
    expect(run.events.filter((e) => e.endsWith(' step.finished'))).toHaveLength(2);
    const log = await loggedAsOnSqlite(
      sql,
      { app, sessionId: session.id },
      { app: sqlite.app, sessionId: sqlite.sessionId },
    );
    expect(
      log.filter((e) => e.type === 'message.delta').map((e) => JSON.parse(String(e.payload)).delta),
    ).toEqual(['hello', ' there']);
  });

  it('STORE-PG-781: as STORE-PG-780 but the step end sent alone commits and its answer is lost: the retry finds its `step.finished` stored and sends nothing twice: one `step.finished` of the step, one assistant message of its text; messages, run events, row and the session log SQLite’s (was: the run failed)', async () => {
    const { sqlite, sql, losing, app, session, run_id, result } = await leasedLosingStepEnd(true);

    expect(losing.lost.length).toBeGreaterThanOrEqual(1);
    expect(result).toMatchObject({ status: 'completed', text: 'hello there' });
    const run = await stored(app, session.id, run_id);
    expect(run).toEqual(await stored(sqlite.app, sqlite.sessionId, sqlite.runId));
    expect(run.events.filter((e) => e.endsWith(' step.finished'))).toHaveLength(2);
    await loggedAsOnSqlite(
      sql,
      { app, sessionId: session.id },
      { app: sqlite.app, sessionId: sqlite.sessionId },
    );
  });

  for (const [id, committed] of [
    ['STORE-PG-782', false],
    ['STORE-PG-783', true],
  ] as const)
    it(`${id}: as STORE-PG-730 (another node finishes the run while this one waits for the store), and the store is lost again at the last step end sent alone after it${committed ? ', that send committed, its answer lost' : ''}: the step end is kept and, the store back, checked and written once: the step’s message finished with its text and usage, one \`step.finished\`, its deltas in the log, nothing said lost (was: logged \`run last step end lost\`${committed ? '' : ', none of it stored'})`, async () => {
      let again!: ReturnType<typeof losingAgain>;
      const { app, session, run_id } = await finishedElsewhere((client, elsewhere) => {
        again = losingAgain(client, elsewhere, committed);
        return again.client;
      });

      expect(again.state.lost).toBe(true);
      expect(again.state.down).toBe(false);
      const run = await stored(app, session.id, run_id);
      expect(run.run.status).toBe('interrupted');
      expect(run.events.filter((e) => e.endsWith(' step.finished'))).toHaveLength(1);
      expect(run.messages.filter((m) => m[0] === 'assistant')).toEqual([
        [
          'assistant',
          [{ type: 'text', text: 'hello there' }],
          { input_tokens: 100, output_tokens: 20, reasoning_tokens: 0, cached_input_tokens: 0 },
          true,
        ],
      ]);
      const log = (await app.bus.replay(session.id, 0)).events;
      expect(
        log.filter((e) => e.type === 'message.delta').map((e) => (e.payload as { delta: string }).delta),
      ).toEqual(['hello', ' there']);
      // Each once: the prompt, the step's message, its deltas, completion and gauge, the finish.
      expect(log.map((e) => e.type).slice(log.findIndex((e) => e.type === 'run.started'))).toEqual([
        'run.started',
        'message.created',
        'message.completed',
        'message.created',
        'message.delta',
        'message.delta',
        'message.completed',
        'context.usage',
        'run.finished',
        'state.changed',
      ]);
      const messages = app.memoryLog.records.map((r) => r.message);
      expect(messages).not.toContain('run last step end lost');
      expect(messages).not.toContain('run finalize failed');
    });

  it('STORE-PG-702: the service closed while its run’s last step end waits for the run’s finish (held past the close’s wait, its own pool): the step end is written before the store closes (the stop’s release sends it alone); after a restart the run is interrupted with the step’s message, its deltas, `step.finished` and its usage stored, the log, messages, events and row SQLite’s for a run interrupted there', async () => {
    const sqlite = await closedWhileHeld(undefined, closers);
    const db = await migratedInPlace(pg.cluster());
    closers.push(() => db.close());
    const postgres = await closedWhileHeld(db.url, closers);

    const run = await stored(postgres.app, postgres.sessionId, postgres.runId);
    expect(run).toEqual(await stored(sqlite.app, sqlite.sessionId, sqlite.runId));
    expect(run.run.status).toBe('interrupted');
    expect(run.events.slice(-2).map((e) => e.split(' ')[1])).toEqual(['step.finished', 'run.interrupted']);
    expect(run.messages.at(-1)).toEqual([
      'assistant',
      [{ type: 'text', text: 'hello there' }],
      { input_tokens: 100, output_tokens: 20, reasoning_tokens: 0, cached_input_tokens: 0 },
      true,
    ]);
    const log = await loggedAsOnSqlite(
      db.sql,
      { app: postgres.app, sessionId: postgres.sessionId },
      { app: sqlite.app, sessionId: sqlite.sessionId },
    );
    expect(log.filter((e) => e.type === 'message.delta')).toHaveLength(2);
    // Nothing held was left for a finish that did not come.
    expect(postgres.closed.memoryLog.records.map((r) => r.message)).not.toContain(
      'held step ends not written before the close',
    );
  }, 120_000); // two services each closed at the end of its 5 s wait, two restarts: 21–23 s on a loaded CI box
});
