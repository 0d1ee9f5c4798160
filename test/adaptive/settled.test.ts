/**
 * `settled()` at a run's start: with the layer off the monitor has nothing to do for run.started,
 * so the run does not wait an event-loop turn for it (issue 17); with the layer on it still waits.
 * @module
 */
import { describe, expect, it } from 'vitest';
import { agentApp } from '../helpers/agent-harness';
import { adaptiveApp } from './helpers';

/** Whether `settled()` after `publish()` answered only after a `setImmediate` queued before both. */
async function waitedATurn(publish: () => void, settled: () => Promise<void>): Promise<boolean> {
  let turned = false;
  setImmediate(() => {
    turned = true;
  });
  publish();
  await settled();
  return turned;
}

describe('adaptive settled() at a run start', () => {
  it('ENGINE-STEP-8: with the layer off, a run.started queues no monitor work to wait for', async () => {
    const { app } = await agentApp([]);
    try {
      const session = await app.sessions.create({ title: 'off' });
      const adaptive = app.adaptive;
      expect(adaptive).toBeDefined();
      if (!adaptive) return;
      await adaptive.settled();
      const publish = () => app.bus.publish(session.id, 'run.started', { run_id: 'r1', parent_run_id: null });
      expect(await waitedATurn(publish, () => adaptive.settled())).toBe(false);
    } finally {
      await app.close();
    }
  });

  it('ENGINE-STEP-8: with the layer on, settled() still waits for the run.started handling', async () => {
    const { app } = await adaptiveApp([]);
    try {
      const session = await app.sessions.create({ title: 'on' });
      const adaptive = app.adaptive;
      expect(adaptive).toBeDefined();
      if (!adaptive) return;
      await adaptive.settled();
      const publish = () => app.bus.publish(session.id, 'run.started', { run_id: 'r1', parent_run_id: null });
      expect(await waitedATurn(publish, () => adaptive.settled())).toBe(true);
    } finally {
      await app.close();
    }
  });
});
