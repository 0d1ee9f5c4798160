/**
 * The compat surface under load (issue 17 item 3), behaviour only (timing lives in
 * bench/compat.bench.mjs): the bounded run queue lets `max_concurrent_runs` requests run, queues
 * `max_queued_requests` more and answers the rest 429 with Retry-After and the flat error body
 * (COMPAT-28/29) without starting anything; the queued ones complete with complete ledger rows; a
 * queued client that goes away leaves the queue; the AI SDK tool set is built once per tool set and
 * reused across requests.
 */
import { describe, expect, it } from 'vitest';
import { toolSetBuildCount } from '../../src/agent/tool-bridge';
import { compatRunQueue, createRunQueue } from '../../src/surfaces/http/compat/run-queue';
import { reply } from '../helpers/fake-provider';
import { compatServer, sseData, TOKEN } from './compat-helpers';

const ask = (content: string, stream = false) => ({
  model: 'fake/m1',
  stream,
  ...(stream ? { stream_options: { include_usage: true } } : {}),
  messages: [{ role: 'user' as const, content }],
});

async function waitFor(predicate: () => boolean, what: string, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('compat run queue', () => {
  it('COMPAT-28 COMPAT-29: past the queue depth a request gets 429 with Retry-After; the queued ones complete with complete ledger rows', async () => {
    const { app, post, get, provider } = await compatServer(
      [reply().text('first answer'), reply().text('second answer')],
      { compat: { max_concurrent_runs: 1, max_queued_requests: 2 } },
    );
    const queue = compatRunQueue(app);
    // The test holds the one run slot, so the next two requests wait in the queue.
    const held = await queue.acquire();
    const first = post('/v1/chat/completions', ask('one'));
    const second = post('/v1/chat/completions', ask('two', true));
    await waitFor(() => queue.stats().queued === 2, 'two queued requests');
    expect(provider.requests).toHaveLength(0);

    const refused = await post('/v1/chat/completions', ask('three'));
    expect(refused.status).toBe(429);
    const seconds = Number(refused.headers.get('retry-after'));
    expect(Number.isInteger(seconds) && seconds >= 1).toBe(true);
    expect(refused.headers.get('x-should-retry')).toBe('true');
    const body = (await refused.json()) as { error: unknown; code: unknown };
    expect(body.code).toBe(429);
    expect(typeof body.error).toBe('string');
    expect(body.error).toMatch(/busy.*max_queued_requests = 2.*retry after/);
    expect(queue.stats()).toMatchObject({ running: 1, queued: 2, rejected: 1 });

    held();
    const one = await first;
    expect(one.status).toBe(200);
    expect(((await one.json()) as any).choices[0].message.content).toBe('first answer');
    const two = await second;
    expect(two.status).toBe(200);
    const chunks = await sseData(two);
    expect(chunks.at(-1)).toBe('[DONE]');
    const text = chunks
      .slice(0, -1)
      .map((c) => JSON.parse(c).choices[0]?.delta?.content ?? '')
      .join('');
    expect(text).toBe('second answer');
    expect(provider.requests).toHaveLength(2);
    expect(queue.stats()).toMatchObject({ running: 0, queued: 0 });

    // Two ledger rows, both complete; the refused request left none.
    const listed = (await (await get('/v1/openai-compat/runs')).json()) as any;
    expect(listed.total).toBe(2);
    for (const row of listed.runs) {
      expect(row).toMatchObject({ status: 'completed', run_status: 'completed', finish_reason: 'stop' });
      expect(row.http_status).toBe(200);
      expect(row.usage.total_tokens).toBeGreaterThan(0);
      expect(typeof row.finished_at).toBe('number');
      const events = (await (await get(`/v1/openai-compat/runs/${row.request_id}/events`)).json()) as any;
      const types = events.events.map((e: { type: string }) => e.type);
      expect(types).toContain('openai_compat.request');
      expect(types.at(-1)).toBe('openai_compat.response');
    }
  });

  it('max_queued_requests = 0 refuses at once when every slot is busy; a freed slot serves the next request', async () => {
    const { app, post } = await compatServer([reply().text('served')], {
      compat: { max_concurrent_runs: 1, max_queued_requests: 0 },
    });
    const held = await compatRunQueue(app).acquire();
    const refused = await post('/v1/chat/completions', ask('busy'));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).not.toBeNull();
    held();
    const served = await post('/v1/chat/completions', ask('free'));
    expect(served.status).toBe(200);
    expect(((await served.json()) as any).choices[0].message.content).toBe('served');
  });

  it('a queued client that goes away leaves the queue and starts nothing', async () => {
    const { app, post, provider, get, url } = await compatServer([reply().text('after')], {
      compat: { max_concurrent_runs: 1, max_queued_requests: 4 },
    });
    const queue = compatRunQueue(app);
    const held = await queue.acquire();
    const controller = new AbortController();
    const abandoned = fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(ask('never mind')),
      signal: controller.signal,
    }).catch((error: Error) => error);
    await waitFor(() => queue.stats().queued === 1, 'a queued request');
    controller.abort();
    expect(await abandoned).toBeInstanceOf(Error);
    await waitFor(() => queue.stats().queued === 0, 'the abandoned request to leave the queue');
    held();
    const next = await post('/v1/chat/completions', ask('next'));
    expect(next.status).toBe(200);
    expect(((await next.json()) as any).choices[0].message.content).toBe('after');
    // Only the request that ran reached the model and the ledger.
    expect(provider.requests).toHaveLength(1);
    expect(((await (await get('/v1/openai-compat/runs')).json()) as any).total).toBe(1);
  });
});

describe('run queue unit', () => {
  it('grants in arrival order, refuses past the depth, and drops an aborted waiter', async () => {
    const queue = createRunQueue(() => ({ concurrency: 2, depth: 2 }));
    const a = await queue.acquire();
    const b = await queue.acquire();
    const order: string[] = [];
    const c = queue.acquire().then((free) => {
      order.push('c');
      return free;
    });
    const controller = new AbortController();
    const d = queue.acquire(controller.signal);
    await expect(queue.acquire()).rejects.toMatchObject({ code: 'rate_limited', status: 429 });
    controller.abort();
    await expect(d).rejects.toMatchObject({ code: 'cancelled' });
    expect(queue.stats()).toMatchObject({ running: 2, queued: 1, rejected: 1 });
    const e = queue.acquire().then((free) => {
      order.push('e');
      return free;
    });
    a();
    a(); // idempotent: frees one slot only
    (await c)();
    b();
    (await e)();
    expect(order).toEqual(['c', 'e']);
    expect(queue.stats()).toMatchObject({ running: 0, queued: 0 });
  });
});

describe('tool schemas reused across requests', () => {
  it('builds the AI SDK tool set once per tool set, not once per compat request, and still sends every schema', async () => {
    const { post, provider } = await compatServer([reply().text('a'), reply().text('b'), reply().text('c')]);
    const first = await post('/v1/chat/completions', ask('first'));
    expect(first.status).toBe(200);
    const afterFirst = toolSetBuildCount();
    for (const content of ['second', 'third']) {
      const response = await post('/v1/chat/completions', ask(content));
      expect(response.status).toBe(200);
    }
    expect(toolSetBuildCount()).toBe(afterFirst);
    // The reused set still carries each tool's JSON Schema to the model, the same every time.
    const tools = provider.requests.map((r) => JSON.stringify(r.body.tools));
    expect(provider.requests[0].body.tools.length).toBeGreaterThan(0);
    expect(provider.requests[0].body.tools[0].function.parameters).toMatchObject({ type: 'object' });
    expect(new Set(tools).size).toBe(1);
  });
});
