/**
 * A run stopped between its tool's end and its step end on PostgreSQL, where the tool's result is
 * held for the step end's statement (p-pgtoolend): the stopper writes the held result first
 * (`StopState.release`, src/agent/end-step.ts `releaseOnStop`), so its session events come before
 * the stop's `state.changed`, as on SQLite (issue 18 item 2: the same session log on both
 * backends). The operator's cancel is STORE-PG-381 (./pg-held-paths.test.ts); here the cancel
 * another process asks through the run ledger (the run's cancel poll).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { stopInTheGap, storeRun, storeRunShape } from '../helpers/pg-recorded-app';
import { postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

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
  },
);
