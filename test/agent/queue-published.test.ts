/**
 * The queue a run's start publishes (issue 18 item 6): the session's queued runs as the drain
 * that starts it just read them, without the run, not read again; every `queue.changed` a
 * drained queue publishes is the queue of that moment.
 */
import { describe, expect, it, vi } from 'vitest';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';

describe('the queue published when a queued run starts', () => {
  it('STORE-PG-75: a drain reads the queue once per run it starts; the queue.changed events are the queue of each moment', async () => {
    const { app, events } = await agentApp([reply().text('one'), reply().text('two')]);
    const session = await app.agent.createSession({ title: 'q' });
    const a = await app.agent.enqueue({ sessionId: session.id, prompt: 'a', start: false });
    const b = await app.agent.enqueue({ sessionId: session.id, prompt: 'b', start: false });
    const queued = vi.spyOn(app.runs, 'queued');
    const published = () =>
      events
        .filter((e) => e.type === 'queue.changed' && e.session_id === session.id)
        .map((e) => (e.payload as { items: { id: string }[] }).items.map((item) => item.id));
    const before = published().length;
    expect(await app.agent.drain(session.id)).toBe(a.run_id);
    await app.agent.wait(a.run_id);
    await app.agent.wait(b.run_id);
    await app.agent.waitIdle(session.id);
    // a starts: [b]; a ends, b starts: []. Reads: the drain's, and the next drain's after a (its
    // finish's statement said b was queued); b's finish said the queue was empty: no read (p-sqlcpu3).
    expect(published().slice(before)).toEqual([[b.run_id], []]);
    expect(queued).toHaveBeenCalledTimes(2);
    expect((await app.runs.get(b.run_id))?.status).toBe('completed');
    queued.mockRestore();
  });
});
