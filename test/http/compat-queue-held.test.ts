/**
 * What a queued compat request holds while it waits for a run slot (issue 17 item 4, p-inflight):
 * with 200 requests at once and 4 slots, nearly every request in flight is a queued one, and what
 * it holds is promoted. From node:http (node-front.ts) it makes no `AbortController` while queued
 * (its request is the queue's `QueueLeave`), no suspended async frame of the route, and still
 * leaves the queue when its client goes away; a waiter on a `QueueLeave` is forgotten when granted.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { chatCompletions } from '../../src/surfaces/http/compat/chat-completions';
import { compatRunQueue, createRunQueue, type QueueLeave } from '../../src/surfaces/http/compat/run-queue';
import { reply } from '../helpers/fake-provider';
import { compatServer, TOKEN } from './compat-helpers';

async function waitFor(predicate: () => boolean, what: string, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('a queued compat request', () => {
  it('COMPAT-PERF-420: makes no AbortController and no async frame of the route while it waits; its client leaving still frees its place', async () => {
    const { app, post, url } = await compatServer([reply().text('after')], {
      compat: { max_concurrent_runs: 1, max_queued_requests: 4 },
    });
    // The route's own functions are plain ones: nothing suspended in them while queued.
    expect(chatCompletions.constructor.name).toBe('Function');
    const queue = compatRunQueue(app);
    const held = await queue.acquire();
    // Controllers made by the service's node:http front (not the test's fetch) while one waits.
    const Original = globalThis.AbortController;
    let made = 0;
    globalThis.AbortController = class extends Original {
      constructor() {
        super();
        if (/node-front/.test(new Error().stack ?? '')) made++;
      }
    };
    try {
      const client = new Original();
      const abandoned = fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'fake/m1', messages: [{ role: 'user', content: 'wait' }] }),
        signal: client.signal,
      }).catch((error: Error) => error);
      await waitFor(() => queue.stats().queued === 1, 'a queued request');
      expect(made).toBe(0);
      client.abort();
      expect(await abandoned).toBeInstanceOf(Error);
      await waitFor(() => queue.stats().queued === 0, 'the abandoned request to leave the queue');
      expect(made).toBe(0);
    } finally {
      globalThis.AbortController = Original;
    }
    held();
    const next = await post('/v1/chat/completions', {
      model: 'fake/m1',
      messages: [{ role: 'user', content: 'next' }],
    });
    expect(next.status).toBe(200);
    expect(((await next.json()) as any).choices[0].message.content).toBe('after');
  });

  it('COMPAT-PERF-421: a waiter on a QueueLeave is told once, and forgotten when granted or gone', async () => {
    const queue = createRunQueue(() => ({ concurrency: 1, depth: 4 }));
    const free = await queue.acquire();
    type Hook = QueueLeave & { waiter?: { leave(): void }; calls: number };
    const hook = (): Hook => {
      const made: Hook = {
        left: false,
        calls: 0,
        onLeave(waiter) {
          made.calls++;
          made.waiter = waiter;
        },
      };
      return made;
    };
    const leaves = [hook(), hook()];
    const [a, b] = leaves;
    const granted = queue.acquire(a);
    const gone = queue.acquire(b);
    expect(a.waiter).toBeDefined();
    expect(queue.stats().queued).toBe(2);
    b.waiter?.leave();
    await expect(gone).rejects.toMatchObject({ code: 'cancelled' });
    expect(b.waiter).toBeUndefined();
    expect(queue.stats().queued).toBe(1);
    free();
    (await granted)();
    expect(a.waiter).toBeUndefined();
    expect(a.calls).toBe(2);
    expect(queue.stats()).toMatchObject({ running: 0, queued: 0 });
    // One the client already left is refused at once.
    await expect(queue.acquire({ left: true, onLeave() {} })).rejects.toMatchObject({ code: 'cancelled' });
  });

  it('COMPAT-PERF-422: enter tells a turn once, with no promise: granted at once when free, in order when freed, refused past the depth or when its client leaves', () => {
    const queue = createRunQueue(() => ({ concurrency: 1, depth: 2 }));
    const told: string[] = [];
    const frees: (() => void)[] = [];
    const turn = (name: string) => ({
      granted(free: () => void) {
        told.push(`${name} granted`);
        frees.push(free);
      },
      refused(error: { code: string }) {
        told.push(`${name} ${error.code}`);
      },
    });
    queue.enter(turn('a'));
    expect(told).toEqual(['a granted']);
    const client = new AbortController();
    queue.enter(turn('b'), client.signal);
    queue.enter(turn('c'));
    queue.enter(turn('d'));
    expect(told).toEqual(['a granted', 'd rate_limited']);
    expect(getEventListeners(client.signal, 'abort')).toHaveLength(1);
    frees[0]();
    expect(told).toEqual(['a granted', 'd rate_limited', 'b granted']);
    // Granted: its abort listener is gone, a later abort tells it nothing.
    expect(getEventListeners(client.signal, 'abort')).toHaveLength(0);
    client.abort();
    const gone = new AbortController();
    queue.enter(turn('e'), gone.signal);
    gone.abort();
    expect(told).toEqual(['a granted', 'd rate_limited', 'b granted', 'e cancelled']);
    frees[1]();
    frees[2]();
    expect(told.at(-1)).toBe('c granted');
    expect(queue.stats()).toMatchObject({ running: 0, queued: 0, rejected: 1 });
  });
});
