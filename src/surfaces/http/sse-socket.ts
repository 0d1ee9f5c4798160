/**
 * The session event stream's text over a WebSocket (./event-socket.ts): the same `SseStream`
 * (framing, heartbeat, backlog limit, drop notice, one idempotent teardown, the tracker) with the
 * socket as its transport. The events of one turn are one text message (as one `write` on the Node
 * response: ./sse-node.ts), so the client feeds each message to the same SSE parser it feeds a
 * fetch body's chunks to.
 * @module
 */
import type { Context } from 'hono';
import type { WebSocket } from 'ws';
import { createSseStream, DROP_GRACE_MS, type OpenSseOptions, type SseStream, TurnText } from './sse';

/** `WebSocket.OPEN` (the value, so this module does not load `ws` for a constant). */
const OPEN = 1;

/** What a request that came as a WebSocket carries to its route, in place of node-server's env. */
export interface SocketEnv {
  eventSocket: WebSocket;
}

/** The WebSocket a request came on (./event-socket.ts), or undefined. */
export function eventSocketOf(c: Context): WebSocket | undefined {
  const env: unknown = c.env;
  if (!env || typeof env !== 'object' || !('eventSocket' in env)) return undefined;
  return (env as SocketEnv).eventSocket;
}

/**
 * A stream on an open WebSocket. The backlog is what the socket has not handed to the kernel yet
 * (`bufferedAmount`) and what waits for the end of the turn; `drained` waits for the callbacks of
 * the messages sent. The client closing the socket is the client going away.
 */
export function openSocketSseStream(socket: WebSocket, options: OpenSseOptions): SseStream {
  const batch = new MessageBatch(socket);
  const { stream, teardown } = createSseStream(
    {
      write(text) {
        if (socket.readyState !== OPEN) return false;
        batch.add(text);
        return true;
      },
      backlog: () => socket.bufferedAmount + batch.length,
      drained: () => batch.drained(),
      end(error, notice) {
        if (error && notice !== undefined && socket.readyState === OPEN) {
          // As on a response: the client reads why it was dropped; one that takes none of it soon
          // is cut off.
          batch.add(notice);
          batch.flush();
          socket.close(1000);
          const cut = setTimeout(() => socket.terminate(), DROP_GRACE_MS);
          cut.unref?.();
          socket.once('close', () => clearTimeout(cut));
          return;
        }
        if (error) {
          batch.drop();
          socket.terminate();
          return;
        }
        batch.flush();
        if (socket.readyState === OPEN) socket.close(1000);
      },
      flush: () => batch.flush(),
    },
    options,
  );
  socket.on('close', teardown);
  socket.on('error', () => {});
  stream.onClose(() => socket.off('close', teardown));
  // Closed while the route was opening the stream (the client went away early).
  if (socket.readyState !== OPEN) teardown();
  return stream;
}

/**
 * The text of a stream's events sent in the current turn, sent as one message at the end of the
 * turn (the first tick after the promise callbacks queued so far: ./sse-node.ts TurnBatch), at
 * `flush`, or with the end.
 */
class MessageBatch extends TurnText {
  /** Messages sent whose callbacks have not come (not yet handed to the kernel). */
  private unsent = 0;
  private waiting: (() => void)[] = [];
  private readonly sent = () => {
    this.unsent--;
    if (this.unsent <= 0) this.wake();
  };

  constructor(private readonly socket: WebSocket) {
    super();
    socket.once('close', () => this.wake());
  }

  flush(): void {
    this.scheduled = false;
    if (!this.text || this.socket.readyState !== OPEN) return;
    const text = this.text;
    this.text = '';
    this.unsent++;
    this.socket.send(text, this.sent);
  }

  /** Resolves once every message sent has been handed on, or the socket closed. */
  drained(): Promise<void> {
    if (this.unsent <= 0 || this.socket.readyState !== OPEN) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private wake(): void {
    const now = this.waiting;
    this.waiting = [];
    for (const fn of now) fn();
  }
}
