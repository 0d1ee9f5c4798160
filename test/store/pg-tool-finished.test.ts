/**
 * A call's `tool.finished` in its result's tool message INSERT on PostgreSQL (issue 18 item 6,
 * p-pgstep7): the tool's bridge records the step's first result itself as the call finishes
 * (`recordResult`, src/agent/run-stream.ts; `StepRecorder.finishedResult`), the run event a
 * following write of that INSERT (`RunLedger.followingEvent`), the session event appended before
 * the message's `message.created` in the same call (`appendAnnounced`'s `preceding`). Pinned: no
 * statement of its own for such a `tool.finished`; the same run events, session events and
 * messages, in the same order, as the same script on SQLite (a later result of the step, an
 * erroring call and a call that stops the run included); the store's append with preceding events
 * writes them all or none.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import type { SessionEvent } from '../../src/events/bus';
import type { SqlClient } from '../../src/store/postgres/client';
import { echoTool, throwingTool } from '../helpers/agent-harness';
import { echoSteps, reply, type ScriptEntry } from '../helpers/fake-provider';
import { QUIET, recordedApp, storeRun, storeRunShape } from '../helpers/pg-recorded-app';
import { loggedEvents, postgresForFile } from '../helpers/postgres';
import { sessionWithRun } from '../helpers/step-messages';

const pg = postgresForFile();

/** A run event with its session event, a statement of their own (`insertEventWith`). */
// (p-pgfirst: a tool step's `model_calls` row may ride first in `tool.started`'s, `svc_riding`.)
const EVENT_ALONE =
  /^WITH (svc_riding AS \(INSERT INTO model_calls \([^)]*\) VALUES \([^)]*\)\),\s*)?a AS \(SELECT a\.event_id, a\.event_seq, r\.session_id\s+FROM agent_runs/;
/** A message INSERT carrying a run event. */
const MESSAGE_WITH_RUN_EVENT = /INSERT INTO messages[\s\S]*svc_append_run_event/;

describe.skipIf(!pg.available)('a call`s tool.finished in its tool message`s statement (PostgreSQL)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** The script run once on PostgreSQL or SQLite (test/helpers/pg-recorded-app.ts `storeRun`). */
  const runOnce = (
    script: ScriptEntry[],
    options: { postgres: boolean; config?: Record<string, unknown>; started?: (app: App) => void },
  ) =>
    storeRun(options.postgres ? pg.cluster() : undefined, script, {
      tools: [echoTool, throwingTool],
      title: 'finished',
      closers,
      ...(options.config ? { config: options.config } : {}),
      ...(options.started ? { started: options.started } : {}),
    });
  const shape = storeRunShape;
  /**
   * `make`'s script run once (`runOnce`), each reply streamed once the bus has stored what was
   * published before the model's request (STORE-PG-275's gate, below): a step's first join then
   * finds the bus idle, as the counts assume. Fresh replies each run (a gate is the run's own).
   */
  const runGated = (
    make: () => ScriptEntry[],
    options: { postgres: boolean; config?: Record<string, unknown> },
    test: string,
  ) => {
    let app: App | undefined;
    const script = make().map(
      (entry): ScriptEntry =>
        (request) => {
          if (!app) throw new Error(`${test}: the model asked before the run started`);
          return (typeof entry === 'function' ? entry(request) : entry).pauseAt(0, app.bus.flush());
        },
    );
    return runOnce(script, {
      ...options,
      started: (a) => {
        app = a;
      },
    });
  };

  it('STORE-PG-273: a tool step`s tool.finished rides in its tool message INSERT: no statement of its own, same events and order as SQLite, announced (tool.started alone 4 → 0, p-pgride)', async () => {
    const steps = 4;
    // Each step's answer once the bus is idle (`runGated`): like STORE-PG-275's, a step's first
    // join that finds the bus still storing the run's start events is published instead, its run
    // event appended apart (p-flake2).
    const lite = await runGated(() => echoSteps(steps), { postgres: false }, 'STORE-PG-273');
    const r = await runGated(() => echoSteps(steps), { postgres: true }, 'STORE-PG-273');
    expect(r.status).toBe('completed');

    // Without it: a tool.started and a tool.finished statement a step (8); then tool.started alone
    // (4); since p-pgride tool.started rides in its assistant message's INSERT (0).
    expect(r.sent.filter((text) => EVENT_ALONE.test(text))).toHaveLength(0);
    // The assistant INSERTs (with their phase and tool.started; the last step's with its phase) and
    // the tool INSERTs (with tool.finished).
    expect(r.sent.filter((text) => MESSAGE_WITH_RUN_EVENT.test(text))).toHaveLength(2 * steps + 1);

    expect(shape(r)).toEqual(shape(lite));
    const seqs = r.runEvents.map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    const finished = r.runEvents.filter((e) => e.type === 'tool.finished');
    expect(finished).toHaveLength(steps);
    for (const event of finished) {
      expect(event.payload).toMatchObject({ tool: 'echo', is_error: false });
      expect(event.payload.duration_ms).toBeTypeOf('number');
      // Right after its call's start, as before.
      expect(r.runEvents[r.runEvents.indexOf(event) - 1]).toMatchObject({
        type: 'tool.started',
        payload: { tool_call_id: event.payload.tool_call_id },
      });
    }
    // Announced to the ledger's listeners as stored.
    expect(r.heard.filter((e) => e.type === 'tool.finished')).toEqual(finished);
    // The session's log: each tool.finished right before its tool message's message.created, ids in order.
    const rows = await loggedEvents(r.sql as SqlClient, r.session.id);
    const tools = r.messages.filter((m) => m.role === 'tool');
    expect(tools).toHaveLength(steps);
    for (const [i, tool] of tools.entries()) {
      expect(tool.parts).toEqual([expect.objectContaining({ type: 'tool-result', output: `echo: hi ${i}` })]);
      const created = r.sessionEvents.find(
        (e) => e.type === 'message.created' && e.payload.message_id === tool.id,
      );
      const at = rows.findIndex((row) => Number(row.id) === created?.id);
      expect(rows[at - 1]?.type).toBe('tool.finished');
      expect(Number(rows[at - 1]?.id)).toBe((created?.id ?? 0) - 1);
    }
  });

  it('STORE-PG-274: appendAnnounced with preceding events and a following run event: one statement, events in order; no session: none of them', async () => {
    const sent: string[] = [];
    const { app: a, sql } = await recordedApp(pg.cluster(), sent, closers);
    const { session, run } = await sessionWithRun(a, 'preceding');
    const follow = a.runs.followingEvent;
    const appendAnnounced = a.sessions.appendAnnounced;
    if (!follow || !appendAnnounced) throw new Error('no followingEvent / appendAnnounced on PostgreSQL');
    const seen: SessionEvent[] = [];
    a.bus.subscribe(session.id, (event) => seen.push(event));
    const input = (sessionId: string) => ({
      session_id: sessionId,
      role: 'tool' as const,
      parts: [
        {
          type: 'tool-result' as const,
          tool_call_id: 'c1',
          tool: 'echo',
          output: 'echo: hi',
          is_error: false,
        },
      ],
      run_id: run.id,
      finished: false,
    });
    const payload = (id: string) => ({
      session_id: session.id,
      message_id: id,
      role: 'tool',
      run_id: run.id,
    });
    const finished = {
      session_id: session.id,
      run_id: run.id,
      tool_call_id: 'c1',
      tool: 'echo',
      is_error: false,
    };

    const before = await a.runs.events(run.id);
    const following = follow(run.id, 'tool.finished', { tool_call_id: 'c1', tool: 'echo' }, Date.now());
    await a.bus.flush();
    seen.length = 0;
    sent.length = 0;
    const message = await appendAnnounced(input(session.id), 'message.created', payload, following.write, [
      { type: 'tool.finished', payload: finished },
    ]);
    await a.bus.flush();
    // One statement: the message, the run event, both session events (other statements of the
    // node, a heartbeat, may come in between).
    const inserts = sent.filter((text) => /INSERT INTO messages/.test(text));
    expect(inserts).toHaveLength(1);
    expect(inserts[0]).toMatch(MESSAGE_WITH_RUN_EVENT);
    expect(inserts[0]).toMatch(/svc_append_events_across/);
    expect(sent.filter((text) => /svc_append_(run_event|events_across)/.test(text))).toEqual(inserts);
    expect(following.written()).toMatchObject({
      type: 'tool.finished',
      seq: (before.at(-1)?.seq ?? 0) + 1,
    });
    expect((await a.runs.events(run.id)).at(-1)).toEqual(following.written());
    const rows = await loggedEvents(sql, session.id);
    expect(rows.slice(-2).map((row) => row.type)).toEqual(['tool.finished', 'message.created']);
    // Delivered once each, in order, with the log's ids.
    expect(seen.map((e) => [e.id, e.type])).toEqual(rows.slice(-2).map((row) => [Number(row.id), row.type]));
    expect(seen[0].payload).toEqual(finished);
    expect(seen[1].payload).toEqual(payload(message.id));

    // No such session: no message, no run event, no session event.
    const count = rows.length;
    const orphan = follow(run.id, 'tool.finished', { tool_call_id: 'c2', tool: 'echo' }, Date.now());
    seen.length = 0;
    await expect(
      appendAnnounced(input('ses_missing'), 'message.created', payload, orphan.write, [
        { type: 'tool.finished', payload: { ...finished, tool_call_id: 'c2' } },
      ]),
    ).rejects.toMatchObject({ code: 'not_found' });
    await a.bus.flush();
    expect(orphan.written()).toBeUndefined();
    expect(await a.runs.events(run.id)).toHaveLength(before.length + 1);
    expect(await loggedEvents(sql, session.id)).toHaveLength(count);
    expect(seen).toEqual([]);
  });

  it('STORE-PG-275: two calls in a step (the first erroring): its result rides, the second`s tool.finished alone; same as SQLite (alone 3 → 2, p-pgride)', async () => {
    // The step's answer streamed once the bus has stored the run's start events (run.started, the
    // prompt's message events): a call's event joins a statement only while the bus is idle
    // (`EventBus.joinAll`), else it is published and its run event appended apart (two statements
    // that are not counted here, and every later join of the step behind them). Without the gate,
    // whether the bus was still writing when the first call started was the load's (Node 24 in CI:
    // 0 where 2; p-aftercommit).
    let app: App | undefined;
    const script = [
      () => {
        if (!app) throw new Error('STORE-PG-275: the model asked before the run started');
        return reply()
          .toolCall('explode', {})
          .toolCall('echo', { text: 'second' })
          .usage(100, 20)
          .pauseAt(0, app.bus.flush());
      },
      reply().text('done').usage(130, 10),
    ];
    const started = (a: App) => {
      app = a;
    };
    const lite = await runOnce(script, { postgres: false, started });
    const r = await runOnce(script, { postgres: true, started });
    expect(r.status).toBe('completed');
    // The second call's tool.started and tool.finished (an UPDATE of the tool message: alone); the
    // first call's tool.started rides in its assistant message's INSERT (p-pgride; was alone: 3).
    expect(r.sent.filter((text) => EVENT_ALONE.test(text))).toHaveLength(2);
    // The tool message's message.created: on SQLite written by the stream's part while the second
    // call starts (either before or after its tool.started); here with the first call's end.
    const created = (x: Awaited<ReturnType<typeof runOnce>>) => {
      const tool = x.messages.find((m) => m.role === 'tool');
      return (e: SessionEvent) => e.type === 'message.created' && e.payload.message_id === tool?.id;
    };
    const without = (x: Awaited<ReturnType<typeof runOnce>>) => {
      const isTool = created(x);
      return shape({ ...x, sessionEvents: x.sessionEvents.filter((e) => !isTool(e)) });
    };
    expect(without(r)).toEqual(without(lite));
    const types = r.sessionEvents
      .filter((e) => !QUIET.has(e.type))
      .map((e) => (created(r)(e) ? 'tool message' : e.type));
    expect(types.slice(types.indexOf('tool.finished'), types.indexOf('tool.finished') + 3)).toEqual([
      'tool.finished',
      'tool message',
      'tool.started',
    ]);
    const finished = r.runEvents.filter((e) => e.type === 'tool.finished');
    expect(finished.map((e) => [e.payload.tool, e.payload.is_error])).toEqual([
      ['explode', true],
      ['echo', false],
    ]);
    const seqs = r.runEvents.map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
  });

  it('STORE-PG-276: a call that stops the run (loop detected) writes its tool.finished alone, before loop.detected; same as SQLite (alone 3 → 1, p-pgride)', async () => {
    const same = () => reply().toolCall('echo', { text: 'again' }).usage(100, 20);
    const script = () => [same(), same(), same()];
    const config = { options: { loop_detection: { max_repeats: 2 } } };
    // Each step's answer once the bus is idle (`runGated`, as STORE-PG-273; p-flake2).
    const lite = await runGated(script, { postgres: false, config }, 'STORE-PG-276');
    const r = await runGated(script, { postgres: true, config }, 'STORE-PG-276');
    expect(r.status).toBe('failed');
    expect(shape(r)).toEqual(shape(lite));
    // The first step's tool.finished rides; the stopping call's is alone; both starts ride in their
    // assistant messages' INSERTs (p-pgride; were alone: 3).
    expect(r.sent.filter((text) => EVENT_ALONE.test(text))).toHaveLength(1);
    const types = r.runEvents.map((e) => e.type);
    expect(types.lastIndexOf('tool.finished')).toBeLessThan(types.indexOf('loop.detected'));
  });
});
