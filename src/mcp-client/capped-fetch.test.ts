import { describe, expect, it } from 'vitest';
import { cappedFetch, MESSAGE_TOO_LARGE, requestIds } from './capped-fetch';

const sse = (text: string, chunk = 7) => {
  const bytes = new TextEncoder().encode(text);
  const base: typeof fetch = async () =>
    new Response(
      new ReadableStream({
        start(controller) {
          for (let i = 0; i < bytes.length; i += chunk) controller.enqueue(bytes.subarray(i, i + chunk));
          controller.close();
        },
      }),
      { headers: { 'content-type': 'text/event-stream' } },
    );
  return base;
};

describe('cappedFetch', () => {
  it('caps each event of a stream, not the stream: many small events go through (LF and CRLF)', async () => {
    const events = `${'data: {"n":12345}\n\n'.repeat(50)}${'data: {"n":12345}\r\n\r\n'.repeat(50)}`;
    const response = await cappedFetch(sse(events), 32)('http://127.0.0.1/mcp');
    expect(await response.text()).toBe(events);
  });

  it('an event over the cap on a stream no request waits on errors the stream', async () => {
    const response = await cappedFetch(sse(`data: ${'x'.repeat(100)}\n\n`), 32)('http://127.0.0.1/mcp');
    await expect(response.text()).rejects.toMatchObject({ code: MESSAGE_TOO_LARGE });
  });

  it("an event over the cap on a POST's stream ends it with an error answer to each request", async () => {
    const response = await cappedFetch(sse(`data: ${'x\r'.repeat(100)}\n\n`), 32)('http://127.0.0.1/mcp', {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call' }),
    });
    const text = await response.text();
    expect(text.length).toBeLessThan(400);
    expect(text).toContain('\nevent: svc-dropped\n\n');
    expect(text).toContain(`data: {"jsonrpc":"2.0","id":7,"error":{"code":${MESSAGE_TOO_LARGE},`);
  });

  it('a JSON answer declared or counted over the cap is refused', async () => {
    const big: typeof fetch = async () =>
      new Response('x'.repeat(100), { headers: { 'content-type': 'application/json' } });
    await expect((await cappedFetch(big, 32)('http://127.0.0.1/mcp')).text()).rejects.toMatchObject({
      code: MESSAGE_TOO_LARGE,
    });
    const declared: typeof fetch = async () =>
      new Response('{}', { headers: { 'content-type': 'application/json', 'content-length': '100' } });
    await expect(cappedFetch(declared, 32)('http://127.0.0.1/mcp')).rejects.toMatchObject({
      code: MESSAGE_TOO_LARGE,
    });
  });

  it('reads the request ids of a POST body', () => {
    expect(requestIds('{"jsonrpc":"2.0","id":1,"method":"x"}')).toEqual([1]);
    expect(requestIds('[{"id":"a","method":"x"},{"method":"notifications/x"},{"id":2,"result":{}}]')).toEqual(
      ['a'],
    );
    expect(requestIds('not json')).toEqual([]);
    expect(requestIds(undefined)).toEqual([]);
  });
});
