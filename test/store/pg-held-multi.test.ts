/**
 * A step whose several calls all read only, written whole by its step end on PostgreSQL (issue 18
 * item 6, p-heldmulti, src/agent/step-recorder.ts `deferStart`, `heldAfter`): every call's start
 * and result held, nothing of the step written before its end; the step end's one statement
 * inserts the assistant message closed with the step's `phase` and its run events (each call's
 * `tool.started` then `tool.finished`, the last result's after the tool message), then the tool
 * message with every result. Pinned against the same script on SQLite (rows, run events, the whole
 * session log) and against `SVC_STEP_ONCE=0` (the statements a step); and the release paths, as for
 * one call (./pg-held-step.test.ts): the statement failing, a later call that asks, a call that
 * stops the run, a stop while a held call still runs (one call, or a later one), a `view` after
 * held calls. A stop in the gap after the last result (the operator's cancel, the run ledger's, a
 * busy bus, a failed release): STORE-PG-596, 597, 601, 602, a row of ./pg-held-stop.test.ts.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { App } from '../../src/app';
import type { SqlClient } from '../../src/store/postgres/client';
import { defineTool } from '../../src/tools/core/define-tool';
import { reply } from '../helpers/fake-provider';
import { faultyClient, logged } from '../helpers/faulty-client';
import { heldStart, startStatement } from '../helpers/held-start';
import {
  askingRead,
  closed,
  MESSAGE_INSERT,
  modelCalls,
  type Run,
  readingEcho,
  runTypes,
  sessionLogSound,
  wholeStep,
  wholeText,
} from '../helpers/held-step';
import { storeRun, storeRunShape } from '../helpers/pg-recorded-app';
import { postgresForFile } from '../helpers/postgres';
import { BACKGROUND_STATEMENT } from '../http/compat-helpers';

const pg = postgresForFile();

/** The whole session log's types (no deltas: their count is the stream's chunking). */
const sessionTypes = (r: Run) => r.sessionEvents.filter((e) => e.type !== 'message.delta').map((e) => e.type);

/** The statements that write (not a read, BEGIN or COMMIT, nor the node's own: its heartbeat). */
const writes = (r: Run) =>
  r.sent.filter(
    (t) =>
      !/^\s*(SELECT|BEGIN|COMMIT|ROLLBACK|LISTEN|SAVEPOINT|RELEASE)\b/i.test(t) &&
      !BACKGROUND_STATEMENT.test(t),
  );

/** A run event appended alone with its session event (`appendAnnounced`: a start or a result apart). */
const LONE_EVENT = /^WITH a AS \(SELECT a\.event_id/;

/** The statements that write after the run's model statement (`model`, resolved before its first step). */
const afterModel = (r: Run) => {
  const all = writes(r);
  return all.slice(all.findIndex((t) => /UPDATE agent_runs SET model = /.test(t)) + 1);
};

/** The session log of a step of three calls, from its assistant message to its completions. */
const THREE_CALLS = [
  'message.created',
  'tool.started',
  'tool.finished',
  'message.created',
  'tool.started',
  'tool.finished',
  'tool.started',
  'tool.finished',
  'message.completed',
  'message.completed',
  'context.usage',
];

const threeReads = () => [
  reply()
    .toolCall('echo', { text: 'a' }, 'call_a')
    .toolCall('echo', { text: 'b' }, 'call_b')
    .toolCall('echo', { text: 'c' }, 'call_c')
    .usage(100, 20),
  reply().text('done').usage(140, 5),
];

/** The tool message's results, in call order. */
const outputs = (r: Run) =>
  r.messages
    .filter((m) => m.role === 'tool')
    .map((m) => m.parts.map((p) => ('output' in p ? p.output : p.type)));

describe.skipIf(!pg.available)('a step of several read-only calls written whole by its step end', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-592: a step of three read-only calls is one statement (its step end): no start statement, no result statement; rows, run events and the whole session log as on SQLite; its statements 9 → 1 (SVC_STEP_ONCE=0, the base’s path for several calls)', async () => {
    const options = { tools: [readingEcho], title: 'three', closers };
    const lite = await storeRun(undefined, threeReads(), options);
    const r = await storeRun(pg.cluster(), threeReads(), options);
    expect(r.status).toBe('completed');
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    expect(sessionTypes(r)).toEqual(sessionTypes(lite));
    expect(closed(r)).toEqual(closed(lite));
    expect(runTypes(r)).toEqual(runTypes(lite));
    const types = sessionTypes(r);
    const at = types.indexOf('tool.started') - 1;
    expect(types.slice(at, at + THREE_CALLS.length)).toEqual(THREE_CALLS);
    expect(outputs(r)).toEqual([['echo: a', 'echo: b', 'echo: c']]);
    // The tool step: its step end alone, the assistant message and the tool message inserted in it.
    expect(r.sent.filter(startStatement)).toEqual([]);
    expect(r.sent.filter(wholeStep)).toHaveLength(1);
    expect(r.sent.filter(wholeText)).toHaveLength(1);
    // Three message INSERTs in the run: the prompt's, then the two step ends.
    expect(r.sent.filter((t) => MESSAGE_INSERT.test(t))).toHaveLength(3);
    expect(await modelCalls(r)).toBe(2);
    expect(r.heard.map((e) => e.seq)).toEqual(r.runEvents.map((e) => e.seq));
    await sessionLogSound(r);
    // The same run with the hold off: the start, the first result, and each later call's start
    // and result apart (several), where the held step has none.
    vi.stubEnv('SVC_STEP_ONCE', '0');
    const off = await storeRun(pg.cluster(), threeReads(), options);
    expect(storeRunShape(off)).toEqual(storeRunShape(lite));
    expect(off.sent.filter(wholeStep)).toEqual([]);
    // The tool step's statements (after the run's model statement, to its step end): 9 → 1.
    const stepEnd = (t: string) => wholeStep(t) || /^WITH g AS/.test(t);
    const toolStep = (run: Run) => {
      const after = afterModel(run);
      return after.slice(0, after.findIndex(stepEnd) + 1);
    };
    expect(toolStep(r)).toHaveLength(1);
    // Apart, the three concurrent calls' starts and results meet the pool as they finish: some join
    // one statement, how many depends on their timing (9 seen, and 6 in a fresh-clone CI on Node 24).
    expect(toolStep(off).length).toBeGreaterThan(1);
    expect(toolStep(off).filter(startStatement)).toHaveLength(1);
  });

  it('STORE-PG-593: the one statement failing: the step written in parts (the start with the assistant message, the tool message with every held start and result after the first), once each; the run goes on as on SQLite', async () => {
    const options = { tools: [readingEcho], title: 'parts', closers };
    const lite = await storeRun(undefined, threeReads(), options);
    let faults: ReturnType<typeof faultyClient> | undefined;
    const r = await storeRun(pg.cluster(), threeReads(), {
      ...options,
      client: (sql) => {
        faults = faultyClient(sql);
        faults.failWhere((text) => wholeStep(text));
        return faults.client;
      },
    });
    expect(faults?.failed).toHaveLength(1);
    expect(r.status).toBe('completed');
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    expect(sessionTypes(r)).toEqual(sessionTypes(lite));
    expect(closed(r)).toEqual(closed(lite));
    expect(runTypes(r)).toEqual(runTypes(lite));
    expect(outputs(r)).toEqual([['echo: a', 'echo: b', 'echo: c']]);
    // The parts: the assistant message with the first start, the tool message with the rest, the step end
    // (the same statement text twice), and no run event alone.
    expect(r.sent.filter(startStatement)).toHaveLength(2);
    expect(r.sent.filter((t) => LONE_EVENT.test(t))).toEqual([]);
    expect(await modelCalls(r)).toBe(2);
    await sessionLogSound(r);
  });

  it('STORE-PG-594: a later call that asks writes every held start and result before it and its own start before its ask, once; the run as on SQLite', async () => {
    const script = () => [
      reply().toolCall('echo', { text: 'a' }, 'call_a').toolCall('asking_read', {}, 'call_q').usage(100, 20),
      reply().text('done'),
    ];
    const config = { permissions: { allowed_tools: ['asking_read'] } };
    const lite = await storeRun(undefined, script(), {
      tools: [readingEcho, askingRead([])],
      title: 'ask',
      closers,
      config,
    });
    const log: string[] = [];
    const r = await storeRun(pg.cluster(), script(), {
      tools: [readingEcho, askingRead(log)],
      title: 'ask',
      closers,
      config,
      client: (sql) => heldStart(sql, log, { until: () => true }),
    });
    expect(r.status).toBe('completed');
    // Nothing before the asking call ran: the first call's start and result, and its start, held.
    expect(log).toEqual(['tool ran asking_read', 'start sent', 'start answered', 'asked']);
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    expect(sessionTypes(r)).toEqual(sessionTypes(lite));
    expect(runTypes(r)).toEqual(runTypes(lite));
    expect(r.sent.filter(wholeStep)).toEqual([]);
    expect(await modelCalls(r)).toBe(2);
    await sessionLogSound(r);
  });

  it('STORE-PG-595: a later read-only call that stops the run (loop detection) writes the held step before its tool.finished: the same order as SQLite', async () => {
    const script = () => [
      reply()
        .toolCall('echo', { text: 'same' }, 'call_1')
        .toolCall('echo', { text: 'same' }, 'call_2')
        .usage(100, 20),
      reply().text('never'),
    ];
    const options = {
      tools: [readingEcho],
      config: { options: { loop_detection: { max_repeats: 2 } } },
      closers,
      title: 'loop',
    };
    const lite = await storeRun(undefined, script(), options);
    const r = await storeRun(pg.cluster(), script(), options);
    expect(r.status).toBe('failed');
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    expect(sessionTypes(r)).toEqual(sessionTypes(lite));
    const types = runTypes(r);
    expect(types).toEqual(runTypes(lite));
    expect(types).toContain('loop.detected');
    expect(r.sent.filter(wholeStep)).toEqual([]);
    await sessionLogSound(r);
  });

  it('STORE-PG-598: a view after held read-only calls: the held calls written before view`s start (view waits for its start), the rows and the whole session log as on SQLite', async () => {
    const script = () => [
      reply()
        .toolCall('echo', { text: 'a' }, 'call_a')
        .toolCall('echo', { text: 'b' }, 'call_b')
        .toolCall('view', { path: 'hello.txt' }, 'call_v')
        .usage(100, 20),
      reply().text('done'),
    ];
    const started = (app: App) => writeFileSync(join(app.workspace, 'hello.txt'), 'hi there\n');
    const options = { tools: [readingEcho], title: 'view', closers, started };
    const lite = await storeRun(undefined, script(), options);
    const r = await storeRun(pg.cluster(), script(), options);
    expect(r.status).toBe('completed');
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    expect(sessionTypes(r)).toEqual(sessionTypes(lite));
    expect(runTypes(r)).toEqual(runTypes(lite));
    expect(r.sent.filter(wholeStep)).toEqual([]);
    expect(await r.app.ws.reads.get(r.session.id, 'hello.txt')).toBeDefined();
    await sessionLogSound(r);
  });

  /**
   * A read-only tool that, once running, has the test's `stop` run (a cancel of its run) and ends
   * when its call's signal aborts: a stop while a held call still runs.
   */
  const stoppingRead = (stop: { now?: () => Promise<unknown> }) =>
    defineTool({
      name: 'stopping_read',
      family: 'test',
      tag: 'primitive',
      description: 'Runs until its run is stopped.',
      input: z.strictObject({}),
      mutates: false,
      readsOnly: true,
      run: async (ctx) => {
        const aborted = new Promise<void>((resolve) => {
          if (ctx.signal.aborted) resolve();
          else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
        });
        await stop.now?.();
        await aborted;
        return 'stopped';
      },
    });

  /** `script` stopped by its `stopping_read` call while it runs, on SQLite then on PostgreSQL. */
  const stoppedWhileRunning = async (title: string, script: () => ReturnType<typeof threeReads>) => {
    const runs: Run[] = [];
    for (const cluster of [undefined, pg.cluster()]) {
      const stop: { now?: () => Promise<unknown> } = {};
      runs.push(
        await storeRun(cluster, script(), {
          tools: [readingEcho, stoppingRead(stop)],
          title,
          closers,
          started: (app, sessionId) => {
            stop.now = () => app.agent.cancel(sessionId);
          },
        }),
      );
    }
    const [lite, r] = runs as [Run, Run];
    expect(lite.status).toBe('cancelled');
    expect(r.status).toBe('cancelled');
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    expect(sessionTypes(r)).toEqual(sessionTypes(lite));
    expect(await logged(r.sql as SqlClient, r.session.id)).toEqual(r.sessionEvents.map((e) => e.type));
    expect(runTypes(r)).toEqual(runTypes(lite));
    expect(r.sent.filter(wholeStep)).toEqual([]);
    await sessionLogSound(r);
    return sessionTypes(r);
  };

  it('STORE-PG-599: a stop while a lone held read-only call still runs: its start written by the stopper, its events before the stop`s state.changed, its result after, as on SQLite', async () => {
    const types = await stoppedWhileRunning('stop running', () => [
      reply().toolCall('stopping_read', {}, 'call_s').usage(100, 20),
      reply().text('never'),
    ]);
    const at = types.indexOf('tool.started') - 1;
    expect(types.slice(at, at + 4)).toEqual([
      'message.created',
      'tool.started',
      'state.changed',
      'tool.finished',
    ]);
  });

  it('STORE-PG-600: a stop while a later held call runs: the held first call (start, result) and the running call`s start written by the stopper before its state.changed, the running call`s result after, as on SQLite', async () => {
    const types = await stoppedWhileRunning('stop running later', () => [
      reply()
        .toolCall('echo', { text: 'a' }, 'call_a')
        .toolCall('stopping_read', {}, 'call_s')
        .usage(100, 20),
      reply().text('never'),
    ]);
    const at = types.indexOf('tool.started') - 1;
    expect(types.slice(at, at + 7)).toEqual([
      'message.created',
      'tool.started',
      'tool.finished',
      'message.created',
      'tool.started',
      'state.changed',
      'tool.finished',
    ]);
  });
});
