/**
 * What request bodies being received may hold (stop 82, found by probing the built server): every
 * route reads its body whole before it answers (the compat route before its run queue), so forty
 * clients that each sent 9 MB of a declared 10 MB body and stalled held 365 MB until Node's request
 * timeout, five minutes later. Two bounds, on every route, before a route sees the request:
 * - the bytes of the bodies being received at once (`[services.http].max_body_bytes_in_flight`): a
 *   request is counted with its declared length (a chunked one with `max_body_bytes`, all it may
 *   send), from its arrival until its body ended or it closed; one that does not fit is a 503 with
 *   `Retry-After`, its body not read;
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
      // A body over the limit is refused by it (413) before it is read: it holds no more than that.
      const bytes = Math.min(declared ?? maxBodyBytes, maxBodyBytes);
      // A body the limit lets in always fits alone.
      if (inFlight + bytes > Math.max(maxBytesInFlight, maxBodyBytes)) {
        refuse(incoming, outgoing, flat, maxBytesInFlight, idleMs);
        return false;
      }
      inFlight += bytes;
      let held = true;
      const release = () => {
        if (!held) return;
        held = false;
        inFlight -= bytes;
      };
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
