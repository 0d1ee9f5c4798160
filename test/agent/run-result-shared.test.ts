/**
 * A run's result asked for by several callers at once (its waiters and its stream, issue 18 item
 * 6): one read of the run's row answers them all once the run has ended; each caller gets its own
 * copy; a result that was not final is read again by the caller that came later.
 */
import { describe, expect, it, vi } from 'vitest';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import type { TestClock } from '../helpers/make-test-app';

describe('a run result asked for at once', () => {
  it('STORE-PG-74: callers asking at the same moment share one read of an ended run; each gets its own copy', async () => {
    const { app } = await agentApp([reply().text('done')]);
    const result = await app.agent.run({ prompt: 'go' });
    expect(result.status).toBe('completed');
    // Past the window in which an ended run's result is kept: the next callers read it.
    (app.clock as TestClock).advance(10_000);
    const require = vi.spyOn(app.runs, 'require');
    const [one, two, three] = await Promise.all([
      app.agent.result(result.run_id),
      app.agent.result(result.run_id),
      app.agent.result(result.run_id),
    ]);
    expect(require).toHaveBeenCalledTimes(1);
    expect(one).toEqual(result);
    expect(two).toEqual(result);
    expect(three).toEqual(result);
    expect(two).not.toBe(three);
    require.mockRestore();
  });
});
