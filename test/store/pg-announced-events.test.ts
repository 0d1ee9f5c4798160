/**
 * Session events in the run ledger's statements on PostgreSQL (issue 18 item 6, p-pgstep4): a
 * tool's `tool.started` / `tool.finished` session event written with its run event
 * (`RunLedger.appendAnnounced`), and a step end's `message.completed`s and `context.usage`
 * appended last in the step end's one statement (`updateAndAppendAfter`'s `announce`), both
 * through the bus's `joinAll` when its write queue is idle. Pinned: one statement, the same rows
 * and events as the separate writes, each event delivered once with the log's id in publish
 * order, its NOTIFY sent; a busy bus publishes as before (order kept); a missing run still logs
 * the session event; a step end that writes nothing logs and delivers none of its events; a real
 * run's tool steps send fewer statements, with the same events in the same order.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/events/ring';
import type { SessionStore } from '../../src/sessions/types';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { echoSteps } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import {
  driverStatements,
  loggedEvents,
  migratedDatabase,
  noticesOn,
  postgresForFile,
  recordingClient,
} from '../helpers/postgres';
import { appendStepMessages, sessionWithRun } from '../helpers/step-messages';
import { until } from '../helpers/until';

/** A step end's part of a statement: its message updates, or its session usage when it has no message to patch (p-pgnopatch). */
const STEP_END_PART = /UPDATE messages|prompt_tokens = prompt_tokens \+/;

const pg = postgresForFile();

/** A run event and the bus's append in one statement (`insertEventWith`). */
const WITH_RUN_EVENT = /svc_append_run_event[\s\S]*svc_append_events_across/;
/** The step end's statement with its events appended last. */
const STEP_END_ANNOUNCED = /UPDATE messages[\s\S]*UPDATE agent_runs[\s\S]*svc_append_events_across/;
/** The bus's own append. */
const ALONE = /^SELECT event_id, previous_id FROM svc_append_events_across/;

const tokens = { input_tokens: 120, output_tokens: 30, reasoning_tokens: 0, cached_input_tokens: 0 };
const finished = { step: 1, finish_reason: 'tool-calls', tool_calls: 1, usage: tokens, cost: 0.25 };
const patch = { steps: 1, usage: { ...tokens }, cost: 0.25 };

type App = Awaited<ReturnType<typeof makeTestApp>>;

/** A session with a running run. */
const runOf = (app: App) => sessionWithRun(app, 'announced');

/**
 * `act` once the bus is idle: its own notices (the session's creation) come back and are taken
 * first; tried again (a notice can land in between) until a statement matches `joined`.
 */
async function whenIdle<T>(app: App, sent: string[], joined: RegExp, act: () => Promise<T>): Promise<T> {
  let result: T | undefined;
  for (let attempt = 0; attempt < 5; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    await app.bus.flush();
    sent.length = 0;
    result = await act();
    await app.bus.flush();
    if (sent.some((text) => joined.test(text))) break;
  }
  return result as T;
}

describe.skipIf(!pg.available)('session events in the run ledger`s statements (PostgreSQL)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function app(sent: string[]) {
    const sql = await migratedDatabase(pg.cluster());
    const made = await makeTestApp({ postgres: recordingClient(sql, sent) });
    closers.push(async () => {
      await made.close();
      await sql.close();
    });
    return { app: made, sql };
  }

  it('STORE-PG-210: an idle bus: a run event and its session event in one statement, delivered once with the log id, in order, notified', async () => {
    const sent: string[] = [];
    const { app: a, sql } = await app(sent);
    const notices = await noticesOn(sql.dedicated('svc-test-listen'), 'svc_events', closers);
    const { session, run } = await runOf(a);
    const seen: SessionEvent[] = [];
    a.bus.subscribe(session.id, (event) => seen.push(event));
    const appendAnnounced = a.runs.appendAnnounced;
    expect(appendAnnounced).toBeTypeOf('function');

    const payload = { tool_call_id: 'c1', tool: 'echo', title: 'echo hi' };
    const event = {
      session_id: session.id,
      run_id: run.id,
      tool_call_id: 'c1',
      tool: 'echo',
      title: 'echo hi',
    };
    const appended = await whenIdle(a, sent, WITH_RUN_EVENT, async () => {
      seen.length = 0;
      const written = await appendAnnounced?.(run.id, 'tool.started', payload, {
        sessionId: session.id,
        type: 'tool.started',
        payload: event,
      });
      a.bus.publish(session.id, 'after', {});
      return written;
    });

    // One statement for both; the bus's own append only for `after`.
    expect(sent.filter((text) => WITH_RUN_EVENT.test(text))).toHaveLength(1);
    expect(sent.filter((text) => ALONE.test(text))).toHaveLength(1);
    // The run event as `append` writes it.
    const runEvents = await a.runs.events(run.id);
    expect(runEvents.at(-1)).toEqual(appended);
    expect(appended).toMatchObject({ run_id: run.id, session_id: session.id, type: 'tool.started', payload });
    expect(appended?.seq).toBe((runEvents.at(-2)?.seq ?? 0) + 1);
    // The session event: logged once, delivered once with the log's id, before `after`.
    const rows = await loggedEvents(sql, session.id);
    expect(rows.filter((r) => r.type === 'tool.started')).toHaveLength(1);
    expect(seen.map((e) => [e.id, e.type])).toEqual(rows.slice(-2).map((r) => [Number(r.id), r.type]));
    expect(seen.map((e) => e.type)).toEqual(['tool.started', 'after']);
    expect(seen[0].payload).toEqual(event);
    expect(JSON.parse(rows[rows.length - 2].payload)).toEqual(event);
    await until(() => notices.includes(`${session.id}:${seen[0].id}`));
  });

  it('STORE-PG-211: a busy bus: the session event is published, then the run event appended, publish order kept', async () => {
    const sent: string[] = [];
    const { app: a, sql } = await app(sent);
    const { session, run } = await runOf(a);
    await a.bus.flush();
    const seen: SessionEvent[] = [];
    a.bus.subscribe(session.id, (event) => seen.push(event));
    sent.length = 0;
    // Queued and not yet written: the tool's event must come after it.
    a.bus.publish(session.id, 'before', {});
    const appended = await a.runs.appendAnnounced?.(
      run.id,
      'tool.finished',
      { tool_call_id: 'c1' },
      {
        sessionId: session.id,
        type: 'tool.finished',
        payload: { session_id: session.id, tool_call_id: 'c1' },
      },
    );
    a.bus.publish(session.id, 'after', {});
    await a.bus.flush();
    expect(sent.filter((text) => WITH_RUN_EVENT.test(text))).toHaveLength(0);
    expect(appended).toMatchObject({ type: 'tool.finished', payload: { tool_call_id: 'c1' } });
    expect((await a.runs.events(run.id)).at(-1)).toEqual(appended);
    const rows = await loggedEvents(sql, session.id);
    expect(rows.slice(-3).map((r) => r.type)).toEqual(['before', 'tool.finished', 'after']);
    expect(seen.map((e) => [e.id, e.type])).toEqual(rows.slice(-3).map((r) => [Number(r.id), r.type]));
  });

  it('STORE-PG-212: a missing run: not_found, the session event still logged and delivered', async () => {
    const sent: string[] = [];
    const { app: a, sql } = await app(sent);
    const { session } = await runOf(a);
    const seen: SessionEvent[] = [];
    a.bus.subscribe(session.id, (event) => seen.push(event));
    let failure: unknown;
    await whenIdle(a, sent, WITH_RUN_EVENT, async () => {
      seen.length = 0;
      failure = await a.runs
        .appendAnnounced?.(
          'run_gone',
          'tool.started',
          {},
          { sessionId: session.id, type: 'tool.started', payload: { n: 1 } },
        )
        .catch((error: unknown) => error);
    });
    expect(sent.filter((text) => WITH_RUN_EVENT.test(text))).toHaveLength(1);
    expect(failure).toMatchObject({ code: 'not_found', message: 'run_id: no run "run_gone"' });
    const rows = await loggedEvents(sql, session.id);
    expect(rows.at(-1)).toMatchObject({ type: 'tool.started', payload: '{"n":1}' });
    expect(seen.map((e) => [e.id, e.type])).toEqual([[Number(rows.at(-1)?.id), 'tool.started']]);
    expect(await sql.query('SELECT 1 FROM agent_run_events WHERE run_id = $1', ['run_gone'])).toEqual([]);
  });

  it('STORE-PG-213: a step end announcing its events: one statement, the events of the separate publishes, in order, delivered once', async () => {
    const sent: string[] = [];
    const { app: a, sql } = await app(sent);
    const { closeStepWrite } = a.sessions as SessionStore;
    const after = a.runs.updateAndAppendAfter?.bind(a.runs);
    if (!closeStepWrite || !after) throw new Error('no step end in one statement');
    const { session, run } = await runOf(a);
    const { assistant, tool } = await appendStepMessages(a.sessions, session.id, run.id);
    const close = {
      sessionId: session.id,
      messages: [
        { id: assistant.id, patch: { usage: tokens, cost: 0.25, finished: true } },
        { id: tool.id, patch: { finished: true } },
      ],
      usage: { input_tokens: 120, output_tokens: 30, cost: 0.25 },
    };
    const events = [
      {
        type: 'message.completed',
        payload: { session_id: session.id, message_id: assistant.id, run_id: run.id },
      },
      { type: 'message.completed', payload: { session_id: session.id, message_id: tool.id, run_id: run.id } },
      { type: 'context.usage', payload: { session_id: session.id, run_id: run.id, input_tokens: 150 } },
    ];
    const seen: SessionEvent[] = [];
    a.bus.subscribe(session.id, (event) => seen.push(event));
    const written = await whenIdle(a, sent, STEP_END_ANNOUNCED, async () => {
      seen.length = 0;
      const answer = await after(run.id, patch, 'step.finished', finished, closeStepWrite(close), {
        sessionId: session.id,
        events,
      });
      a.bus.publish(session.id, 'after', {});
      return answer;
    });
    expect(written.announced).toBe(true);
    expect(sent.filter((text) => STEP_END_ANNOUNCED.test(text))).toHaveLength(1);
    expect(sent.filter((text) => ALONE.test(text))).toHaveLength(1); // `after`'s
    // The step end's rows and answers as without the events.
    expect(written.before?.prompt_tokens).toBe(120);
    expect(written.run.steps).toBe(1);
    expect(written.event).toMatchObject({ type: 'step.finished', payload: finished });
    const finishedAt = await sql.query<{ done: boolean }>(
      'SELECT finished_at IS NOT NULL AS done FROM messages WHERE session_id = $1 ORDER BY row_seq',
      [session.id],
    );
    expect(finishedAt.map((r) => r.done)).toEqual([true, true]);
    // The events: logged in their order, each once, delivered once with its id, before `after`.
    const rows = (await loggedEvents(sql, session.id)).slice(-4);
    expect(rows.map((r) => [r.type, JSON.parse(r.payload)])).toEqual([
      ...events.map((e) => [e.type, e.payload]),
      ['after', {}],
    ]);
    expect(seen.map((e) => [e.id, e.type, e.payload])).toEqual(
      rows.map((r) => [Number(r.id), r.type, JSON.parse(r.payload)]),
    );
  });

  it('STORE-PG-214: a step end that writes nothing (a missing message) logs and delivers none of its events; the bus goes on', async () => {
    const sent: string[] = [];
    const { app: a, sql } = await app(sent);
    const { closeStepWrite } = a.sessions as SessionStore;
    const after = a.runs.updateAndAppendAfter?.bind(a.runs);
    if (!closeStepWrite || !after) throw new Error('no step end in one statement');
    const { session, run } = await runOf(a);
    const seen: SessionEvent[] = [];
    a.bus.subscribe(session.id, (event) => seen.push(event));
    let failure: unknown;
    await whenIdle(a, sent, STEP_END_ANNOUNCED, async () => {
      seen.length = 0;
      failure = await after(
        run.id,
        patch,
        'step.finished',
        finished,
        closeStepWrite({ sessionId: session.id, messages: [{ id: 'msg_gone', patch: { finished: true } }] }),
        {
          sessionId: session.id,
          events: [{ type: 'message.completed', payload: { message_id: 'msg_gone' } }],
        },
      ).catch((error: unknown) => error);
      a.bus.publish(session.id, 'after', {});
    });
    expect(sent.filter((text) => STEP_END_ANNOUNCED.test(text))).toHaveLength(1);
    expect(failure).toMatchObject({ code: 'not_found', message: 'message_id: no message "msg_gone"' });
    const rows = await loggedEvents(sql, session.id);
    expect(rows.map((r) => r.type)).not.toContain('message.completed');
    expect(seen.map((e) => e.type)).toEqual(['after']);
    expect(seen[0].id).toBe(Number(rows.at(-1)?.id));
    expect((await a.runs.events(run.id)).map((e) => e.type)).not.toContain('step.finished');
  });

  it('STORE-PG-215: a run`s tool steps on a PostgreSQL App: 7 statements a step (at most 8), the session events in the same order', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const steps = 6;
    const turns = echoSteps(steps);
    const { app: a } = await agentApp(turns, { extraTools: [echoTool], postgres: sql });
    closers.push(async () => {
      await a.close();
      await sql.close();
    });
    const session = await a.sessions.create({ title: 'steps' });
    await a.bus.flush();
    const seen: SessionEvent[] = [];
    a.bus.subscribe(session.id, (event) => seen.push(event));
    const driver = driverStatements();
    let sent: string[];
    try {
      const { run_id } = await a.agent.send({ sessionId: session.id, prompt: 'go' });
      expect((await a.agent.wait(run_id)).status).toBe('completed');
      await a.bus.flush();
      sent = [...driver.sent];
    } finally {
      driver.restore();
    }
    // The statements from the second step's end to the last tool step's end: whole tool steps.
    const ends = sent.flatMap((text, i) =>
      STEP_END_PART.test(text) && /UPDATE agent_runs/.test(text) ? [i] : [],
    );
    expect(ends.length).toBe(steps + 1);
    const between = ends[steps - 1] - ends[1];
    // 7 with every join made: phase, the assistant's INSERT (message.created), model_calls,
    // tool.started, tool.finished, the tool message's INSERT (message.created), the step end (its
    // completions, context.usage); 10.5 apart. A join the bus refuses (its queue busy at that
    // moment, which load can cause) costs one more statement: allowed for, up to one a step.
    expect(between / (steps - 2)).toBeLessThanOrEqual(8);
    const steady = sent.slice(ends[1] + 1, ends[steps - 1] + 1);
    expect(steady.filter((text) => ALONE.test(text)).length).toBeLessThanOrEqual(steps - 2);
    expect(
      steady.filter((text) => WITH_RUN_EVENT.test(text) && !/UPDATE agent_runs/.test(text)).length,
    ).toBeGreaterThanOrEqual(steps - 2);
    expect(steady.filter((text) => STEP_END_ANNOUNCED.test(text)).length).toBeGreaterThanOrEqual(1);

    // Every logged event delivered once, in id order; each tool step's events in the old order.
    const rows = await loggedEvents(sql, session.id);
    expect(seen.map((e) => e.id)).toEqual(rows.slice(rows.length - seen.length).map((r) => Number(r.id)));
    const types = rows.map((r) => r.type);
    const first = types.indexOf('tool.started');
    for (let step = 0; step < steps; step++) {
      const at = first + step * 7;
      expect(types.slice(at - 1, at + 6)).toEqual([
        'message.created',
        'tool.started',
        'tool.finished',
        'message.created',
        'message.completed',
        'message.completed',
        'context.usage',
      ]);
    }
    const messages = await a.sessions.messages(session.id);
    const completed = rows
      .filter((r) => r.type === 'message.completed')
      .map((r) => JSON.parse(r.payload).message_id);
    expect(completed).toEqual(messages.map((m) => m.id));
    const runEvents = (await a.runs.events((await a.runs.list({ session_id: session.id }))[0].id)).map(
      (e) => e.type,
    );
    expect(runEvents.filter((t) => t === 'tool.started')).toHaveLength(steps);
    expect(runEvents.filter((t) => t === 'tool.finished')).toHaveLength(steps);
  });
});
