/**
 * What request bodies being received may hold (stop 82, found by probing the built server): every
 * route reads its body whole before it answers (the compat route before its run queue), so forty
 * clients that each sent 9 MB of a declared 10 MB body and stalled held 365 MB until Node's request
 * timeout, five minutes later. Two bounds, on every route, before a route sees the request:
 * - the bytes of the bodies being received at once (`[services.http].max_body_bytes_in_flight`): a
 *   request is counted with its declared length from its arrival until its body ended or it closed;
 *   one that does not fit is a 503 with `Retry-After`, its body not read. A chunked body (no length
 *   declared) is counted as its bytes arrive, up to `max_body_bytes` (past it the route's 413): once
 *   they would not fit it is the same 503 and its connection closed, the rest not read. Counted
 *   with `max_body_bytes` from the start, as it once was, a dozen slow chunked uploads of a few KB
 *   held the whole budget at the defaults and every other body was a 503;
 * - a body that stops arriving (`body_idle_timeout_seconds`, no byte for that long) is a 408 and
 *   its connection closed: the socket's inactivity timeout while the body is incomplete (the
 *   server writes nothing then), disarmed once it ended.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface BodyGuardSettings {
  /** `[services.http].max_body_bytes_in_flight`. */
  maxBytesInFlight: number;
  /** `[services.http].max_body_bytes`: what a chunked body may send at most. */
  maxBodyBytes: number;
  /** `[services.http].body_idle_timeout_seconds`, in ms. */
  idleMs: number;
}

/** Whether a path's errors are the compat surface's flat body (`errorStyleFor`). */
export type FlatErrors = (path: string) => boolean;

/** Seconds a refused client is told to wait: bodies under way end or time out by then, most of them. */
const RETRY_AFTER_SECONDS = 2;

export interface BodyGuard {
  /** Bytes of the bodies being received now. */
  readonly inFlight: number;
  /** `true`: the request goes on to its route; `false`: answered here (503). */
  admit(incoming: IncomingMessage, outgoing: ServerResponse): boolean;
}

export function createBodyGuard(settings: () => BodyGuardSettings, flat: FlatErrors): BodyGuard {
  let inFlight = 0;
  return {
    get inFlight() {
      return inFlight;
    },
    admit(incoming, outgoing) {
      const declared = declaredBytes(incoming);
      if (declared === 0) return true;
      const { maxBytesInFlight, maxBodyBytes, idleMs } = settings();
      // A body the limit lets in always fits alone.
      const budget = Math.max(maxBytesInFlight, maxBodyBytes);
      // A body over the limit is refused by it (413) before it is read: it holds no more than that.
      // A chunked one holds nothing yet, and is let in while a byte of it would fit.
      let held = declared === undefined ? 0 : Math.min(declared, maxBodyBytes);
      if (inFlight + Math.max(held, 1) > budget) {
        refuse(incoming, outgoing, flat, maxBytesInFlight, idleMs);
        return false;
      }
      inFlight += held;
      let counting = true;
      const release = () => {
        if (!counting) return;
        counting = false;
        inFlight -= held;
      };
      if (declared === undefined) {
        countArrivals(incoming, (bytes) => {
          if (!counting) return true;
          const more = Math.min(bytes, maxBodyBytes) - held;
          if (more <= 0) return true;
          if (inFlight + more > budget) {
            release();
            overBudget(incoming, outgoing, flat, maxBytesInFlight, idleMs);
            return false;
          }
          inFlight += more;
          held += more;
          return true;
        });
      }
      const ended = () => {
        release();
        // Not once the answer ended: Node's keep-alive timeout is the socket's then.
        if (!outgoing.writableEnded) incoming.socket?.setTimeout(0);
      };
      incoming.once('end', ended);
      incoming.once('close', release);
      outgoing.once('close', release);
      outgoing.setTimeout(idleMs, () => {
        if (incoming.complete) {
          // Whole, not yet read by its route: no longer the guard's.
          if (!outgoing.writableEnded) incoming.socket?.setTimeout(0);
          return;
        }
        release();
        stalled(incoming, outgoing, flat, idleMs);
      });
      return true;
    },
  };
}

/**
 * Calls `arrived` with the bytes of the body received so far as each chunk comes from the HTTP
 * parser (it hands a chunk to the request with `push`, whether or not a route reads yet: a `data`
 * listener here would start the flow before the route listens). `arrived` answering `false` drops
 * that chunk and everything after it, the body's end included.
 */
function countArrivals(incoming: IncomingMessage, arrived: (bytes: number) => boolean): void {
  const push = incoming.push;
  let bytes = 0;
  let dropping = false;
  incoming.push = function (this: IncomingMessage, chunk: unknown, encoding?: BufferEncoding) {
    // Not even its end once dropping: a route reading it sees it closed, never a cut body end.
    if (dropping) return false;
    if (chunk !== null && chunk !== undefined) {
      bytes +=
        typeof chunk === 'string' ? Buffer.byteLength(chunk, encoding) : (chunk as Uint8Array).byteLength;
      if (!arrived(bytes)) {
        dropping = true;
        return false;
      }
    }
    return push.call(this, chunk, encoding);
  };
}

/** The body's declared length; undefined for a chunked body (its length unknown), 0 for none. */
function declaredBytes(incoming: IncomingMessage): number | undefined {
  if (incoming.headers['transfer-encoding'] !== undefined) return undefined;
  const length = incoming.headers['content-length'];
  if (length === undefined) return 0;
  const bytes = Number.parseInt(length, 10);
  return Number.isFinite(bytes) && bytes > 0 ? bytes : 0;
}

function refuse(
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  flat: FlatErrors,
  maxBytesInFlight: number,
  idleMs: number,
): void {
  const compat = flat(pathOf(incoming));
  const body = errorBody(
    compat,
    503,
    'unavailable',
    `svc is busy: request bodies being received hold the ${maxBytesInFlight}-byte limit ` +
      `([services.http].max_body_bytes_in_flight); retry after ${RETRY_AFTER_SECONDS}s`,
  );
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'retry-after': RETRY_AFTER_SECONDS,
    connection: 'close',
    'content-length': Buffer.byteLength(body),
  };
  // Nothing ran: a client may send it again (the compat surface's `x-should-retry`, as its 429's).
  if (compat) headers['x-should-retry'] = 'true';
  outgoing.writeHead(503, headers);
  outgoing.end(body);
  // Node drains the unread body before it closes the connection: a client that stalls is dropped.
  incoming.socket?.setTimeout(idleMs);
}

/**
 * A chunked body that grew past what the bodies being received may hold: the 503 of `refuse` when
 * nothing was answered yet, and its connection closed once that is sent (the rest of the body is
 * not read; a route reading it sees the request closed).
 */
function overBudget(
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  flat: FlatErrors,
  maxBytesInFlight: number,
  idleMs: number,
): void {
  const socket = incoming.socket;
  if (outgoing.headersSent) {
    socket?.destroy();
    return;
  }
  outgoing.once('finish', () => socket?.destroy());
  refuse(incoming, outgoing, flat, maxBytesInFlight, idleMs);
}

function stalled(
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  flat: FlatErrors,
  idleMs: number,
): void {
  const seconds = idleMs / 1000;
  if (outgoing.headersSent) {
    incoming.socket?.destroy();
    return;
  }
  const compat = flat(pathOf(incoming));
  const body = errorBody(
    compat,
    408,
    'timeout',
    `request body timed out: no byte of it arrived for ${seconds}s ([services.http].body_idle_timeout_seconds); send the body without pausing`,
  );
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    connection: 'close',
    'content-length': Buffer.byteLength(body),
  };
  if (compat) headers['x-should-retry'] = 'false';
  outgoing.writeHead(408, headers);
  outgoing.end(body);
}

/** The flat body of the compat surface, else the canonical one (./errors.ts). */
function errorBody(flat: boolean, status: number, type: string, message: string): string {
  return JSON.stringify(flat ? { error: message, code: status } : { error: { message, type } });
}

function pathOf(incoming: IncomingMessage): string {
  const url = incoming.url ?? '/';
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}
