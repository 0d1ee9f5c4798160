/**
 * What clients holding request bodies and connections may cost the HTTP service (stop 82, found
 * by probing the built server: forty clients that each sent 9 MB of a declared 10 MB body, then
 * stalled, held 365 MB for five minutes, on the compat route, `/v1/sessions` and a session's
 * messages alike; connections were unbounded). Pins, with small limits:
 * - `max_body_bytes_in_flight`: the bodies being received count their declared length (a chunked
 *   one the bytes that arrived, so twenty stalled chunked uploads of 4 KB leave room at the
 *   defaults); one that does not fit is a 503 with `Retry-After` and the route's error body (a
 *   chunked one that grows past it too, its connection closed), a request without a body still
 *   passes, and a closed upload gives its bytes back;
 * - `body_idle_timeout_seconds`: a body that stops arriving is a 408 and its connection closed,
 *   its bytes given back; a request whose body arrived whole is not cut however long its run;
 * - `max_connections`: a connection past it is closed unanswered; `headers_timeout_seconds`: headers
 *   that stop arriving are a 408.
 * Outcomes and counts only: a wait is for the server to have seen something, never asserted on.
 */
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { until } from '../helpers/until';
import { compatServer, TOKEN } from './compat-helpers';

/** A socket that wrote `text`; `answer` settles with everything the server sent once it closed. */
function open(url: string, text: string): { socket: Socket; answer: Promise<string> } {
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1', () => socket.write(text));
  const answer = new Promise<string>((resolve, reject) => {
    let received = '';
    socket.setEncoding('utf8');
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer in 10 s')));
    socket.on('data', (chunk) => {
      received += chunk;
    });
    socket.on('close', () => resolve(received));
    socket.on('error', (error) =>
      (error as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(error),
    );
  });
  return { socket, answer };
}

/** The head of a POST declaring `length` bytes of body. */
const post = (path: string, length: number) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\n` +
  `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

const status = (answer: string) => Number(/^HTTP\/1\.1 (\d+)/.exec(answer)?.[1]);
const body = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
const header = (answer: string, name: string) =>
  new RegExp(`^${name}: (.*)$`, 'im').exec(answer.slice(0, answer.indexOf('\r\n\r\n')))?.[1]?.trim();

const ask = { model: 'fake/m1', messages: [{ role: 'user', content: 'hi' }] };

describe('request bodies being received', () => {
  it('HTTP-BODY-1: past max_body_bytes_in_flight a request with a body is a 503 with Retry-After; a closed upload gives its bytes back', async () => {
    const {
      server,
      post: send,
      get,
      provider,
    } = await compatServer([reply().text('served')], {
      extraConfig: { services: { http: { max_body_bytes: 40_000, max_body_bytes_in_flight: 80_000 } } },
    });
    // Two uploads that stall, declaring 40 000 bytes each: the budget is spent.
    const stalled = [
      open(server.url, `${post('/v1/sessions', 40_000)}{"title":"`),
      open(server.url, `${post('/v1/chat/completions', 40_000)}{"messages":[`),
    ];
    await until(() => server.bodyBytesInFlight === 80_000, 'both uploads counted');

    const compat = await send('/v1/chat/completions', ask);
    expect(compat.status).toBe(503);
    expect(compat.headers.get('retry-after')).toBe('2');
    expect(compat.headers.get('x-should-retry')).toBe('true');
    expect(await compat.json()).toEqual({
      error:
        'svc is busy: request bodies being received hold the 80000-byte limit ([services.http].max_body_bytes_in_flight); retry after 2s',
      code: 503,
    });
    const sessions = await send('/v1/sessions', { title: 't' });
    expect(sessions.status).toBe(503);
    expect(((await sessions.json()) as { error: { type: string } }).error.type).toBe('unavailable');
    // No body, nothing to hold: served.
    expect((await get('/v1/openai-compat/posture')).status).toBe(200);
    expect(provider.requests).toHaveLength(0);

    stalled[0].socket.destroy();
    await until(() => server.bodyBytesInFlight === 40_000, 'the closed upload given back');
    const served = await send('/v1/chat/completions', ask);
    expect(served.status).toBe(200);
    expect(((await served.json()) as any).choices[0].message.content).toBe('served');
    expect(server.bodyBytesInFlight).toBe(40_000);
    stalled[1].socket.destroy();
    await until(() => server.bodyBytesInFlight === 0, 'every upload given back');
  });

  it('HTTP-BODY-2: a body that stops arriving is a 408 in the route`s error style, its connection closed and its bytes given back', async () => {
    const { server } = await compatServer([], {
      extraConfig: { services: { http: { body_idle_timeout_seconds: 0.3 } } },
    });
    const compat = await open(server.url, `${post('/v1/chat/completions', 1000)}{"messages":[`).answer;
    expect(status(compat)).toBe(408);
    expect(header(compat, 'connection')).toBe('close');
    expect(header(compat, 'x-should-retry')).toBe('false');
    expect(body(compat)).toEqual({
      error:
        'request body timed out: no byte of it arrived for 0.3s ([services.http].body_idle_timeout_seconds); send the body without pausing',
      code: 408,
    });
    const messages = await open(server.url, `${post('/v1/sessions/ses_x/messages', 1000)}{"role":"`).answer;
    expect(status(messages)).toBe(408);
    expect(body(messages).error.type).toBe('timeout');
    expect(server.bodyBytesInFlight).toBe(0);
  });

  it('HTTP-BODY-3: a request whose body arrived whole is not cut by the body timeout, however long its run', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { server, provider } = await compatServer([reply().text('late answer').pauseAt(1, held)], {
      extraConfig: { services: { http: { body_idle_timeout_seconds: 0.2 } } },
    });
    const text = JSON.stringify(ask);
    const head = post('/v1/chat/completions', Buffer.byteLength(text)).replace(
      '\r\n\r\n',
      '\r\nConnection: close\r\n\r\n',
    );
    const request = open(server.url, `${head}${text}`);
    await until(() => provider.requests.length === 1, 'the run at its provider');
    // Several body timeouts' worth of a silent connection while the run waits.
    await new Promise((resolve) => setTimeout(resolve, 800));
    release();
    const answer = await request.answer;
    expect(status(answer)).toBe(200);
    expect(answer).toContain('late answer');
  });
});

/** The head of a chunked POST (no length declared), then a first chunk of `first`. */
const chunkedPost = (path: string, first: string) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\n` +
  `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunk(first)}`;
const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;

describe('chunked request bodies being received', () => {
  it('HTTP-BODY-4: chunked uploads count the bytes that arrived: twenty that stall after 4 KB leave room for every other body', async () => {
    // The defaults: max_body_bytes 10 MiB, max_body_bytes_in_flight 128 MiB. Counted with 10 MiB
    // each, twelve such uploads held all but 8 MiB of the budget: the thirteenth chunked body on, and
    // any body over 8 MiB, was a 503.
    const { server, post: send, provider } = await compatServer([reply().text('served')]);
    const first = `{"title":"${'x'.repeat(4000)}`;
    const uploads: { socket: Socket; answered: boolean }[] = [];
    for (let i = 0; i < 20; i++) {
      const before = server.bodyBytesInFlight;
      const upload = { ...open(server.url, chunkedPost('/v1/sessions', first)), answered: false };
      upload.socket.once('data', () => {
        upload.answered = true;
      });
      uploads.push(upload);
      await until(() => server.bodyBytesInFlight > before || upload.answered, `upload ${i + 1} seen`);
    }
    expect(uploads.filter((u) => u.answered).length).toBe(0);
    expect(server.bodyBytesInFlight).toBe(20 * Buffer.byteLength(first));

    const served = await send('/v1/chat/completions', ask);
    expect(served.status).toBe(200);
    expect(((await served.json()) as any).choices[0].message.content).toBe('served');
    expect(provider.requests).toHaveLength(1);
    const whole = await open(
      server.url,
      chunkedPost('/v1/sessions', '{"title":"t"}').replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n') +
        '0\r\n\r\n',
    ).answer;
    expect(status(whole)).toBe(201);

    for (const upload of uploads) upload.socket.destroy();
    await until(() => server.bodyBytesInFlight === 0, 'every upload given back');
  });

  it('HTTP-BODY-5: a chunked upload that grows past max_body_bytes_in_flight is a 503 with Retry-After, its connection closed and its bytes given back', async () => {
    const { server, post: send } = await compatServer([], {
      extraConfig: { services: { http: { max_body_bytes: 40_000, max_body_bytes_in_flight: 60_000 } } },
    });
    const declared = open(server.url, `${post('/v1/sessions', 40_000)}{"title":"`);
    await until(() => server.bodyBytesInFlight === 40_000, 'the declared upload counted');
    const first = `{"title":"${'x'.repeat(14_990)}`;
    const growing = open(server.url, chunkedPost('/v1/sessions', first));
    await until(
      () => server.bodyBytesInFlight === 40_000 + Buffer.byteLength(first),
      'the first chunk counted',
    );
    // 10 000 more: 25 000 bytes of body, within max_body_bytes, but past the 60 000 in flight.
    growing.socket.write(chunk('y'.repeat(10_000)));
    const answer = await growing.answer;
    expect(status(answer)).toBe(503);
    expect(header(answer, 'retry-after')).toBe('2');
    expect(header(answer, 'connection')).toBe('close');
    expect(body(answer)).toEqual({
      error: {
        message:
          'svc is busy: request bodies being received hold the 60000-byte limit ([services.http].max_body_bytes_in_flight); retry after 2s',
        type: 'unavailable',
      },
    });
    await until(() => server.bodyBytesInFlight === 40_000, 'the growing upload given back');
    declared.socket.destroy();
    await until(() => server.bodyBytesInFlight === 0, 'every upload given back');
    expect((await send('/v1/sessions', { title: 't' })).status).toBe(201);
  });
});

describe('connections', () => {
  it('HTTP-CONN-1: past max_connections a new connection is closed unanswered; a closed one makes room', async () => {
    const { server, get } = await compatServer([], {
      extraConfig: { services: { http: { max_connections: 2 } } },
    });
    const health = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    const first = open(server.url, health);
    const second = open(server.url, health);
    // Both answered and kept open (keep-alive): two connections.
    const answered = (s: Socket) => new Promise<void>((resolve) => s.once('data', () => resolve()));
    await Promise.all([answered(first.socket), answered(second.socket)]);
    expect(await open(server.url, health).answer).toBe('');
    first.socket.destroy();
    await until(
      async () => (await get('/healthz').catch(() => undefined))?.status === 200,
      'a free connection',
    );
    second.socket.destroy();
  });

  it('HTTP-CONN-2: headers that stop arriving are a 408 after headers_timeout_seconds', async () => {
    const { server } = await compatServer([], {
      extraConfig: { services: { http: { headers_timeout_seconds: 0.5 } } },
    });
    const answer = await open(server.url, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n').answer;
    expect(status(answer)).toBe(408);
    expect(body(answer).error.message).toMatch(/could not be parsed/);
  });
});
