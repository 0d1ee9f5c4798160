/**
 * The compat stream's head after the model request (src/surfaces/http/compat/stream-answer.ts,
 * `AgentService.afterModelRequest`, src/util/request-sent.ts): the head and role chunk are
 * written right after the run's model request, not before it; a route that asks for it writes no
 * head before its first event; a run that does not send its model request in the request's turn
 * (queued behind another run of the session) still opens its stream at once.
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

/** Every socket write of this process as `[socket, text]`, in order. */
function socketWrites(): [Socket, string][] {
  const writes: [Socket, string][] = [];
  const proto = Socket.prototype as unknown as Record<string, (...args: any[]) => unknown>;
  const generic = proto._writeGeneric;
  proto._writeGeneric = function (this: Socket, writev_: boolean, data: any, ...rest: unknown[]) {
    const text = writev_ ? (data as { chunk: unknown }[]).map((d) => String(d.chunk)).join('') : String(data);
    writes.push([this, text]);
    return generic.call(this, writev_, data, ...rest);
  };
  restore.push(() => {
    proto._writeGeneric = generic;
  });
  return writes;
}

const body = (content: string) => ({ model: 'fake/m1', stream: true, messages: [{ role: 'user', content }] });

describe('compat stream: the head after the model request', () => {
  it('ENGINE-CPU-165: the head and role chunk are written right after the model request, before the step batch commits', async () => {
    const { post, provider, url } = await compatServer([reply().text('warm'), reply().text('hello')]);
    const providerPort = Number(new URL(provider.url).port);
    const svcPort = Number(new URL(url).port);
    // A first request leaves a kept-alive socket to the provider, as a warm service has (on a new
    // connection the request's bytes wait for the connect, and the head does not).
    expect((await sseData(await post('/v1/chat/completions', body('warm')))).at(-1)).toBe('[DONE]');
    const writes = socketWrites();
    const response = await post('/v1/chat/completions', body('hi'));
    const data = await sseData(response);
    expect(JSON.parse(data[0]).choices[0].delta.role).toBe('assistant');
    expect(data.at(-1)).toBe('[DONE]');
    // What svc wrote: the model request (to the provider's port) and its answer's head (from its own port).
    const order = writes.flatMap(([socket, text]) => {
      if (socket.remotePort === providerPort && text.startsWith('POST ')) return ['model request'];
      if (socket.localPort === svcPort && text.includes('"role":"assistant"')) return ['head and role'];
      return [];
    });
    // (Later writes to the provider are the run's side requests, after the answer.)
    expect(order.slice(0, 2)).toEqual(['model request', 'head and role']);
    // The head is the next thing svc writes after the model request: no other write between them.
    const at = writes.findIndex(([s, t]) => s.remotePort === providerPort && t.startsWith('POST '));
    const next = writes.slice(at + 1).find(([socket]) => socket.localPort === svcPort);
    expect(next?.[1]).toContain('HTTP/1.1 200');
  });

  it('ENGINE-CPU-166: with headWithFirstEvent the response writes nothing before the route’s first event', async () => {
    const writes = socketWrites();
    const order: string[] = [];
    const tracker = createStreamTracker();
    const hono = new Hono();
    hono.get('/s', (c) => {
      const { stream, response } = openRouteSseStream(c, {
        heartbeatMs: 0,
        tracker,
        headWithFirstEvent: true,
      });
      // A check-phase callback comes after every tick the stream could have written its head in.
      setImmediate(() => {
        order.push(`check phase, head written: ${writes.some(([, t]) => t.startsWith('HTTP/1.1 200'))}`);
        stream.send({ data: 'first' });
        stream.close({ data: '[DONE]' });
      });
      return response;
    });
    const server = createAdaptorServer({ fetch: hono.fetch }) as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    restore.push(() => {
      server.closeAllConnections();
      server.close();
    });
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/s`);
    expect(await response.text()).toBe('data: first\n\ndata: [DONE]\n\n');
    expect(order).toEqual(['check phase, head written: false']);
  });

  it('ENGINE-CPU-167: a run queued behind another run of its session opens its stream at once (role chunk before the first run ends)', async () => {
    // A provider that holds its first answer until released; later ones answer at once.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let asked = 0;
    const provider: Server = createServer((req, res) => {
      req.resume();
      // Other asks (the context window probe) get a 404.
      if (!req.url?.endsWith('/chat/completions')) {
        res.writeHead(404).end();
        return;
      }
      const nth = ++asked;
      req.on('end', async () => {
        if (nth === 1) await held;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const base = { id: `c${nth}`, object: 'chat.completion.chunk', created: 0, model: 'm1' };
        const chunk = (delta: object, finish: string | null = null) =>
          `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
        res.write(chunk({ role: 'assistant', content: `answer ${nth}` }));
        res.write(chunk({}, 'stop'));
        res.end('data: [DONE]\n\n');
      });
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    restore.push(() => {
      provider.closeAllConnections();
      provider.close();
    });
    const base = `http://127.0.0.1:${(provider.address() as AddressInfo).port}/v1`;
    const { post } = await compatServer([], {
      extraConfig: { providers: { fake: { type: 'openai-compat', base_url: base } } },
    });
    const first = await post('/v1/chat/completions', body('first'));
    const sessionId = first.headers.get('x-svc-session-id')!;
    const queued = await post('/v1/chat/completions', body('second'), { 'x-svc-session-id': sessionId });
    expect(queued.status).toBe(200);
    const reader = queued.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('"role":"assistant"')) {
      const { value, done } = await reader.read();
      expect(done).toBe(false);
      text += decoder.decode(value, { stream: true });
    }
    // The first run still holds the session: the queued one has not asked its model.
    expect(asked).toBe(1);
    release();
    expect((await sseData(first)).join('')).toContain('answer 1');
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text).toContain('answer 2');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });
});
