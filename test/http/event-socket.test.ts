/**
 * `GET /v1/sessions/{id}/events` as a WebSocket (src/surfaces/http/event-socket.ts), read with the
 * `ws` client against startHttpServer on 127.0.0.1. Pins:
 * - WEB-WS-1: with `last_event_id` it sends exactly what the SSE stream sends with `Last-Event-ID`
 *   (the same events, ids and data, none twice), then live events;
 * - WEB-WS-2: heartbeats arrive as comments;
 * - WEB-WS-3: a wrong or missing token is one `svc_error` message (401, the route's JSON body) and
 *   close 4401; the token subprotocol is never echoed (the server selects `svc.events.v1`);
 * - WEB-WS-4: an unknown session is `svc_error` 404, close 4404;
 * - WEB-WS-5: with no token, an upgrade from another origin is refused (403, close 4403), one from
 *   the server's own origin streams;
 * - WEB-WS-6: an upgrade to another path, to another protocol or without `svc.events.v1` is
 *   answered with an HTTP error and closed; the server goes on serving;
 * - WEB-WS-7: shutdown sends the socket's stream `shutdown` and closes it (1000);
 * - WEB-WS-8: `sse_max_streams_per_session` counts WebSocket streams with the others.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { createParser } from 'eventsource-parser';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startHttpServer } from '../../src/surfaces/http/server';
import { makeTestApp } from '../helpers/make-test-app';
import { until } from '../helpers/until';
import { sseReader } from './sse-reader';

const TOKEN = 'socket-test-token-7';
const cleanup: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function serve(
  options: { http?: Record<string, unknown>; heartbeatMs?: number; token?: boolean } = {},
) {
  const app = await makeTestApp({ config: { services: { http: { ...options.http } } } });
  const server = await startHttpServer({
    config: app.config,
    flags: options.token === false ? { port: 0, auth: 'none' } : { port: 0, token: TOKEN },
    createApp: async () => app,
    http: { sseHeartbeatMs: options.heartbeatMs ?? 0 },
  });
  cleanup.push(() => server.close());
  const session = await app.sessions.create({ title: 'socket' });
  return { app, server, session };
}

interface SocketEvent {
  event?: string;
  id?: string;
  data: string;
}

/** A `ws` client of the route: its messages parsed as SSE text, its close and handshake kept. */
function openSocket(
  url: string,
  path: string,
  options: { token?: string; origin?: string; protocols?: string[] } = {},
) {
  const protocols = options.protocols ?? [
    'svc.events.v1',
    ...(options.token !== undefined
      ? [`svc.bearer.${Buffer.from(options.token).toString('base64url')}`]
      : []),
  ];
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${path}`, protocols, {
    ...(options.origin ? { origin: options.origin } : {}),
    handshakeTimeout: 10_000,
  });
  const events: SocketEvent[] = [];
  const comments: string[] = [];
  const messages: string[] = [];
  const parser = createParser({
    onEvent: (e) => events.push({ event: e.event, id: e.id, data: e.data }),
    onComment: (c) => comments.push(c.trim()),
  });
  let echoed: string | undefined;
  let refusedWith: number | undefined;
  let close: { code: number; reason: string } | undefined;
  ws.on('upgrade', (response: { headers: Record<string, string> }) => {
    echoed = response.headers['sec-websocket-protocol'];
  });
  ws.on('unexpected-response', (_request, response) => {
    refusedWith = response.statusCode;
    response.resume();
  });
  ws.on('message', (data) => {
    const text = String(data);
    messages.push(text);
    if (!text.startsWith('{')) parser.feed(text);
  });
  ws.on('error', () => {});
  ws.on('close', (code, reason) => {
    close = { code, reason: String(reason) };
  });
  cleanup.push(() => ws.terminate());
  return {
    ws,
    events,
    comments,
    messages,
    echoed: () => echoed,
    refusedWith: () => refusedWith,
    closed: () => close,
    async waitClosed() {
      await until(() => close !== undefined || refusedWith !== undefined, 'the socket to close');
      return close;
    },
  };
}

const eventsPath = (id: string, query = '') => `/v1/sessions/${id}/events${query}`;

describe('the session event stream over a WebSocket', () => {
  it('WEB-WS-1: replays after last_event_id exactly as the SSE stream does after Last-Event-ID, then goes live', async () => {
    const { app, server, session } = await serve();
    const published = [];
    for (let i = 0; i < 5; i++) published.push(await app.bus.publishStored(session.id, 'tick', { n: i }));
    const after = published[1].id;
    const last = published[4].id;

    const response = await fetch(`${server.url}${eventsPath(session.id, '?attach=0')}`, {
      headers: { authorization: `Bearer ${TOKEN}`, 'last-event-id': String(after) },
    });
    const sse = sseReader(response);
    const overSse: SocketEvent[] = [];
    for (;;) {
      const e = await sse.next();
      overSse.push({ event: e.event, id: e.id, data: e.data });
      if (e.id === String(last)) break;
    }
    await sse.cancel();

    const socket = openSocket(server.url, eventsPath(session.id, `?attach=0&last_event_id=${after}`), {
      token: TOKEN,
    });
    await until(() => socket.events.some((e) => e.id === String(last)), 'the replay over the socket');
    expect(socket.events).toEqual(overSse);
    expect(socket.events.map((e) => e.event)).toEqual(['connected', 'tick', 'tick', 'tick']);

    const live = await app.bus.publishStored(session.id, 'tick', { n: 5 });
    await until(() => socket.events.some((e) => e.id === String(live.id)), 'the live event');
    const ids = socket.events.filter((e) => e.event === 'tick').map((e) => Number(e.id));
    expect(ids).toEqual([published[2].id, published[3].id, published[4].id, live.id]);
    expect(socket.echoed()).toBe('svc.events.v1');
    expect(socket.ws.protocol).toBe('svc.events.v1');
  });

  it('WEB-WS-11: a socket stream is an attached client, named as a WebSocket, until it closes', async () => {
    const { app, server, session } = await serve();
    const clients = () => app.permissions.attachments(session.id).map((a) => a.client);
    expect(clients()).toEqual([]);
    const socket = openSocket(server.url, eventsPath(session.id), { token: TOKEN });
    await until(() => socket.events.some((e) => e.event === 'connected'), 'the connected event');
    expect(clients()).toEqual(['http (WebSocket)']);
    socket.ws.close();
    await until(() => clients().length === 0, 'the attachment let go');
  });

  it('WEB-WS-2: heartbeats arrive over the socket', async () => {
    const { server, session } = await serve({ heartbeatMs: 50 });
    const socket = openSocket(server.url, eventsPath(session.id, '?attach=0'), { token: TOKEN });
    await until(() => socket.comments.length >= 2, 'two heartbeats');
    expect(socket.comments.slice(0, 2)).toEqual(['ping 1', 'ping 2']);
    expect(socket.events[0]?.event).toBe('connected');
  });

  it('WEB-WS-3: a wrong or missing token is an svc_error 401 and close 4401; the token protocol is never echoed', async () => {
    const { server, session } = await serve();
    for (const token of ['not-the-token', undefined]) {
      const socket = openSocket(server.url, eventsPath(session.id), { token });
      expect(await socket.waitClosed()).toMatchObject({ code: 4401 });
      expect(socket.messages).toHaveLength(1);
      const { svc_error } = JSON.parse(socket.messages[0]);
      expect(svc_error.status).toBe(401);
      expect(svc_error.body.error).toMatchObject({ type: 'unauthorized' });
      expect(socket.echoed()).toBe('svc.events.v1');
    }
    expect(server.streams.size).toBe(0);
  });

  it('WEB-WS-4: an unknown session is an svc_error 404 and close 4404', async () => {
    const { server } = await serve();
    const socket = openSocket(server.url, eventsPath('no-such-session'), { token: TOKEN });
    expect(await socket.waitClosed()).toMatchObject({ code: 4404 });
    expect(JSON.parse(socket.messages[0]).svc_error).toMatchObject({
      status: 404,
      body: { error: { type: 'not_found' } },
    });
  });

  it('WEB-WS-5: with no token, an upgrade from another origin is refused and one from the server’s own streams', async () => {
    const { server, session } = await serve({ token: false });
    const foreign = openSocket(server.url, eventsPath(session.id, '?attach=0'), {
      origin: 'http://evil.example',
    });
    expect(await foreign.waitClosed()).toMatchObject({ code: 4403 });
    expect(JSON.parse(foreign.messages[0]).svc_error).toMatchObject({
      status: 403,
      body: { error: { type: 'forbidden' } },
    });
    const own = openSocket(server.url, eventsPath(session.id, '?attach=0'), { origin: server.url });
    await until(
      () => own.events.some((e) => e.event === 'session.created'),
      'the stream from its own origin',
    );
    expect(own.closed()).toBeUndefined();
  });

  it('WEB-WS-6: another path, another protocol or no svc.events.v1 is refused with an HTTP error; the server carries on', async () => {
    const { server, session } = await serve();
    const otherPath = openSocket(server.url, '/v1/sessions', { token: TOKEN });
    await otherPath.waitClosed();
    expect(otherPath.refusedWith()).toBe(404);
    const noProtocol = openSocket(server.url, eventsPath(session.id), { protocols: ['chat'] });
    await noProtocol.waitClosed();
    expect(noProtocol.refusedWith()).toBe(400);
    const h2c = await rawUpgrade(server.url, eventsPath(session.id), 'h2c');
    expect(h2c.status).toBe(400);
    expect(JSON.parse(h2c.body).error.message).toMatch(/only to a WebSocket .*without an Upgrade header/);
    // No Host: the 400 every request without one gets (a stream's auth reads the Host).
    const noHost = await rawSocketAnswer(
      server.url,
      `GET ${eventsPath(session.id)} HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
        'Sec-WebSocket-Protocol: svc.events.v1\r\n\r\n',
    );
    expect(noHost).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(noHost.slice(noHost.indexOf('\r\n\r\n') + 4))).toEqual({
      error: { message: 'bad request: Missing host header', type: 'invalid_input' },
    });
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    const socket = openSocket(server.url, eventsPath(session.id, '?attach=0'), { token: TOKEN });
    await until(
      () => socket.events.some((e) => e.event === 'session.created'),
      'a stream after the refusals',
    );
  });

  it('WEB-WS-7: shutdown sends the socket stream shutdown and closes it', async () => {
    const { server, session } = await serve();
    const socket = openSocket(server.url, eventsPath(session.id, '?attach=0'), { token: TOKEN });
    await until(() => socket.events.some((e) => e.event === 'session.created'), 'the stream');
    expect(server.streams.size).toBe(1);
    const closing = server.close('test');
    expect(await socket.waitClosed()).toMatchObject({ code: 1000 });
    expect(socket.events.at(-1)?.event).toBe('shutdown');
    await closing;
    expect(server.streams.size).toBe(0);
  });

  it('WEB-WS-8: sse_max_streams_per_session counts the WebSocket streams', async () => {
    const { server, session } = await serve({ http: { sse_max_streams_per_session: 2 } });
    const path = eventsPath(session.id, '?attach=0');
    const response = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const sse = sseReader(response);
    await sse.take(2);
    const first = openSocket(server.url, path, { token: TOKEN });
    await until(() => first.events.some((e) => e.event === 'session.created'), 'the first socket stream');
    const second = openSocket(server.url, path, { token: TOKEN });
    expect(await second.waitClosed()).toMatchObject({ code: 1000 });
    const dropped = second.events.at(-1);
    expect(dropped?.event).toBe('dropped');
    expect(JSON.parse(dropped?.data ?? '{}')).toMatchObject({ reason: 'stream_limit' });
    expect(server.streams.size).toBe(2);
    expect(first.closed()).toBeUndefined();
    await sse.cancel();
  });
});

/** An upgrade to `protocol` sent by hand: the status and body of the answer. */
/** What the server answers a request written as is on a new connection, read to its close. */
function rawSocketAnswer(url: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(url).port), '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      answer += chunk;
    });
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}

function rawUpgrade(url: string, path: string, protocol: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, {
      headers: { connection: 'Upgrade', upgrade: protocol, authorization: `Bearer ${TOKEN}` },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('upgrade', () => reject(new Error('upgraded')));
    req.on('error', reject);
    req.end();
  });
}
