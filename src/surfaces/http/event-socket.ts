/**
 * `GET /v1/sessions/{id}/events` as a WebSocket: the same stream (the same SSE text, one message a
 * turn: ./sse-socket.ts) on a connection a browser does not count in its 6 connections to one
 * server over HTTP/1.1, so more than six svc tabs can be live at once (docs/http.md).
 *
 * The upgrade is accepted first; the request then goes through the same Hono app as any other
 * (auth, the session lookup, the stream limits, attach, replay, heartbeats, drop notices, the
 * shutdown tracker), with the socket in its env: the route opens its stream on it. A browser cannot
 * set a header on a WebSocket, so the bearer comes as a subprotocol, `svc.bearer.<base64url(token)>`,
 * beside `svc.events.v1`, the one the server selects (the token is never echoed); `Last-Event-ID`
 * comes as the `last_event_id` query parameter, which the route reads too. A route that answers
 * with anything but a stream (401, 403, 404, 429, 503…) is told as one text message
 * `{"svc_error":{"status","body"}}` and a close with code 4000 + status.
 *
 * Any other upgrade (another path, another protocol) is answered with a JSON error on the socket,
 * which is then closed: nothing else on this server speaks WebSocket.
 * @module
 */
import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import { ALREADY_SENT } from './sse-node';
import type { SocketEnv } from './sse-socket';

export const EVENTS_PROTOCOL = 'svc.events.v1';
export const BEARER_PROTOCOL = 'svc.bearer.';
const EVENTS_PATH = /^\/v1\/sessions\/[^/]+\/events$/;
/** The client sends nothing on the socket; a larger frame closes it (1009). */
const MAX_PAYLOAD = 1024;
/** Request headers of the upgrade itself, not of the request the route reads. */
const UPGRADE_HEADERS = new Set([
  'connection',
  'upgrade',
  'sec-websocket-key',
  'sec-websocket-version',
  'sec-websocket-extensions',
  'sec-websocket-protocol',
]);

export interface EventSocketOptions {
  /** Serves the request built from the upgrade, as node-server's listener serves a request. */
  fetch(request: Request, env: SocketEnv): Response | Promise<Response>;
  /** Shutting down: new upgrades are refused with 503. */
  stopping(): boolean;
}

export interface EventSockets {
  /** Close the sockets that still are open (after the streams were ended at shutdown). */
  closeAll(): void;
  /** Cut them (the shutdown's grace is over). */
  terminateAll(): void;
}

/** Answer the server's upgrades: the session event route's WebSocket, every other one refused. */
export function serveEventSockets(server: Server, options: EventSocketOptions): EventSockets {
  const open = new Set<WebSocket>();
  let sockets: Promise<WebSocketServer> | undefined;
  server.on('upgrade', (incoming: IncomingMessage, socket: Duplex, head: Buffer) => {
    // A socket error (the client went away mid-handshake) must never be thrown.
    socket.on('error', () => {});
    const refusal = options.stopping()
      ? { status: 503, message: 'server shutting down', type: 'unavailable' }
      : upgradeRefusal(incoming);
    if (refusal) return refuseUpgrade(socket, refusal.status, refusal.message, refusal.type);
    // `ws` is loaded on the first upgrade: a server no browser streams from never loads it.
    sockets ??= import('ws').then(
      ({ WebSocketServer }) =>
        new WebSocketServer({
          noServer: true,
          maxPayload: MAX_PAYLOAD,
          clientTracking: false,
          perMessageDeflate: false,
          handleProtocols: (protocols) => (protocols.has(EVENTS_PROTOCOL) ? EVENTS_PROTOCOL : false),
        }),
    );
    void sockets
      .then((wss) =>
        wss.handleUpgrade(incoming, socket, head, (ws) => {
          open.add(ws);
          ws.once('close', () => open.delete(ws));
          void serveSocket(ws, incoming, options);
        }),
      )
      .catch(() => socket.destroy());
  });
  return {
    closeAll() {
      for (const ws of open) ws.close(1001, 'server shutting down');
    },
    terminateAll() {
      for (const ws of open) ws.terminate();
    },
  };
}

/** Why an upgrade is not the session event route's WebSocket, or undefined when it is. */
function upgradeRefusal(
  incoming: IncomingMessage,
): { status: number; message: string; type: string } | undefined {
  if ((incoming.headers.upgrade ?? '').toLowerCase() !== 'websocket')
    return {
      status: 400,
      message: `this server speaks HTTP/1.1 and upgrades only to a WebSocket (asked: ${JSON.stringify(incoming.headers.upgrade ?? '')}); send the request without an Upgrade header (curl: without --http2)`,
      type: 'invalid_input',
    };
  // As every other request (server.ts): Node's own check of a missing Host is off.
  if (incoming.headers.host === undefined)
    return { status: 400, message: 'bad request: Missing host header', type: 'invalid_input' };
  if (incoming.method !== 'GET')
    return { status: 400, message: 'a WebSocket upgrade must be a GET', type: 'invalid_input' };
  if (!EVENTS_PATH.test(pathOf(incoming)))
    return {
      status: 404,
      message: 'only the session event stream (/v1/sessions/{id}/events) is served over a WebSocket',
      type: 'not_found',
    };
  if (!URL.canParse(incoming.url ?? '', `http://${incoming.headers.host ?? 'localhost'}`))
    return { status: 400, message: 'bad request: the Host header is no host name', type: 'invalid_input' };
  if (!protocolsOf(incoming).includes(EVENTS_PROTOCOL))
    return {
      status: 400,
      message: `the session event stream's WebSocket needs the subprotocol ${EVENTS_PROTOCOL}`,
      type: 'invalid_input',
    };
  return undefined;
}

function pathOf(incoming: IncomingMessage): string {
  const url = incoming.url ?? '';
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}

function protocolsOf(incoming: IncomingMessage): string[] {
  const header = incoming.headers['sec-websocket-protocol'] ?? '';
  return header
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
}

/** A JSON error answer written on the raw socket, which is then closed. */
function refuseUpgrade(socket: Duplex, status: number, message: string, type: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(rawErrorAnswer(status, message, type));
  socket.once('finish', () => socket.destroy());
}

/** A whole HTTP/1.1 answer with the usual JSON error body, for a raw socket; the connection closes after it. */
export function rawErrorAnswer(status: number, message: string, type: string): string {
  const body = JSON.stringify({ error: { message, type } });
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

/**
 * Runs the request through the app with the socket in its env. A stream took the socket when the
 * answer is node-server's "already sent" marker; any other answer is the client's error.
 */
async function serveSocket(
  ws: WebSocket,
  incoming: IncomingMessage,
  options: EventSocketOptions,
): Promise<void> {
  // Whatever the client sends is ignored (maxPayload bounds it); an error is followed by 'close'.
  ws.on('message', () => {});
  ws.on('error', () => {});
  const controller = new AbortController();
  ws.once('close', () => controller.abort());
  let response: Response;
  try {
    response = await options.fetch(routeRequest(incoming, controller.signal), { eventSocket: ws });
  } catch {
    response = Response.json({ error: { message: 'internal error', type: 'internal' } }, { status: 500 });
  }
  if (response.headers.get(ALREADY_SENT)) return;
  const text = await response.text().catch(() => '');
  if (ws.readyState !== 1) return;
  const status = response.status >= 400 && response.status < 1000 ? response.status : 500;
  ws.send(JSON.stringify({ svc_error: { status, body: parseBody(text) } }));
  ws.close(4000 + status, STATUS_CODES[status]?.slice(0, 100));
}

/**
 * The request the route reads: the upgrade's URL and headers (Host, Origin, Sec-Fetch-*: the
 * browser checks of auth.ts see them), without the upgrade's own, and the bearer of the token
 * subprotocol as `authorization`.
 */
function routeRequest(incoming: IncomingMessage, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value === undefined || UPGRADE_HEADERS.has(name)) continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  headers.set('accept', 'text/event-stream');
  const bearer = protocolsOf(incoming).find((p) => p.startsWith(BEARER_PROTOCOL));
  if (bearer !== undefined) {
    const token = Buffer.from(bearer.slice(BEARER_PROTOCOL.length), 'base64url').toString('utf8');
    // A token no header can hold is no token: the route answers 401.
    if (!/[\0\r\n]/.test(token)) headers.set('authorization', `Bearer ${token}`);
  }
  const host = incoming.headers.host ?? 'localhost';
  return new Request(new URL(incoming.url ?? '/', `http://${host}`), { headers, signal });
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
