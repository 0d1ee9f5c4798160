/**
 * A step whose only call reads only, written whole by its step end on PostgreSQL (issue 18 item 6,
 * p-heldstep, src/agent/step-recorder.ts `deferStart`): nothing of the step is written before the
 * call runs; the step end's one statement inserts the assistant message closed with its call's
 * start (the step's `phase`, `tool.started`, its `model_calls` row), then the held result and the
 * rest of the step end. Pinned against the same script on SQLite:
 * - rows, run events and the session log the same; one statement for the step, no start statement;
 * - that statement failing: the parts written as before (start, result, step end), the run goes on;
 * - a read-only call that asks writes its start on demand, before the ask;
 * - a stop between the tool's end and the step end writes the start and the result with their
 *   session events before the stop's `state.changed`, as on SQLite (STORE-PG-514…517: rows of the
 *   table in ./pg-held-stop.test.ts);
 * - a text step's message is held from its first delta to its step end, which inserts it closed
 *   with its text (its deltas' events appended after its `message.created`), unless FLUSH_MS passes
 *   first (written then, as before) or a stop comes (written then, its events before the stop's);
 * - `SVC_STEP_ONCE=0` turns both off.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app';
import { reply } from '../helpers/fake-provider';
import { faultyClient, wrappedClient } from '../helpers/faulty-client';
import { heldStart, logRuns, startStatement } from '../helpers/held-start';
import {
  askingRead,
  atTextDelta,
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

describe.skipIf(!pg.available)(
  'a read-only step written whole by its step end (PostgreSQL against SQLite)',
  () => {
    const closers: (() => Promise<void>)[] = [];
    afterEach(async () => {
      vi.restoreAllMocks();
      vi.unstubAllEnvs();
      for (const close of closers.splice(0).reverse()) await close();
    });

    const phaseSteps = () => [
      reply().toolCall('get_workflow_phase', {}, 'call_a').usage(100, 20),
      reply().toolCall('get_workflow_phase', {}, 'call_b').usage(120, 20),
      reply().text('done').usage(140, 5),
    ];
    const executing = async (app: App, id: string) => {
      await app.sessions.update(id, { metadata: { workflow_phase: 'execute' } });
    };

    it('STORE-PG-510: two get_workflow_phase steps, each one statement (its step end, the assistant message inserted closed): no start statement, the tool run before any statement of its step; rows, seqs and session events as on SQLite', async () => {
      const lite = await storeRun(undefined, phaseSteps(), {
        tools: [],
        title: 'whole',
        closers,
        started: executing,
      });
      const log: string[] = [];
      let sentAtRun: number[] = [];
      const r = await storeRun(pg.cluster(), phaseSteps(), {
        tools: [],
        title: 'whole',
        closers,
        client: (sql) => {
          const wrap = <A extends unknown[], R>(send: (text: string, ...rest: A) => Promise<R>) => {
            return (text: string, ...rest: A): Promise<R> => {
              // The adaptive monitor's and the janitor's own reads come on their timers, not the run's.
              if (!BACKGROUND_STATEMENT.test(text))
                log.push(
                  wholeStep(text)
                    ? 'whole step'
                    : startStatement(text)
                      ? 'start'
                      : `other ${text.slice(0, 36)}`,
                );
              return send(text, ...rest);
            };
          };
          return wrappedClient(sql, wrap);
        },
        started: (app, id) => {
          logRuns(app, 'get_workflow_phase', log);
          return executing(app, id);
        },
      });
      sentAtRun = log.flatMap((line, i) => (line === 'tool ran get_workflow_phase' ? [i] : []));
      expect(r.status).toBe('completed');
      expect(storeRunShape(r)).toEqual(storeRunShape(lite));
      expect(closed(r)).toEqual(closed(lite));
      expect(JSON.stringify(r.messages)).toContain('\\"phase\\":\\"execute\\"');
      // One statement a tool step, after its call ran; no statement between the call and it.
      expect(log.filter((line) => line === 'start')).toEqual([]);
      expect(log.filter((line) => line === 'whole step')).toHaveLength(2);
      // The text step too: its message in its step end.
      expect(r.sent.filter(wholeText)).toHaveLength(1);
      // The first call reads its session (no row kept yet: the prompt's append was a transaction),
      // the second from memory; nothing else between a call and its step's statement.
      expect(sentAtRun.map((at) => log.slice(at + 1, log.indexOf('whole step', at)))).toEqual([
        ['other SELECT * FROM sessions WHERE id = $1'],
        [],
      ]);
      expect(r.sent.filter(wholeStep)).toHaveLength(2);
      // Each step's model call stored (two rode in the tool steps' statements).
      expect(await modelCalls(r)).toBe(3);
      const types = runTypes(r);
      expect(types.filter((t) => t === 'tool.started')).toHaveLength(2);
      const heard = r.sessionEvents.filter((e) => e.type !== 'message.delta');
      expect(heard.map((e) => e.id)).toEqual([...heard.map((e) => e.id)].sort((x, y) => x - y));
      expect(r.heard.map((e) => e.seq)).toEqual(r.runEvents.map((e) => e.seq));
      // The assistant message sorts before its result; created when its call was recorded.
      const [assistant, tool] = r.messages.filter((m) => m.role !== 'user');
      expect(assistant?.role).toBe('assistant');
      expect(tool?.role).toBe('tool');
      expect(assistant!.created_at).toBeLessThanOrEqual(tool!.created_at);
    });

    it('STORE-PG-511: the one statement failing: the step written in parts as before (its start, its result, its end), once each; the run goes on as on SQLite', async () => {
      const script = () => [
        reply().toolCall('echo', { text: 'f' }, 'call_f').usage(100, 20),
        reply().text('done'),
      ];
      const lite = await storeRun(undefined, script(), { tools: [readingEcho], title: 'parts', closers });
      let faults: ReturnType<typeof faultyClient> | undefined;
      const r = await storeRun(pg.cluster(), script(), {
        tools: [readingEcho],
        title: 'parts',
        closers,
        client: (sql) => {
          faults = faultyClient(sql);
          faults.failWhere((text) => wholeStep(text));
          return faults.client;
        },
      });
      expect(faults?.failed).toHaveLength(1);
      expect(r.status).toBe('completed');
      expect(storeRunShape(r)).toEqual(storeRunShape(lite));
      expect(closed(r)).toEqual(closed(lite));
      const types = runTypes(r);
      for (const type of ['phase', 'tool.started', 'tool.finished'])
        expect(types.filter((t) => t === type).length).toBeGreaterThan(0);
      expect(types.filter((t) => t === 'tool.finished')).toHaveLength(1);
      expect(types.filter((t) => t === 'step.finished')).toHaveLength(2);
      // The parts: the start statement, once, after the failed one.
      expect(r.sent.filter(startStatement)).toHaveLength(1);
      expect(await modelCalls(r)).toBe(2);
      await sessionLogSound(r);
    });

    it('STORE-PG-512: a read-only call that asks writes its held start before its ask, once; the run as on SQLite', async () => {
      const script = () => [
        reply().toolCall('asking_read', {}, 'call_q').usage(100, 20),
        reply().text('done'),
      ];
      const liteLog: string[] = [];
      const config = { permissions: { allowed_tools: ['asking_read'] } };
      const lite = await storeRun(undefined, script(), {
        tools: [askingRead(liteLog)],
        title: 'ask',
        closers,
        config,
      });
      const log: string[] = [];
      const r = await storeRun(pg.cluster(), script(), {
        tools: [askingRead(log)],
        title: 'ask',
        closers,
        config,
        client: (sql) => heldStart(sql, log, { until: () => true }),
      });
      expect(r.status).toBe('completed');
      expect(log).toEqual(['tool ran asking_read', 'start sent', 'start answered', 'asked']);
      expect(storeRunShape(r)).toEqual(storeRunShape(lite));
      expect(r.sent.filter(wholeStep)).toEqual([]);
      expect(r.sent.filter(wholeText)).toHaveLength(1);
      expect(await modelCalls(r)).toBe(2);
    });

    it('STORE-PG-518 (383 with a read-only tool): a read-only call that stops the run (loop detection) writes its held start before its tool.finished: the first step whole in its step end, the stopping one in parts, the same order as SQLite', async () => {
      const script = () => [
        reply().toolCall('echo', { text: 'same' }, 'call_1').usage(100, 20),
        reply().toolCall('echo', { text: 'same' }, 'call_2').usage(100, 20),
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
      const types = runTypes(r);
      expect(types).toContain('loop.detected');
      expect(types.filter((t) => t === 'tool.finished')).toHaveLength(2);
      expect(types.lastIndexOf('tool.started')).toBeLessThan(types.lastIndexOf('tool.finished'));
      expect(r.sent.filter(wholeStep)).toHaveLength(1);
      await sessionLogSound(r);
    });

    /** The session log's types, deltas included. */
    const allTypes = (r: Run) => r.sessionEvents.map((e) => e.type);

    it('STORE-PG-519: a text step`s message written by its step end alone, closed with its text: no message statement before it; the session log (deltas included), rows and run events as on SQLite', async () => {
      const script = () => [reply().text('a held answer in a few words').usage(30, 8)];
      const lite = await storeRun(undefined, script(), { tools: [], title: 'text', closers });
      const r = await storeRun(pg.cluster(), script(), { tools: [], title: 'text', closers });
      expect(r.status).toBe('completed');
      expect(storeRunShape(r)).toEqual(storeRunShape(lite));
      expect(allTypes(r)).toEqual(allTypes(lite));
      expect(allTypes(r).filter((t) => t === 'message.delta').length).toBeGreaterThan(1);
      expect(closed(r)).toEqual(closed(lite));
      expect(r.messages.map((m) => JSON.stringify(m.parts))).toEqual(
        lite.messages.map((m) => JSON.stringify(m.parts)),
      );
      // The prompt's append, then the step end only: no INSERT of the message at its first delta.
      const inserts = r.sent.filter((t) => MESSAGE_INSERT.test(t));
      expect(inserts).toHaveLength(2);
      expect(wholeText(inserts[1] ?? '')).toBe(true);
      // Each delta names the message stored; ids ascending, a replay the same.
      const assistant = r.messages.find((m) => m.role === 'assistant');
      for (const e of r.sessionEvents.filter((x) => x.type === 'message.delta'))
        expect(e.payload.message_id).toBe(assistant?.id);
      await sessionLogSound(r);
      expect(await modelCalls(r)).toBe(1);
    });

    it('STORE-PG-520: a text step streaming past FLUSH_MS writes its message at the bound, as before; the same log and rows as SQLite', async () => {
      const script = () => [reply().text('slow words come one by one here').slow(60).usage(30, 8)];
      const lite = await storeRun(undefined, script(), { tools: [], title: 'slow', closers });
      const r = await storeRun(pg.cluster(), script(), { tools: [], title: 'slow', closers });
      expect(r.status).toBe('completed');
      expect(storeRunShape(r)).toEqual(storeRunShape(lite));
      expect(allTypes(r)).toEqual(allTypes(lite));
      expect(closed(r)).toEqual(closed(lite));
      expect(r.sent.filter(wholeText)).toEqual([]);
      expect(r.sent.filter((t) => MESSAGE_INSERT.test(t))).toHaveLength(2);
      await sessionLogSound(r);
    });

    it('STORE-PG-521: a cancel while a text step`s message is held writes it with its deltas` events before the state.changed, as on SQLite', async () => {
      // The stream's third piece waits for the cancel: it lands at the second delta on both
      // stores, whatever the load (the cancel's session read can outlast a short stream).
      let cancelled = (_done: Promise<unknown>) => {};
      const script = () => {
        const done = new Promise<unknown>((resolve) => {
          cancelled = resolve;
        });
        return [
          reply().text('one two three four five six seven').slow(5).pauseAt(3, done),
          reply().text('no'),
        ];
      };
      const spies: (() => void)[] = [];
      const started = (app: App, sessionId: string) => {
        // At the second delta: the first is recorded on both stores (SQLite's waits for its message).
        spies.push(atTextDelta(2, () => cancelled(app.agent.cancel(sessionId))));
      };
      let lite: Run;
      let r: Run;
      try {
        lite = await storeRun(undefined, script(), { tools: [], title: 'cancel text', closers, started });
        for (const restore of spies.splice(0)) restore();
        r = await storeRun(pg.cluster(), script(), { tools: [], title: 'cancel text', closers, started });
      } finally {
        for (const restore of spies.splice(0)) restore();
      }
      expect(lite.status).toBe('cancelled');
      expect(r.status).toBe('cancelled');
      expect(storeRunShape(r)).toEqual(storeRunShape(lite));
      expect(allTypes(r)).toEqual(allTypes(lite));
      expect(r.sent.filter(wholeText)).toEqual([]);
      await sessionLogSound(r);
    });

    it('STORE-PG-513: SVC_STEP_ONCE=0 turns it off: the start statement before the step end, as before', async () => {
      vi.stubEnv('SVC_STEP_ONCE', '0');
      const r = await storeRun(pg.cluster(), phaseSteps(), {
        tools: [],
        title: 'off',
        closers,
        started: executing,
      });
      expect(r.status).toBe('completed');
      expect(r.sent.filter(wholeStep)).toEqual([]);
      expect(r.sent.filter(wholeText)).toEqual([]);
      expect(r.sent.filter(startStatement)).toHaveLength(2);
    });
  },
);
