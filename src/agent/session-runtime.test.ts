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

describe('AgentCore deferred results', () => {
  it('COMPAT-PERF-113: a run’s deferred makes its promise only when asked; an asked one is resolved by settle', async () => {
    const host = { runs: {}, clock: { now: () => 0 } } as unknown as AgentHost;
    const core = createAgentCore({} as AgentDeps, host);
    let made = 0;
    const Native = Promise;
    const counting = class extends Native<unknown> {
      constructor(executor: ConstructorParameters<typeof Promise>[0]) {
        made++;
        super(executor);
      }
    };
    globalThis.Promise = counting as unknown as PromiseConstructor;
    let unasked: ReturnType<typeof core.deferred>;
    try {
      unasked = core.deferred('run_unasked');
    } finally {
      globalThis.Promise = Native;
    }
    // b2229f4: one promise a deferred, asked or not (a compat request's run is never asked).
    expect(made).toBe(0);
    expect(unasked.asked).toBe(false);
    await core.settle('run_unasked');

    const asked = core.deferred('run_asked');
    const waiting = asked.promise;
    expect(asked.asked).toBe(true);
    expect(core.deferred('run_asked').promise).toBe(waiting);
    asked.resolve({ run_id: 'run_asked', status: 'completed' } as never);
    await expect(waiting).resolves.toMatchObject({ run_id: 'run_asked', status: 'completed' });
  });
});
