/**
 * A lone compat run's first request built during its start's round trip on PostgreSQL (issue 18
 * item 6, p-pgscope; p-pgoverlap's Left 2): the gate of its first model request is right before
 * the model's `doStream` (src/agent/step-driver.ts `opens`), so the first step's preparation
 * (its tools from the funnel, the prompt's conversion) runs while the start statement is on its
 * way. The answer is held by the test until the step's preparation is seen (bounded: on a build
 * whose gate is before the stream, nothing of the step runs while it is held). Since p-pgmodel the
 * model request itself goes before the answer too (its stream read after it): STORE-PG-908 no
 * longer orders the model request after the answer (./pg-compat-start-model.test.ts pins it before,
 * STORE-PG-915); with `SVC_STEP_DRIVER=sdk` it is still after (STORE-PG-909).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app';
import { reply } from '../helpers/fake-provider';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();

describe.skipIf(!pg.available)(
  'a lone compat start’s first request built in its round trip on PostgreSQL',
  () => {
    const closers: (() => Promise<unknown>)[] = [];
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
    });

    /** A compat server on PostgreSQL after one warm request; `order` gets 'model' when the next asks the model. */
    const warmed = async () => {
      const sql = await migratedDatabase(pg.cluster());
      closers.push(() => sql.close());
      const order: string[] = [];
      const script = [
        reply().text('warm'),
        () => {
          order.push('model');
          return reply().text('the answer');
        },
      ];
      const { app, client } = await compatServer(script, { postgres: sql });
      closers.push(() => app.close());
      await streamedAnswer(client);
      await settledCompatRow(app);
      return { app, client, order };
    };

    it('STORE-PG-908: the first step is prepared (its funnel read) before the start’s answer; the answer and row as ever', async () => {
      const { app, client, order } = await warmed();
      let seen!: () => void;
      const stepPrepared = new Promise<void>((resolve) => {
        seen = resolve;
      });
      // The start's answer held until the first step's preparation was seen (at most 5 s).
      const calls = recordStart(app, order, {
        answered: () => Promise.race([stepPrepared, new Promise((resolve) => setTimeout(resolve, 5_000))]),
        funnelled: (n) => n === 2 && seen(),
      });
      expect(await streamedAnswer(client)).toBe('the answer');
      const row = await settledCompatRow(app);
      expect(order.slice(0, 2)).toEqual(['prepared', 'step prepared']);
      expect(order.slice(2).sort()).toEqual(['answered', 'model']);
      expect(row.status).toBe('completed');
      expect([...calls.values()]).toEqual([2]);
    });

    it('STORE-PG-909: with the AI SDK’s streamText (SVC_STEP_DRIVER=sdk) the gate is before the stream’s call: its first step prepared and its model request after the start’s answer', async () => {
      vi.stubEnv('SVC_STEP_DRIVER', 'sdk');
      const { app, client, order } = await warmed();
      // The start's answer held a moment: nothing of the stream may start meanwhile.
      recordStart(app, order, { answered: () => new Promise((resolve) => setTimeout(resolve, 200)) });
      expect(await streamedAnswer(client)).toBe('the answer');
      expect((await settledCompatRow(app)).status).toBe('completed');
      expect(order).toEqual(['prepared', 'answered', 'step prepared', 'model']);
    });
  },
);

/**
 * Records in `order` the start's answer ('answered', once `answered()` settles after it) and each
 * funnel call of the run's session ('prepared', then 'step prepared': its preparation's tools, then
 * its first step's), `funnelled` told each call's number; answers the calls per session.
 */
function recordStart(
  app: App,
  order: string[],
  hooks: { answered(): Promise<unknown>; funnelled?(n: number): unknown },
): Map<string | undefined, number> {
  const create = app.runs.createClaimed!.bind(app.runs);
  app.runs.createClaimed = async (...args) => {
    try {
      return await create(...args);
    } finally {
      await hooks.answered();
      order.push('answered');
    }
  };
  const funnel = app.funnelContext.bind(app);
  const calls = new Map<string | undefined, number>();
  app.funnelContext = (sessionId, overrides, start) => {
    const n = (calls.get(sessionId) ?? 0) + 1;
    calls.set(sessionId, n);
    order.push(n === 1 ? 'prepared' : 'step prepared');
    hooks.funnelled?.(n);
    return funnel(sessionId, overrides, start);
  };
  return calls;
}
