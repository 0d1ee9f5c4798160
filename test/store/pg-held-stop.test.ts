/**
 * A run stopped between its tool's end and its step end on PostgreSQL, where the tool's result is
 * held for the step end's statement (p-pgtoolend): the stopper writes the held result first
 * (`StopState.release`, src/agent/end-step.ts `releaseOnStop`), so its session events come before
 * the stop's `state.changed`, as on SQLite (issue 18 item 2: the same session log on both
 * backends). The operator's cancel is STORE-PG-381 (./pg-held-paths.test.ts); here the cancel
 * another process asks through the run ledger (the run's cancel poll), the operator's cancel while
 * the bus's write queue is busy with another session's append (the release's events reserved in
 * the queue, `EventBus.reserve`), and a release whose statement fails (the cut step writes it).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import type { SqlClient } from '../../src/store/postgres/client';
import { echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { cancelBehindBusyQueue, faultyClient, logged } from '../helpers/faulty-client';
import { stopInTheGap, storeRun, storeRunShape } from '../helpers/pg-recorded-app';
import { postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

const MESSAGE_INSERT = /INSERT INTO messages/;

describe.skipIf(!pg.available)(
  'a stop in the gap before a held result`s step end (PostgreSQL against SQLite)',
  () => {
    const closers: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
    });

    it('STORE-PG-420: a cancel asked through the run ledger between the tool`s end and the step end: the held result`s events before the state.changed (cancelling), the session log in the same order as SQLite, each event once', async () => {
      // The stream's result part recorded (PostgreSQL: the result held), the ledger's cancel flag is
      // set as another process would, and the step waits until the run's poll has cancelled it.
      const gap = stopInTheGap();
      const started = (app: App, sessionId: string) => {
        gap.arm(async () => {
          const cancelling = new Promise<void>((resolve) => {
            const off = app.bus.subscribe(sessionId, (event) => {
              if (event.type !== 'state.changed' || event.payload.state !== 'cancelling') return;
              off();
              resolve();
            });
          });
          const run = await app.runs.running(sessionId);
          if (!run) throw new Error('no running run');
          await app.runs.requestCancel(run.id);
          await cancelling;
        });
      };
      const script = () => [
        reply().toolCall('echo', { text: 'm' }, 'call_m').usage(100, 20),
        reply().text('no'),
      ];
      const options = { tools: [echoTool], started, title: 'held stop', closers };
      let lite: Awaited<ReturnType<typeof storeRun>>;
      let r: Awaited<ReturnType<typeof storeRun>>;
      try {
        lite = await storeRun(undefined, script(), options);
        r = await storeRun(pg.cluster(), script(), options);
      } finally {
        gap.restore();
      }
      expect(gap.states).toEqual(['written', 'held']);
      expect(lite.status).toBe('cancelled');
      expect(r.status).toBe('cancelled');
      const shape = storeRunShape(r);
      expect(shape).toEqual(storeRunShape(lite));
      const at = shape.session.indexOf('tool.started');
      expect(shape.session.slice(at, at + 4)).toEqual([
        'tool.started',
        'tool.finished',
        'message.created',
        'state.changed',
      ]);
      // Each event once, ids consecutive; a replay answers the same order.
      const ids = r.sessionEvents.map((e) => e.id);
      expect(ids).toEqual(ids.map((_, i) => ids[0] + i));
      const replayed = (await r.app.bus.replay(r.session.id, 0)).events;
      expect(replayed.map((e) => [e.id, e.type])).toEqual(r.sessionEvents.map((e) => [e.id, e.type]));
      // The result stored once, finished; its run event once, right after its start.
      const types = r.runEvents.map((e) => e.type);
      expect(r.runEvents.map((e) => e.seq)).toEqual(types.map((_, i) => i + 1));
      expect(types.filter((t) => t === 'tool.finished')).toHaveLength(1);
      expect(types.indexOf('tool.finished')).toBe(types.indexOf('tool.started') + 1);
      const tool = r.messages.filter((m) => m.role === 'tool');
      expect(tool.map((m) => m.parts.map((p) => ('output' in p ? p.output : p.type)))).toEqual([['echo: m']]);
      expect(tool[0]?.finished_at).not.toBeNull();
    });

    it('STORE-PG-450: the operator`s cancel in the gap while the bus`s write queue is busy (another session`s append held): the held result`s events are reserved before the state.changed (cancelling), the session log in SQLite`s order', async () => {
      const gap = stopInTheGap();
      let faults: ReturnType<typeof faultyClient> | undefined;
      let toolRows = 0;
      const started = (app: App, sessionId: string) => {
        gap.arm(async () => {
          toolRows = await cancelBehindBusyQueue(app, sessionId, faults);
        });
      };
      const script = () => [
        reply().toolCall('echo', { text: 'm' }, 'call_m').usage(100, 20),
        reply().text('no'),
      ];
      const options = { tools: [echoTool], started, title: 'held busy', closers };
      let lite: Awaited<ReturnType<typeof storeRun>>;
      let r: Awaited<ReturnType<typeof storeRun>>;
      try {
        lite = await storeRun(undefined, script(), options);
        r = await storeRun(pg.cluster(), script(), {
          ...options,
          client: (sql) => {
            faults = faultyClient(sql);
            return faults.client;
          },
        });
      } finally {
        gap.restore();
        faults?.open();
      }
      expect(gap.states).toEqual(['written', 'held']);
      expect(toolRows).toBe(1);
      expect(r.status).toBe('cancelled');
      const shape = storeRunShape(r);
      expect(shape).toEqual(storeRunShape(lite));
      const at = shape.session.indexOf('tool.started');
      expect(shape.session.slice(at, at + 4)).toEqual([
        'tool.started',
        'tool.finished',
        'message.created',
        'state.changed',
      ]);
      // Ids ascending in that order (the other session's took one among them), each once; the
      // log itself and a replay the same.
      const ids = r.sessionEvents.map((e) => e.id);
      expect(ids).toEqual([...new Set(ids)].sort((x, y) => x - y));
      expect(await logged(r.sql as SqlClient, r.session.id)).toEqual(r.sessionEvents.map((e) => e.type));
      const replayed = (await r.app.bus.replay(r.session.id, 0)).events;
      expect(replayed.map((e) => [e.id, e.type])).toEqual(r.sessionEvents.map((e) => [e.id, e.type]));
      // The other session's event was written too, once.
      expect(await logged(r.sql as SqlClient, 'ses_other')).toEqual(['queue.changed']);
    });

    it('STORE-PG-451: a cancel in the gap whose release statement fails: the result is held again and the cut step stores it, once; the run ends cancelled with SQLite`s run events and messages, the session log the same but for the result`s two events after the state.changed', async () => {
      const gap = stopInTheGap();
      let faults: ReturnType<typeof faultyClient> | undefined;
      const started = (app: App, sessionId: string) => {
        gap.arm(async () => {
          // The release's statement: the tool message's INSERT.
          faults?.failWhere((text, values) => MESSAGE_INSERT.test(text) && values[2] === 'tool');
          await app.agent.cancel(sessionId);
        });
      };
      const script = () => [
        reply().toolCall('echo', { text: 'm' }, 'call_m').usage(100, 20),
        reply().text('no'),
      ];
      const options = { tools: [echoTool], started, title: 'held failed', closers };
      let lite: Awaited<ReturnType<typeof storeRun>>;
      let r: Awaited<ReturnType<typeof storeRun>>;
      try {
        lite = await storeRun(undefined, script(), options);
        r = await storeRun(pg.cluster(), script(), {
          ...options,
          client: (sql) => {
            faults = faultyClient(sql);
            return faults.client;
          },
        });
      } finally {
        gap.restore();
      }
      expect(gap.states).toEqual(['written', 'held']);
      expect(faults?.failed).toHaveLength(1);
      expect(lite.status).toBe('cancelled');
      const shape = storeRunShape(r);
      const liteShape = storeRunShape(lite);
      expect(shape.status).toBe('cancelled');
      expect(shape.run).toEqual(liteShape.run);
      expect(shape.messages).toEqual(liteShape.messages);
      // The result's own, not an interrupted one; stored once, finished.
      const tool = r.messages.filter((m) => m.role === 'tool');
      expect(tool.map((m) => m.parts.map((p) => ('output' in p ? p.output : p.type)))).toEqual([['echo: m']]);
      expect(tool[0]?.finished_at).not.toBeNull();
      // The failed statement's events could not keep their place: the cut step's write comes after
      // the stop's state.changed; otherwise SQLite's log, each event once.
      const moved = (types: string[]) => {
        const at = types.indexOf('tool.finished');
        const out = [...types];
        out.splice(at, 2);
        out.splice(at + 1, 0, 'tool.finished', 'message.created');
        return out;
      };
      expect(shape.session).toEqual(moved(liteShape.session));
      const at = shape.session.indexOf('tool.started');
      expect(shape.session.slice(at, at + 4)).toEqual([
        'tool.started',
        'state.changed',
        'tool.finished',
        'message.created',
      ]);
      const ids = r.sessionEvents.map((e) => e.id);
      expect(ids).toEqual(ids.map((_, i) => ids[0] + i));
    });
  },
);
