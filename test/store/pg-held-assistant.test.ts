/**
 * A tool step's assistant message held until its first tool starts, on PostgreSQL (issue 18 item
 * 6, p-pgride, src/agent/step-recorder.ts `startCall`): the message's INSERT (with its
 * `message.created`) and the call's `tool.started` (run event and session event) were two
 * statements back to back; the message now waits for the tool's start and its INSERT carries the
 * start, with the step's `phase` (`RunLedger.followingEvents`) and its `model_calls` row
 * (`withRiding`). Pinned: a tool step is one statement fewer (no `tool.started` of its own, no
 * assistant INSERT without it); the same run events, session events (`message.created` right
 * before its call's `tool.started`) and messages, in the same order, as SQLite; a step whose call
 * never starts (a call the model made wrongly) still writes its message before the result; the
 * store's append with following events, a riding insert and trailing session events writes them
 * in one statement, in order, and without the run only the message's side.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/events/bus';
import type { SqlClient } from '../../src/store/postgres/client';
import { withRiding } from '../../src/store/preceding-write';
import { createPostgresModelCallStore } from '../../src/telemetry/pg-model-call-store';
import { echoTool } from '../helpers/agent-harness';
import { echoSteps, reply, type ScriptEntry } from '../helpers/fake-provider';
import { modelCallRow, recordedApp, storeRun, storeRunShape } from '../helpers/pg-recorded-app';
import { loggedEvents, postgresForFile } from '../helpers/postgres';
import { sessionWithRun } from '../helpers/step-messages';

const pg = postgresForFile();

/** A run event with its session event in a statement of its own (`insertEventWith`: `tool.started`). */
const EVENT_ALONE =
  /^WITH (svc_riding AS \(INSERT INTO model_calls \([^)]*\) VALUES \([^)]*\)\),\s*)?a AS \(SELECT a\.event_id, a\.event_seq, r\.session_id\s+FROM agent_runs/;
/** A message INSERT. */
const MESSAGE = /INSERT INTO messages/;
/**
 * A message INSERT carrying the run events list (the step's phase and its tool's start), its
 * arrays parameters (a finish's own events go in a list of their own too, `ARRAY[…]`, p-pgserver).
 */
const MESSAGE_WITH_START =
  /INSERT INTO messages[\s\S]*svc_append_run_event_list\(r\.id, r\.session_id, \$\d+::text\[\]/;

describe.skipIf(!pg.available)('a tool step`s assistant message with its tool`s start (PostgreSQL)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** The script run once on PostgreSQL or SQLite (test/helpers/pg-recorded-app.ts `storeRun`). */
  const runOnce = (script: ScriptEntry[], postgres: boolean) =>
    storeRun(postgres ? pg.cluster() : undefined, script, { tools: [echoTool], title: 'held', closers });
  const shape = storeRunShape;

  it('STORE-PG-340: a tool step`s assistant INSERT carries its tool`s start (phase, tool.started, model call): one statement fewer a step, same events and order as SQLite, announced', async () => {
    const steps = 3;
    const script = echoSteps(steps);
    const lite = await runOnce(script, false);
    const r = await runOnce(script, true);
    expect(r.status).toBe('completed');

    // No tool.started of its own (base: one a step); every tool step's assistant INSERT carries its
    // start, the last step's (text) only its phase; the tool INSERTs their tool.finished.
    expect(r.sent.filter((text) => EVENT_ALONE.test(text))).toEqual([]);
    // The prompt's, then each tool step's two, then the last step's answer.
    const inserts = r.sent.filter((text) => MESSAGE.test(text));
    expect(inserts).toHaveLength(2 * steps + 2);
    const withStart = inserts.filter((text) => MESSAGE_WITH_START.test(text));
    expect(withStart).toHaveLength(steps);
    // The step's model call rides in it (no INSERT of its own, none with tool.started alone).
    for (const text of withStart) expect(text).toMatch(/svc_riding AS \(INSERT INTO model_calls/);
    expect(r.sent.filter((text) => /^INSERT INTO model_calls/.test(text))).toEqual([]);
    expect((await r.app.telemetry.ledger.calls({ runId: r.runId })).length).toBe(steps + 1);

    expect(shape(r)).toEqual(shape(lite));
    const seqs = r.runEvents.map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    // Announced to the ledger's listeners as stored, in order.
    const started = r.runEvents.filter((e) => e.type === 'tool.started');
    expect(started).toHaveLength(steps);
    expect(r.heard.filter((e) => e.type === 'tool.started' || e.type === 'phase')).toEqual(
      r.runEvents.filter((e) => e.type === 'tool.started' || e.type === 'phase'),
    );
    // The session's log: each assistant message's message.created, then its call's tool.started,
    // consecutive ids, delivered in that order.
    const rows = await loggedEvents(r.sql as SqlClient, r.session.id);
    const assistants = r.messages.filter((m) => m.role === 'assistant' && m.parts[0]?.type === 'tool-call');
    expect(assistants).toHaveLength(steps);
    for (const assistant of assistants) {
      const at = rows.findIndex(
        (row) => row.type === 'message.created' && JSON.parse(row.payload).message_id === assistant.id,
      );
      expect(at).toBeGreaterThan(-1);
      const next = rows[at + 1];
      expect(next?.type).toBe('tool.started');
      expect(Number(next?.id)).toBe(Number(rows[at]?.id) + 1);
      const call = assistant.parts[0] as { tool_call_id: string };
      expect(JSON.parse(String(next?.payload))).toMatchObject({
        tool_call_id: call.tool_call_id,
        tool: 'echo',
      });
    }
  });

  it('STORE-PG-341: a step whose call never starts (an unknown tool) writes its message before the call`s result, alone; then the next step`s rides; same as SQLite', async () => {
    const script = [
      reply().toolCall('no_such_tool', { x: 1 }).usage(100, 20),
      reply().toolCall('echo', { text: 'after' }).usage(110, 20),
      reply().text('done').usage(130, 10),
    ];
    const lite = await runOnce(script, false);
    const r = await runOnce(script, true);
    expect(r.status).toBe('completed');
    expect(shape(r)).toEqual(shape(lite));
    // The first step's message alone before its result (no tool started), carrying the run's
    // preparation writes and its `phase` (p-pgprep3: held with that `phase` from the step's start),
    // the second's with its start.
    const withEvents = r.sent.filter((text) => MESSAGE_WITH_START.test(text));
    expect(withEvents).toHaveLength(2);
    expect(withEvents[0]).toMatch(/INSERT INTO prompt_stack_builds/);
    expect(withEvents[1]).not.toMatch(/prompt_stack_builds/);
    expect(r.sent.filter((text) => EVENT_ALONE.test(text))).toEqual([]);
    const first = r.messages.slice(1, 3);
    expect(first.map((m) => [m.role, m.parts.map((p) => p.type)])).toEqual([
      ['assistant', ['tool-call']],
      ['tool', ['tool-result']],
    ]);
    const created = r.sessionEvents
      .filter((e) => e.type === 'message.created')
      .map((e) => e.payload.message_id);
    expect(created.indexOf(first[0]?.id)).toBeLessThan(created.indexOf(first[1]?.id));
    const seqs = r.runEvents.map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });

  it('STORE-PG-342: appendAnnounced with following events, a riding insert and trailing events: one statement, all in order; no run: the message side only', async () => {
    const sent: string[] = [];
    const { app: a, sql } = await recordedApp(pg.cluster(), sent, closers);
    const { session, run } = await sessionWithRun(a, 'trailing');
    const followList = a.runs.followingEvents;
    const appendAnnounced = a.sessions.appendAnnounced;
    if (!followList || !appendAnnounced)
      throw new Error('no followingEvents / appendAnnounced on PostgreSQL');
    const calls = createPostgresModelCallStore({ sql });
    const row = (id: string, runId: string) => modelCallRow(id, session.id, runId);
    const seen: SessionEvent[] = [];
    a.bus.subscribe(session.id, (event) => seen.push(event));
    const input = (runId: string) => ({
      session_id: session.id,
      role: 'assistant' as const,
      parts: [{ type: 'tool-call' as const, tool_call_id: 'c1', tool: 'echo', input: { text: 'hi' } }],
      run_id: runId,
      finished: false,
    });
    const payload = (runId: string) => (id: string) => ({
      session_id: session.id,
      message_id: id,
      role: 'assistant',
      run_id: runId,
    });
    const startedEvent = { session_id: session.id, run_id: run.id, tool_call_id: 'c1', tool: 'echo' };

    const before = await a.runs.events(run.id);
    const following = followList(run.id, [
      { type: 'phase', payload: { phase: 'model', step: 1 }, created_at: 1_000 },
      {
        type: 'tool.started',
        payload: { tool_call_id: 'c1', tool: 'echo', title: 'echo' },
        created_at: 2_000,
      },
    ]);
    let told = 0;
    const riding = calls.insertWrite?.(row('mc_1', run.id), () => told++);
    if (!riding) throw new Error('no insertWrite on PostgreSQL');
    await a.bus.flush();
    seen.length = 0;
    sent.length = 0;
    const message = await appendAnnounced(
      input(run.id),
      'message.created',
      payload(run.id),
      withRiding(following.write, riding),
      undefined,
      [{ type: 'tool.started', payload: startedEvent }],
    );
    await a.bus.flush();
    // One statement: message, model call, both run events, both session events.
    expect(sent.filter((text) => /INSERT INTO (messages|model_calls)|svc_append/.test(text))).toHaveLength(1);
    expect(told).toBe(1);
    expect((await calls.list({ limit: 10 })).map((c) => c.id)).toEqual(['mc_1']);
    const stored = following.written();
    expect(stored?.map((e) => [e.type, e.seq, e.created_at])).toEqual([
      ['phase', (before.at(-1)?.seq ?? 0) + 1, 1_000],
      ['tool.started', (before.at(-1)?.seq ?? 0) + 2, 2_000],
    ]);
    expect((await a.runs.events(run.id)).slice(-2)).toEqual(stored);
    const rows = await loggedEvents(sql, session.id);
    expect(rows.slice(-2).map((r) => r.type)).toEqual(['message.created', 'tool.started']);
    expect(seen.map((e) => [e.id, e.type])).toEqual(rows.slice(-2).map((r) => [Number(r.id), r.type]));
    expect(seen[0]?.payload).toEqual(payload(run.id)(message.id));
    expect(seen[1]?.payload).toEqual(startedEvent);

    // No such run: the message, its session events and the riding row; no run event.
    const count = (await a.runs.events(run.id)).length;
    const orphan = followList('run_missing', [
      { type: 'tool.started', payload: { tool_call_id: 'c2', tool: 'echo' }, created_at: 3_000 },
    ]);
    const alone = await appendAnnounced(
      input('run_missing'),
      'message.created',
      payload('run_missing'),
      withRiding(orphan.write, calls.insertWrite?.(row('mc_2', 'run_missing'), () => told++) ?? riding),
      undefined,
      [{ type: 'tool.started', payload: { ...startedEvent, tool_call_id: 'c2' } }],
    );
    await a.bus.flush();
    expect(orphan.written()).toBeUndefined();
    expect(told).toBe(2);
    expect((await a.sessions.messages(session.id)).map((m) => m.id)).toContain(alone.id);
    expect(await a.runs.events(run.id)).toHaveLength(count);
    expect((await loggedEvents(sql, session.id)).slice(-2).map((r) => r.type)).toEqual([
      'message.created',
      'tool.started',
    ]);
  });
});
