/**
 * Server-sent events written straight to the Node response under a request that
 * `@hono/node-server` serves: the same `SseStream` as `openSseStream` (framing, heartbeat, backlog
 * limit, one idempotent teardown, the tracker), without a web ReadableStream between the route and
 * the socket. Each event is one `write` of its text (Node encodes it into the socket's buffer): no
 * TextEncoder copy, no reader promise per chunk, no node-server pump. The route answers with a
 * Response marked `x-hono-already-sent`, which node-server leaves alone.
 *
 * Requests served another way (`app.request()` in tests, another adapter) have no Node response;
 * `openRouteSseStream` falls back to `openSseStream` for them.
 * @module
 */
import { ServerResponse } from 'node:http';
import type { Context } from 'hono';
import {
  createSseStream,
  DROP_GRACE_MS,
  type OpenSseOptions,
  openSseStream,
  SSE_HEADERS,
  type SseStream,
  TurnText,
} from './sse';
import { eventSocketOf, openSocketSseStream } from './sse-socket';

/** node-server's marker for a response the route wrote itself (its `X_ALREADY_SENT`). */
export const ALREADY_SENT = 'x-hono-already-sent';

/** The Node response of a request served by @hono/node-server, or undefined. */
export function nodeResponseOf(c: Context): ServerResponse | undefined {
  const env: unknown = c.env;
  if (!env || typeof env !== 'object' || !('outgoing' in env)) return undefined;
  const { outgoing } = env;
  return outgoing instanceof ServerResponse && !outgoing.headersSent ? outgoing : undefined;
}

/**
 * An SSE stream for a route: on the WebSocket the request came on (./event-socket.ts), on the Node
 * response when there is one, else a web stream. On a socket or a Node response the request's own
 * signal is not listened to (one EventTarget listener less to add and remove a request): its
 * 'close' ends the stream already. A signal already aborted is still honoured.
 */
export function openRouteSseStream(
  c: Context,
  options: OpenSseOptions,
  headers: Record<string, string> = {},
): { stream: SseStream; response: Response } {
  const socket = eventSocketOf(c);
  const outgoing = socket ? undefined : nodeResponseOf(c);
  if (!socket && !outgoing) return openSseStream(options, headers);
  const { signal } = options;
  const own = signal !== undefined && !signal.aborted && signal === c.req.raw.signal;
  const opened = own ? { ...options, signal: undefined } : options;
  if (socket) return { stream: openSocketSseStream(socket, opened), response: alreadySent() };
  return openNodeSseStream(outgoing as ServerResponse, opened, headers);
}

/**
 * Open a stream on a Node response: the head goes out with the first event. The events of one turn
 * (the code that runs before the next tick: a stretch of code and the promise callbacks it
 * queued) are one `write` of their text: one HTTP chunk and one socket write, not one of each per
 * event. They are written when that tick comes (`flush` and the end write them at once), so no
 * event waits past the turn that sent it; what the client reads is the same text.
 */
export function openNodeSseStream(
  outgoing: ServerResponse,
  options: OpenSseOptions,
  headers: Record<string, string> = {},
): { stream: SseStream; response: Response } {
  let wrote = false;
  // Not `{ ...SSE_HEADERS, ...headers }`: on Node 20 each property after a spread goes through V8's
  // runtime and the object gets a map of its own; `Object.assign` onto `{}` reuses the maps
  // (p-sqlprofile). The same names, values and order.
  outgoing.writeHead(200, Object.assign({}, SSE_HEADERS, headers));
  const batch = new TurnBatch(outgoing);
  const { stream, teardown } = createSseStream(
    {
      write(text) {
        if (outgoing.destroyed || outgoing.writableEnded) return false;
        wrote = true;
        batch.add(text);
        return true;
      },
      backlog: () => outgoing.writableLength + batch.length,
      drained: () => drainedOf(outgoing),
      end(error, notice) {
        if (error && notice !== undefined && !outgoing.destroyed && !outgoing.writableEnded) {
          // The client reads why it was dropped after what it has not read; one that takes none of
          // it soon is cut off, so its buffer does not outlive the drop by long.
          batch.end(notice);
          const cut = setTimeout(() => outgoing.destroy(), DROP_GRACE_MS);
          cut.unref?.();
          const done = () => clearTimeout(cut);
          outgoing.once('finish', done);
          outgoing.once('close', done);
          return;
        }
        if (error) {
          batch.drop();
          outgoing.destroy(error);
        } else if (!outgoing.destroyed) batch.end();
      },
      flush: () => batch.flush(),
    },
    options,
  );
  // The head goes out with the first event when the route sends one at once (one write);
  // otherwise on its own, so the client sees the stream open (unless the route sends one soon).
  if (!options.headWithFirst)
    process.nextTick(() => {
      if (!wrote && !stream.closed && !outgoing.destroyed) outgoing.flushHeaders();
    });
  // The socket closing (the client went away, or the end was written) ends the stream; a write
  // error closes it too (Node emits 'close' after 'error'), so the error itself is not thrown.
  outgoing.on('close', teardown);
  outgoing.on('error', () => {});
  stream.onClose(() => outgoing.off('close', teardown));

  return { stream, response: alreadySent() };
}

/** The turn's text of a stream on a Node response (`TurnText`), written as one piece. */
class TurnBatch extends TurnText {
  constructor(private readonly outgoing: ServerResponse) {
    super();
  }

  /**
   * Write the waiting text and hand it to the socket now. A write corks the response until the
   * next tick (Node's `connectionCorkNT`), and that tick comes only once the promise callbacks
   * queued behind it ran: the rest of a run (its step's end, its finish) when the model's answer
   * came in one read. Uncorked here, the text leaves now; the tick's own uncork then finds nothing
   * to do. Where the writes wait depends on the Node line: on 24 the response corks itself and
   * holds the chunked body (its `uncork` writes it and uncorks the socket); on 20 and 22 the
   * response corks its socket (on 22 the response's own `writableCorked` does not count that), so
   * the socket is uncorked too.
   */
  flush(): void {
    const { outgoing } = this;
    this.scheduled = false;
    if (outgoing.destroyed) return;
    if (this.text && !outgoing.writableEnded) {
      const text = this.text;
      this.text = '';
      outgoing.write(text);
    }
    if (outgoing.writableCorked > 0) outgoing.uncork();
    const socket = outgoing.socket;
    if (socket && socket.writableCorked > 0 && !socket.destroyed) socket.uncork();
  }

  /** End the response with the waiting text: the last events and the end of the body in one write. */
  end(last = ''): void {
    const text = this.text + last;
    this.text = '';
    if (text) this.outgoing.end(text);
    else this.outgoing.end();
  }
}

/** Resolves once the response's buffered text has gone to the socket (its 'drain'), or it closed. */
function drainedOf(outgoing: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    if (outgoing.destroyed || outgoing.writableEnded || !outgoing.writableNeedDrain) {
      resolve();
      return;
    }
    const done = () => {
      outgoing.off('drain', done);
      outgoing.off('close', done);
      resolve();
    };
    outgoing.on('drain', done);
    outgoing.on('close', done);
  });
}

let sent: Response | undefined;

/**
 * The Response that tells node-server the route wrote the answer itself: one for every stream,
 * like node-server's own `RESPONSE_ALREADY_SENT` (it has no body and nothing writes to it).
 * node-server replaces the global Response with a light one whose bodiless instances it writes
 * out itself (a second head); `clone()` of either kind gives the platform's Response, which
 * node-server checks for the marker.
 */
function alreadySent(): Response {
  sent ??= new Response(null, { headers: { [ALREADY_SENT]: 'true' } }).clone();
  return sent;
}
