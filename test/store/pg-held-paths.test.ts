/**
 * The held tool result's other paths on PostgreSQL (issue 18 item 6, p-pgtoolend Left 3): a step's
 * only result is held for its step end's statement (`StepRecorder.finishedResult` → `'held'`), and
 * written alone first (`releaseTool`) by whatever needs it earlier, or put back when the step end's
 * statement fails (`heldCloseFailed`). Pinned for each path, against the same script on SQLite:
 * nothing lost or duplicated, the same run events (in seq order), session events and messages.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StepRecorder } from '../../src/agent/step-recorder';
import type { App } from '../../src/app';
import type { SessionEvent } from '../../src/events/bus';
import type { SqlClient } from '../../src/store/postgres/client';
import { echoTool } from '../helpers/agent-harness';
import { reply, type ScriptEntry } from '../helpers/fake-provider';
import { wrappedClient } from '../helpers/faulty-client';
import { makeTestApp } from '../helpers/make-test-app';
import { stopInTheGap, storeRun, storeRunShape } from '../helpers/pg-recorded-app';
import { migratedDatabase, postgresForFile, recordingClient } from '../helpers/postgres';

const pg = postgresForFile();

const MESSAGE_INSERT = /INSERT INTO messages/;
const STEP_END = /UPDATE agent_runs/;
/** The step end's statement carrying a held tool message. */
const heldEnd = (text: string) => /n AS \(INSERT INTO messages/.test(text) && STEP_END.test(text);

type Run = Awaited<ReturnType<typeof storeRun>>;

/** The run events' types in seq order, with their seqs consecutive from 1. */
function runTypes(r: Run): string[] {
  expect(r.runEvents.map((e) => e.seq)).toEqual(r.runEvents.map((_, i) => i + 1));
  return r.runEvents.map((e) => e.type);
}

/** Each call of the run's messages with its results (tool_call_id → outputs), to see none lost or doubled. */
function resultsByCall(r: Run): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const m of r.messages)
    for (const p of m.parts) {
      if (p.type === 'tool-call') out[p.tool_call_id] ??= [];
      if (p.type === 'tool-result') out[p.tool_call_id] = [...(out[p.tool_call_id] ?? []), String(p.output)];
    }
  return out;
}

/** A client whose first statement matching `fails` throws (nothing sent), as a failed statement would. */
function failingOnce(sql: SqlClient, fails: (text: string) => boolean, failed: string[]): SqlClient {
  const guard = <A extends unknown[], R>(send: (text: string, ...rest: A) => Promise<R>) => {
    return (text: string, ...rest: A): Promise<R> => {
      if (!failed.some((f) => f !== 'sqlite') && fails(text)) {
        failed.push(text);
        return Promise.reject(new Error('injected: step end failed'));
      }
      return send(text, ...rest);
    };
  };
  return wrappedClient(sql, guard);
}

/**
 * What the recorders did with a held result: `held` (the bridge answered so), `released` (written
 * alone, `releaseTool`), `put back` (its step end's statement failed, `heldCloseFailed`).
 */
function watchHeld() {
  const seen: string[] = [];
  const held = (recorder: StepRecorder) =>
    (recorder as unknown as { heldResult?: { created?: unknown } }).heldResult;
  const { releaseTool, heldCloseFailed, finishedResult } = StepRecorder.prototype;
  const finished = vi.spyOn(StepRecorder.prototype, 'finishedResult').mockImplementation(async function (
    this: StepRecorder,
    ...args: Parameters<StepRecorder['finishedResult']>
  ) {
    const out = await finishedResult.apply(this, args);
    if (out === 'held') seen.push('held');
    return out;
  });
  const release = vi.spyOn(StepRecorder.prototype, 'releaseTool').mockImplementation(function (
    this: StepRecorder,
    ...args: Parameters<StepRecorder['releaseTool']>
  ) {
    const out = releaseTool.apply(this, args);
    if (out) seen.push('released');
    return out;
  });
  const putBack = vi.spyOn(StepRecorder.prototype, 'heldCloseFailed').mockImplementation(function (
    this: StepRecorder,
  ) {
    if (held(this)?.created) seen.push('put back');
    heldCloseFailed.call(this);
  });
  return {
    seen,
    restore: () => {
      finished.mockRestore();
      release.mockRestore();
      putBack.mockRestore();
    },
  };
}

describe.skipIf(!pg.available)('the held tool result`s release paths (PostgreSQL against SQLite)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** The script on SQLite, then on PostgreSQL (with `pgOnly`), what happened to held results on each. */
  const both = async (
    script: () => ScriptEntry[],
    options: Omit<Parameters<typeof storeRun>[2], 'closers' | 'title'> = { tools: [echoTool] },
    pgOnly: Partial<Parameters<typeof storeRun>[2]> = {},
  ) => {
    const watch = watchHeld();
    try {
      const lite = await storeRun(undefined, script(), { ...options, title: 'held paths', closers });
      const liteHeld = [...watch.seen.splice(0)];
      const r = await storeRun(pg.cluster(), script(), {
        ...options,
        ...pgOnly,
        title: 'held paths',
        closers,
      });
      return { lite, r, liteHeld, held: watch.seen };
    } finally {
      watch.restore();
    }
  };

  it('STORE-PG-380: a step with two calls holds neither result (both calls are recorded before the first result): one tool message, each result once, run events as on SQLite', async () => {
    // svc's own driver runs a step's calls once its stream has ended, so both calls are recorded
    // before either result (streamText with SVC_STEP_DRIVER=sdk on the OpenAI-compatible and
    // Anthropic wires did the same here: tried). The release by a later call is pinned at the
    // recorder (STORE-PG-384).
    const script = () => [
      reply()
        .toolCall('echo', { text: 'a' }, 'call_a')
        .toolCall('echo', { text: 'b' }, 'call_b')
        .usage(100, 20),
      reply().text('done'),
    ];
    const { lite, r, liteHeld, held } = await both(script);
    expect(r.status).toBe('completed');
    expect(liteHeld).toEqual([]);
    expect(held).toEqual([]);
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    // The first result creates the tool message at the tool's end, with its tool.finished
    // (p-pgstep7), before the second call's start, as SQLite's result part does.
    const session = storeRunShape(r).session;
    const at = session.indexOf('tool.started');
    expect(session.slice(at, at + 5)).toEqual([
      'tool.started',
      'tool.finished',
      'message.created',
      'tool.started',
      'tool.finished',
    ]);
    const types = runTypes(r);
    // The bridge runs the calls in turn: the first result (its tool.finished) before the second start.
    const tools = r.runEvents
      .filter((e) => e.type === 'tool.started' || e.type === 'tool.finished')
      .map((e) => [e.type, e.payload.tool_call_id]);
    expect(tools).toEqual([
      ['tool.started', 'call_a'],
      ['tool.finished', 'call_a'],
      ['tool.started', 'call_b'],
      ['tool.finished', 'call_b'],
    ]);
    expect(types.filter((t) => t === 'step.finished')).toHaveLength(2);
    expect(resultsByCall(r)).toEqual({ call_a: ['echo: a'], call_b: ['echo: b'] });
    expect(r.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
    // The tool message alone (p-pgstep7), not in the step end: with the prompt and the tool step's
    // assistant message (the text step's in its step end since p-heldstep).
    expect(r.sent.filter(heldEnd)).toHaveLength(0);
    expect(r.sent.filter((text) => MESSAGE_INSERT.test(text) && !STEP_END.test(text))).toHaveLength(3);
  });

  it('STORE-PG-381: a run cancelled between the tool`s end and the step end stores the held result (written by the cancel, before its state.changed): the call has its result, the run ends cancelled, the session log in the same order as SQLite; the next run`s model sees the result', async () => {
    // The cancel lands once the stream's result part is recorded (PostgreSQL: the result held,
    // the part finds it recorded; SQLite: the part writes it), before the step's finish-step.
    const gap = stopInTheGap();
    const script = () => [
      reply().toolCall('echo', { text: 'm' }, 'call_m').usage(100, 20),
      reply().text('again'),
    ];
    const started = (app: App, sessionId: string) => {
      gap.arm(() => app.agent.cancel(sessionId));
    };
    const options = { tools: [echoTool], started };
    let lite: Run;
    let r: Run;
    try {
      lite = await storeRun(undefined, script(), { ...options, title: 'held paths', closers });
      r = await storeRun(pg.cluster(), script(), { ...options, title: 'held paths', closers });
    } finally {
      gap.restore();
    }
    // SQLite's part wrote the result; PostgreSQL's was held when the cancel came.
    expect(gap.states).toEqual(['written', 'held']);
    expect(lite.status).toBe('cancelled');
    expect(r.status).toBe('cancelled');
    // The same shapes, the session log included: the cancel writes the held result first, its
    // events (`tool.finished`, `message.created`) in the bus's queue before its `state.changed`
    // (cancelling), as on SQLite, where they were published at the tool's end.
    const shape = storeRunShape(r);
    expect(shape).toEqual(storeRunShape(lite));
    const around = (types: string[]) =>
      types.slice(types.indexOf('tool.started'), types.indexOf('tool.started') + 4);
    expect(around(shape.session)).toEqual([
      'tool.started',
      'tool.finished',
      'message.created',
      'state.changed',
    ]);
    // No session event twice, their ids consecutive; a replay (Last-Event-ID) answers that order.
    const ids = r.sessionEvents.map((e) => e.id);
    expect(ids).toEqual(ids.map((_, i) => ids[0] + i));
    const replayed = (await r.app.bus.replay(r.session.id, 0)).events;
    expect(replayed.map((e) => [e.id, e.type])).toEqual(r.sessionEvents.map((e) => [e.id, e.type]));
    const types = runTypes(r);
    expect(types.filter((t) => t === 'tool.finished')).toHaveLength(1);
    expect(types.indexOf('tool.finished')).toBe(types.indexOf('tool.started') + 1);
    // The result itself, not the interrupted one: stored once, alone (the cancel's release).
    expect(resultsByCall(r)).toEqual({ call_m: ['echo: m'] });
    expect(r.sent.filter(heldEnd)).toHaveLength(0);
    const tool = r.messages.find((m) => m.role === 'tool');
    expect(tool?.finished_at).not.toBeNull();
    // The next run's model is sent the call with its result (not an unknown outcome).
    const next = (await r.app.agent.send({ sessionId: r.session.id, prompt: 'again' })).run_id;
    expect((await r.app.agent.wait(next)).status).toBe('completed');
    const sent = JSON.stringify(r.provider.requests.at(-1)?.body.messages);
    expect(sent).toContain('echo: m');
    expect(sent).toContain('call_m');
  });

  it('STORE-PG-382: a failed step-end statement puts the held result back: the cut step writes it alone, once, and the run ends as on SQLite', async () => {
    const script = () => [
      reply().toolCall('echo', { text: 'x' }, 'call_x').usage(100, 20),
      reply().text('done'),
    ];
    const failed: string[] = [];
    const { lite, r, liteHeld, held } = await both(
      script,
      {
        tools: [echoTool],
        started: (app) => {
          // SQLite: the step end's message and session writes fail once (its transaction rolls back).
          const sessions = app.sessions as { closeStep?: (...args: unknown[]) => Promise<unknown> };
          const close = sessions.closeStep;
          if (!close || app.sessions.closeStepWrite) return;
          let once = false;
          sessions.closeStep = (...args: unknown[]) => {
            if (once) return close.apply(app.sessions, args);
            once = true;
            failed.push('sqlite');
            return Promise.reject(new Error('injected: step end failed'));
          };
        },
      },
      { client: (sql) => failingOnce(sql, heldEnd, failed) },
    );
    expect(failed).toHaveLength(2);
    // Held for the step end, put back when its statement failed, released by the cut step.
    expect(liteHeld).toEqual([]);
    expect(held).toEqual(['held', 'put back', 'released']);
    expect(lite.status).toBe(r.status);
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    const types = runTypes(r);
    expect(types.filter((t) => t === 'tool.finished')).toHaveLength(1);
    expect(types.filter((t) => t === 'step.finished')).toHaveLength(1);
    expect(resultsByCall(r)).toEqual({ call_x: ['echo: x'] });
    expect(r.messages.filter((m) => m.role === 'tool')).toHaveLength(1);
    expect(r.status).toBe('failed');
    // The failed step end never reached the server (the fault is before the driver): no step end
    // carried the tool message; it went alone (the cut step), with the prompt and the assistant.
    expect(r.sent.filter(heldEnd)).toHaveLength(0);
    expect(r.sent.filter((text) => MESSAGE_INSERT.test(text) && !STEP_END.test(text))).toHaveLength(3);
  });

  it('STORE-PG-383: a call that stops the run (loop detection) is not held: its result written alone, the earlier step`s held in its step end, the same order as SQLite', async () => {
    const script = () => [
      reply().toolCall('echo', { text: 'same' }, 'call_1').usage(100, 20),
      reply().toolCall('echo', { text: 'same' }, 'call_2').usage(100, 20),
      reply().text('never'),
    ];
    const { lite, r, liteHeld, held } = await both(script, {
      tools: [echoTool],
      config: { options: { loop_detection: { max_repeats: 2 } } },
    });
    expect(r.status).toBe('failed');
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    // The first step's result held and carried by its step end; the stopping call's never held.
    expect(liteHeld).toEqual([]);
    expect(held).toEqual(['held']);
    const types = runTypes(r);
    expect(types).toContain('loop.detected');
    expect(types.filter((t) => t === 'tool.finished')).toHaveLength(2);
    // The first step's result rode in its step end; the stopping call's went alone.
    expect(r.sent.filter(heldEnd)).toHaveLength(1);
    const results = resultsByCall(r);
    expect(Object.keys(results)).toEqual(['call_1', 'call_2']);
    expect(results.call_1).toEqual(['echo: same']);
    expect(results.call_2).toHaveLength(1);
    expect(r.messages.filter((m) => m.role === 'tool')).toHaveLength(2);
  });
});

describe.skipIf(!pg.available)('a held result released by another call (PostgreSQL, the recorder)', () => {
  it('STORE-PG-384: a second call recorded after the first result was held writes it alone first (its message INSERT with its tool.finished), then the call: each result once, seqs and session events in order', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const sent: string[] = [];
    const events: SessionEvent[] = [];
    const app = await makeTestApp({ postgres: recordingClient(sql, sent) });
    try {
      app.bus.subscribe('*', (event) => events.push(event));
      const session = await app.sessions.create({ title: 'held release' });
      const run = await app.runs.create({
        session_id: session.id,
        family_session_id: session.id,
        agent: 'build',
        origin: 'test',
        prompt: 'go',
        status: 'running',
      });
      const step = new StepRecorder(app, {
        sessionId: session.id,
        runId: run.id,
        model: 'm1',
        provider: 'fake',
        holdsResult: true,
      });
      const finished = (id: string) => {
        const payload = { tool_call_id: id, tool: 'echo', is_error: false };
        const at = app.clock.now();
        const following = app.runs.followingEvent!(run.id, 'tool.finished', payload, at);
        const event = { session_id: session.id, run_id: run.id, ...payload };
        return {
          following,
          write: {
            write: following.write,
            events: [{ type: 'tool.finished', payload: event }],
            event: { type: 'tool.finished', payload, created_at: at },
          },
        };
      };
      const a = { tool_call_id: 'call_a', tool: 'echo', input: { text: 'a' } };
      const b = { tool_call_id: 'call_b', tool: 'echo', input: { text: 'b' } };
      await step.toolCall(a);
      const fa = finished('call_a');
      expect(await step.finishedResult({ ...a, output: 'echo: a', isError: false }, fa.write)).toBe('held');
      // Held: nothing written yet.
      expect((await app.sessions.messages(session.id)).map((m) => m.role)).toEqual(['assistant']);
      expect((await app.runs.events(run.id)).map((e) => e.type)).not.toContain('tool.finished');
      const afterReads = sent.length;
      await step.toolCall(b);
      const written = sent.slice(afterReads);
      // The held result alone first (one INSERT carrying its tool.finished), then the call's UPDATE.
      expect(written.filter((text) => /INSERT INTO messages/.test(text))).toHaveLength(1);
      expect(written.findIndex((text) => /INSERT INTO messages/.test(text))).toBeLessThan(
        written.findIndex((text) => /UPDATE messages/.test(text)),
      );
      expect(fa.following.written()).toMatchObject({ type: 'tool.finished' });
      // The second call's result: a later result is an UPDATE, its event apart (the bridge's path).
      const fb = finished('call_b');
      expect(await step.finishedResult({ ...b, output: 'echo: b', isError: false }, fb.write)).toBe(false);
      await app.runs.append(run.id, 'tool.finished', {
        tool_call_id: 'call_b',
        tool: 'echo',
        is_error: false,
      });
      await step.toolResult('call_b', 'echo', 'echo: b', false);
      await step.toolResult('call_a', 'echo', 'echo: a', false); // the stream's part: recorded already
      await step.finish(null, 0);
      await app.bus.flush();

      const messages = await app.sessions.messages(session.id);
      expect(messages.map((m) => [m.role, m.parts.map((p) => ('output' in p ? p.output : p.type))])).toEqual([
        ['assistant', ['tool-call', 'tool-call']],
        ['tool', ['echo: a', 'echo: b']],
      ]);
      const runEvents = await app.runs.events(run.id);
      const tail = runEvents.filter((e) => e.type === 'tool.finished');
      expect(tail.map((e) => e.payload.tool_call_id)).toEqual(['call_a', 'call_b']);
      expect(runEvents.map((e) => e.seq)).toEqual(runEvents.map((_, i) => i + 1));
      const own = events
        .filter((e) => e.session_id === session.id && e.type !== 'message.delta')
        .map((e) => e.type);
      expect(own.slice(own.indexOf('message.created'))).toEqual([
        'message.created', // the assistant message
        'tool.finished', // call_a's, with
        'message.created', // the tool message
        'message.completed',
        'message.completed',
      ]);
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
