import { describe, expect, it } from 'vitest';
import type { AgentDeps, AgentHost } from './deps';
import { createAgentCore, RESTING_RUNTIMES } from './session-runtime';

describe('AgentCore runtimes', () => {
  it('bounded: the runtimes of sessions at rest leave the map; one with anything in flight stays', () => {
    const core = createAgentCore({} as AgentDeps, {} as AgentHost);
    const running = core.runtime('ses_running');
    running.state = 'running';
    running.runId = 'run_1';
    running.controller = new AbortController();
    const waited = core.runtime('ses_waited');
    waited.state = 'running';
    waited.runId = 'run_2';
    waited.idleWaiters.add(() => {});
    const draining = core.runtime('ses_draining');
    draining.draining = true;
    for (let i = 0; i < 10 * RESTING_RUNTIMES; i++) core.runtime(`ses_${i}`);
    expect(core.runtimes.size).toBeLessThanOrEqual(RESTING_RUNTIMES + 1);
    expect(core.runtime('ses_running')).toBe(running);
    expect(core.runtime('ses_waited')).toBe(waited);
    expect(core.runtime('ses_draining')).toBe(draining);
    // The newest session's runtime is kept as made.
    const last = core.runtimes.get(`ses_${10 * RESTING_RUNTIMES - 1}`);
    expect(last).toMatchObject({ state: 'idle', runId: null });
    // A session at rest asked for again is idle, as before.
    expect(core.runtime('ses_0')).toMatchObject({ state: 'idle', runId: null });
  });
});
