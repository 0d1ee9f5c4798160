/**
 * The recommendation recorder's cost on a step's signals (issue 17 item 3, p-compatcpu, stop 54).
 * Pins: a signal whose rule has nothing to do (a step's `context.usage` under the token-pressure
 * threshold) queues no step in the ledger and makes no promise while no change is queued and no
 * pending recommendation's window can have ended; the same signal still records over the
 * threshold, and still sweeps when a window has ended (test/readouts/cognition.test.ts covers the
 * sweep with `session.updated`).
 */
import { describe, expect, it } from 'vitest';
import { makeTestApp, type TestClock } from '../helpers/make-test-app';
import { countPromises } from '../helpers/promises';

const usage = (session: string, ratio: number) => ({
  session_id: session,
  run_id: 'run_1',
  input_tokens: Math.round(ratio * 1000),
  context_window: 1000,
  ratio,
});

describe('recommendation recorder promises', () => {
  it('ENGINE-CPU-203: a step’s context.usage under the threshold queues nothing in the ledger while no sweep is due', async () => {
    const app = await makeTestApp({ config: { options: { health_followons: { enabled: false } } } });
    const clock = app.clock as TestClock;
    const s = (await app.sessions.create()).id;
    // A first signal sweeps once (nothing known yet), then no window can end within the hour.
    app.bus.publish(s, 'context.usage', usage(s, 0.1));
    await app.recommendations.flush();
    const events = 200;
    const made = await countPromises(async () => {
      for (let i = 0; i < events; i++) app.bus.publish(s, 'context.usage', usage(s, 0.1));
      await app.recommendations.flush();
    });
    // 0.03 an event (the ledger's flush); 7.03 on d8325a2 (a queued step, its handler and sweep).
    expect(made / events).toBeLessThan(1);
    expect(await app.recommendations.pending({})).toEqual([]);
    // Over the threshold: recorded as before.
    app.bus.publish(s, 'context.usage', usage(s, 0.95));
    await app.recommendations.flush();
    const [pressure] = await app.recommendations.pending({ zone: 'token_pressure' });
    expect(pressure).toMatchObject({ kind: 'compact_session', session_id: s, outcome: 'pending' });
    // Its window (an hour) ended: the next signal under the threshold sweeps it.
    clock.advance(3_600_001);
    app.bus.publish(s, 'context.usage', usage(s, 0.1));
    await app.recommendations.flush();
    expect((await app.recommendations.get(pressure!.id))?.outcome).toBe('expired');
  });
});
