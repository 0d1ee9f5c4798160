/**
 * How one connection of the session event stream reaches the page (./events.ts reads it): a
 * WebSocket when it can, else a fetch of the SSE stream. Both carry the same SSE text (the socket
 * one message a turn), so the page parses both with one parser.
 *
 * A browser opens at most 6 connections to one server over HTTP/1.1 and a fetched stream holds one
 * for as long as it is open: six live tabs took them all and a seventh tab's calls waited. A
 * WebSocket is not counted among them. The browser cannot send the bearer header on a WebSocket, so
 * the token goes as a subprotocol, `svc.bearer.<base64url(token)>`, beside `svc.events.v1`, and
 * `Last-Event-ID` as the `last_event_id` query parameter (docs/http.md).
 *
 * A socket that closes before it opened (a server without WebSocket support, a proxy that refuses
 * upgrades) is followed at once by the fetch stream; once the server answered a fetch where its
 * socket could not open, the page uses fetch from then on. A socket that cannot open because the
 * server cannot be reached at all proves nothing: it is tried again next time.
 * @module
 */
import { safeJson } from '../../../util/stream-wait';
import type { Api } from './api';

/** One connection: the server's refusal (status and body), or the stream's text as it comes. */
export type Opened =
  | { ok: false; status: number; json: unknown; text: string }
  | { ok: true; chunks: AsyncIterable<string> };

const EVENTS_PROTOCOL = 'svc.events.v1';
const BEARER_PROTOCOL = 'svc.bearer.';

/** The server answered a fetch where its WebSocket could not open: fetch from then on. */
let socketsRefused = false;

/** The WebSocket closed before it opened. */
class SocketNotOpened extends Error {}

/** Open a connection of `sessionId`'s event stream, resuming after `lastId` (none when negative). */
export async function openStream(
  api: Api,
  sessionId: string,
  lastId: number,
  signal: AbortSignal,
): Promise<Opened> {
  if (socketsRefused || typeof WebSocket === 'undefined') {
    return openFetchStream(api, sessionId, lastId, signal);
  }
  try {
    return await openSocketStream(api, sessionId, lastId, signal);
  } catch (error) {
    if (!(error instanceof SocketNotOpened) || signal.aborted) throw error;
  }
  const opened = await openFetchStream(api, sessionId, lastId, signal);
  socketsRefused = true;
  return opened;
}

const eventsPath = (sessionId: string) => `v1/sessions/${encodeURIComponent(sessionId)}/events`;

async function openFetchStream(
  api: Api,
  sessionId: string,
  lastId: number,
  signal: AbortSignal,
): Promise<Opened> {
  const response = await fetch(api.url(eventsPath(sessionId)), {
    headers: {
      accept: 'text/event-stream',
      ...api.headers(),
      ...(lastId >= 0 ? { 'last-event-id': String(lastId) } : {}),
    },
    credentials: 'omit',
    cache: 'no-store',
    signal,
  });
  if (!response.ok || !response.body) {
    const text = await response.text().catch(() => '');
    return { ok: false, status: response.status, json: safeJson(text), text };
  }
  return { ok: true, chunks: bodyText(response.body) };
}

async function* bodyText(body: ReadableStream<Uint8Array>): AsyncIterable<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield decoder.decode(value, { stream: true });
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * The stream over a WebSocket: settles with the first message (the server's refusal,
 * `{"svc_error":{status, body}}`, or the stream's first text); rejects with `SocketNotOpened` when
 * the socket closes before it opened. Aborting `signal` closes the socket (the reading then throws,
 * as an aborted fetch body does); a close other than the server's clean end throws too.
 */
function openSocketStream(api: Api, sessionId: string, lastId: number, signal: AbortSignal): Promise<Opened> {
  const url = new URL(api.url(eventsPath(sessionId), lastId >= 0 ? { last_event_id: lastId } : {}));
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const token = api.token();
  let socket: WebSocket;
  try {
    socket = new WebSocket(url, [EVENTS_PROTOCOL, ...(token ? [BEARER_PROTOCOL + base64url(token)] : [])]);
  } catch {
    // Refused before any connection (a browser that throws on a policy that forbids it).
    return Promise.reject(new SocketNotOpened());
  }
  const queue: string[] = [];
  /** How the stream ended: undefined while open, null for a clean end, else the error. */
  let ended: Error | null | undefined;
  let wake: (() => void) | undefined;
  let opened = false;
  const abort = () => socket.close();
  signal.addEventListener('abort', abort, { once: true });

  return new Promise<Opened>((resolve, reject) => {
    let first = true;
    socket.onopen = () => {
      opened = true;
    };
    socket.onmessage = (message) => {
      const text = typeof message.data === 'string' ? message.data : '';
      if (first) {
        first = false;
        const refusal = text.startsWith('{"svc_error"')
          ? (safeJson(text) as SocketRefusal | undefined)
          : undefined;
        if (refusal?.svc_error) {
          const { status, body } = refusal.svc_error;
          resolve({
            ok: false,
            status,
            json: body,
            text: typeof body === 'string' ? body : JSON.stringify(body),
          });
          return;
        }
        resolve({ ok: true, chunks: messages() });
      }
      queue.push(text);
      wake?.();
    };
    socket.onclose = (event) => {
      signal.removeEventListener('abort', abort);
      ended = signal.aborted
        ? new DOMException('the stream was closed', 'AbortError')
        : event.code === 1000
          ? null
          : new Error(`the event socket closed (${event.code})`);
      wake?.();
      if (!opened) reject(signal.aborted ? ended : new SocketNotOpened());
      else if (first) resolve({ ok: true, chunks: messages() });
    };
  });

  async function* messages(): AsyncIterable<string> {
    try {
      for (;;) {
        const text = queue.shift();
        if (text !== undefined) {
          yield text;
          continue;
        }
        if (ended !== undefined) {
          if (ended) throw ended;
          return;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      socket.close();
    }
  }
}

interface SocketRefusal {
  svc_error?: { status: number; body: unknown };
}

/** The token as a subprotocol can carry it: its UTF-8 bytes in base64url, no padding. */
function base64url(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}
