/**
 * The autopilot worker's log while its ticks fail (a database away fails every tick, once a
 * second): the first failure at once, then at most one line a minute with the count, and one line
 * when a tick succeeds again; a failing read of the runs it started fails the tick, not the worker.
 */
import { describe, expect, it } from 'vitest';
import { configSchema } from '../config/schema';
import { SvcError } from '../errors';
import { createMemoryLogger } from '../log';
import { createRedactor } from '../redact';
import { createAutopilotWorker } from './autopilot-worker';

function worker() {
  let now = 1_000_000;
  let down = false;
  const log = createMemoryLogger();
  const config = configSchema().parse({});
  const failing = () => {
    if (down) throw new SvcError('unavailable', 'cannot reach PostgreSQL at db:5432: connection refused');
  };
  const w = createAutopilotWorker({
    runs: {
      get: async () => {
        failing();
        return undefined;
      },
      list: async () => {
        failing();
        return [];
      },
      events: async () => [],
    },
    agent: () => ({ state: async () => ({}) as never, drain: async () => undefined }),
    scheduler: {
      tick: async () => {
        failing();
        return [{ schedule_id: 's', status: 'fired', run_id: 'run_1' }] as never;
      },
    },
    config: () => config,
    clock: { now: () => now },
    log,
    redactor: createRedactor(),
  });
  const lines = () => log.records.filter((r) => /autopilot/.test(r.message)).map((r) => [r.level, r.message]);
  return {
    w,
    log,
    lines,
    advance: (ms: number) => (now += ms),
    setDown: (value: boolean) => (down = value),
  };
}

describe('the autopilot worker during an outage', () => {
  it('logs the first failed tick, then at most once a minute with a count, and once when ticks succeed again', async () => {
    const t = worker();
    await t.w.tick();
    t.setDown(true);
    for (let i = 0; i < 150; i++) {
      await t.w.tick();
      t.advance(1_000);
    }
    expect(t.w.state.errors).toBe(150);
    expect(t.lines()).toEqual([
      ['error', 'autopilot tick failed'],
      ['error', 'autopilot ticks still failing'],
      ['error', 'autopilot ticks still failing'],
    ]);
    const still = t.log.records.filter((r) => r.message === 'autopilot ticks still failing');
    expect(still).toMatchObject([
      { failed_ticks: 60, failed_ticks_total: 61, failing_for_ms: 60_000 },
      { failed_ticks: 60, failed_ticks_total: 121, failing_for_ms: 120_000 },
    ]);
    t.setDown(false);
    await t.w.tick();
    expect(t.lines().at(-1)).toEqual(['info', 'autopilot tick succeeded again']);
    expect(t.log.records.at(-1)).toMatchObject({ failed_ticks: 150, failing_for_ms: 150_000 });
    // A later outage is logged at once again.
    t.setDown(true);
    await t.w.tick();
    expect(t.lines().at(-1)).toEqual(['error', 'autopilot tick failed']);
  });
});
