/**
 * The compat stream's latency path (src/surfaces/http/compat/stream-answer.ts, sse-node.ts `flush`).
 * Pins, over real sockets: a flushed SSE event is handed to the socket at once, not after the
 * promise callbacks queued behind it (Node's response corks its socket until the next tick, which
 * comes only after all of them); text is streamed while the model still holds its last chunk;
 * and the ledger row is complete for a readout sent right after `[DONE]`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Socket } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { createStreamTracker } from '../../src/surfaces/http/sse';
import { openRouteSseStream } from '../../src/surfaces/http/sse-node';
import { reply } from '../helpers/fake-provider';
import { compatServer, sseData } from './compat-helpers';

const restore: (() => void)[] = [];
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});

/** Record the text of every socket write whose text matches `pattern`, as `write:<label>`. */
function watchSocketWrites(pattern: RegExp, log: string[]): void {
  const proto = Socket.prototype as unknown as Record<string, (...args: any[]) => unknown>;
  // `_writev` (several buffered chunks) ends in `_writeGeneric(true, chunks)` too.
  const generic = proto._writeGeneric;
  const note = (text: string) => {
    if (pattern.test(text)) log.push('write');
  };
  proto._writeGeneric = function (this: Socket, writev_: boolean, data: any, ...rest: unknown[]) {
    if (writev_) note((data as { chunk: unknown }[]).map((d) => String(d.chunk)).join(''));
    else note(String(data));
    return generic.call(this, writev_, data, ...rest);
  };
  restore.push(() => {
    proto._writeGeneric = generic;
  });
}

const body = (content: string) => ({ model: 'fake/m1', stream: true, messages: [{ role: 'user', content }] });

describe('compat stream latency path', () => {
  // On Node 24 the response, not its socket, holds a corked chunked body, on 22 the socket: the
  // flush must reach both (this failed on Node 24.22 with the socket's uncork alone, and on 22.23
  // with the response's alone).
  it('ENGINE-COMPAT-3: a flushed event reaches the socket before the promise callbacks queued behind it run', async () => {
    // The compat stream flushes its first text chunk: when the provider's whole answer comes in
    // one read, what follows the text in that stretch (the step's end, the run's finish, the
    // ledger) is a chain of promise callbacks, and Node's response would hand the text to its
    // socket only at the next tick, after all of them.
    const order: string[] = [];
    watchSocketWrites(/data: first text/, order);
    const tracker = createStreamTracker();
    const hono = new Hono();
    hono.get('/s', (c) => {
      const { stream, response } = openRouteSseStream(c, { heartbeatMs: 0, tracker });
      stream.send({ data: 'role' });
      stream.flush();
      void (async () => {
        // The text comes in a promise callback (the provider's parts go through several).
        await Promise.resolve();
        stream.send({ data: 'first text' });
        stream.flush();
        // The rest of the answer's stretch: promise callbacks, no I/O.
        for (let i = 0; i < 100; i++) await Promise.resolve();
        order.push('stretch done');
        stream.close({ data: '[DONE]' });
      })();
      return response;
    });
    const server = createAdaptorServer({ fetch: hono.fetch }) as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    restore.push(() => {
      server.closeAllConnections();
      server.close();
    });
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/s`);
    expect(await response.text()).toBe('data: role\n\ndata: first text\n\ndata: [DONE]\n\n');
    expect(order).toEqual(['write', 'stretch done']);
  });

  it('ENGINE-COMPAT-4: text is streamed while the model still holds its last chunk', async () => {
    // A provider that sends its text, then holds the finish until the client has read the text.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const server: Server = createServer((req, res) => {
      req.resume();
      req.on('end', async () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const base = { id: 'c1', object: 'chat.completion.chunk', created: 0, model: 'm1' };
        const chunk = (delta: object, finish: string | null = null) =>
          `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        res.write(chunk({ role: 'assistant', content: 'early text' }));
        await held;
        res.write(chunk({}, 'stop'));
        res.end('data: [DONE]\n\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    restore.push(() => {
      server.closeAllConnections();
      server.close();
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const { post } = await compatServer([], {
      extraConfig: { providers: { fake: { type: 'openai-compat', base_url: url } } },
    });
    const response = await post('/v1/chat/completions', body('hold'));
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('"content":"early text"')) {
      const { value, done } = await reader.read();
      // The stream ended without the text: it was not streamed before the model's end.
      expect(done).toBe(false);
      text += decoder.decode(value, { stream: true });
    }
    expect(text).not.toContain('[DONE]');
    release();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('ENGINE-COMPAT-5: the ledger row is complete for a readout sent right after [DONE]', async () => {
    const { post, get } = await compatServer([reply().text('one'), reply().text('two')]);
    for (const content of ['a', 'b']) {
      const response = await post('/v1/chat/completions', body(content));
      const id = response.headers.get('x-request-id');
      expect((await sseData(response)).at(-1)).toBe('[DONE]');
      const listed = (await (await get('/v1/openai-compat/runs')).json()) as {
        runs: { request_id: string; status: string; finish_reason: string | null; http_status: number }[];
      };
      expect(listed.runs.find((r) => r.request_id === id)).toMatchObject({
        status: 'completed',
        finish_reason: 'stop',
        http_status: 200,
      });
    }
  });
});
