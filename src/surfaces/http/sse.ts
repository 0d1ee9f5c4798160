/**
 * Server-sent events over a web ReadableStream: framing, heartbeat comments, a backlog limit for
 * slow clients, and one idempotent teardown whichever side ends the stream (client disconnect,
 * request abort, server shutdown, the route itself). Open streams are tracked so a shutdown can
 * end them all.
 * @module
 */

export interface SseMessage {
  /** `event:` field (the event type). */
  event?: string;
  /** `id:` field; the client sends the last one back as `Last-Event-ID` when it reconnects. */
  id?: number | string;
  /** The `data:` payload, one line or several. */
  data: string;
  /** `retry:` field: the client's reconnect delay in milliseconds. */
  retry?: number;
}

export interface SseStream {
  readonly closed: boolean;
  /** Bytes queued for the client and not yet taken by the socket. */
  readonly backlog: number;
  /** Queue one event; false when the stream is closed (or was just dropped as too slow). */
  send(message: SseMessage): boolean;
  /** A comment line (`: text`): keeps the connection alive, never moves the client's cursor. */
  comment(text: string): void;
  /**
   * Hand what was sent so far to the socket now, not when the current stretch of code and its
   * promise callbacks are done (Node's response corks its socket until the next tick). A no-op
   * on the web-stream path.
   */
  flush(): void;
  /** End the stream, after an optional last message. Idempotent. */
  close(last?: SseMessage): void;
  /** Run on close, whatever closed it (listeners unsubscribed, timers cleared). */
  onClose(fn: () => void): void;
  /**
   * Drop the client (too slow, over a limit): with `dropNotice`, the notice is its last event,
   * after what it has not read yet; otherwise its connection is cut. `detail` names the limit.
   */
  drop(reason: SseDropReason, detail: string): void;
  /**
   * Resolves once what was sent has been taken by the socket (the backlog is empty, or nearly),
   * or the stream has closed: a writer that sends much (a long replay) waits here between pieces.
   */
  drained(): Promise<void>;
}

/** Why a stream was dropped: its own backlog, the server's budget, the session's stream cap. */
export type SseDropReason = 'backlog_limit' | 'buffer_budget' | 'stream_limit';

/**
 * The streams' buffered bytes, watched together (./sse-budget.ts): told after a stream's write,
 * it may drop the slowest stream.
 */
export interface SseBudgetWatch {
  wrote(stream: SseStream): void;
}

/** The open streams of one HTTP app, so shutdown can end them. */
export interface StreamTracker {
  readonly size: number;
  /** Track a stream; `end` is called by closeAll (it may send a last event before closing). */
  add(stream: SseStream, end?: (stream: SseStream) => void): void;
  /** End every open stream (server shutdown). */
  closeAll(): void;
}

export interface OpenSseOptions {
  /** The request's signal: an aborted request ends the stream. */
  signal?: AbortSignal;
  /** Interval of heartbeat comments; 0 disables them. */
  heartbeatMs: number;
  /**
   * A client that lets more than this many bytes pile up is dropped (the stream errors), so one
   * stalled reader cannot grow the server's memory; it reconnects and replays from its last id.
   */
  maxBacklogBytes?: number;
  tracker?: StreamTracker;
  /** Ends the stream at shutdown (default: close without a last event). */
  onShutdown?: (stream: SseStream) => void;
  /**
   * The route sends its first event itself by the loop's check phase: the head goes out with it,
   * not alone at the next tick (Node responses; a web stream's head goes with its body anyway).
   */
  headWithFirst?: boolean;
  /**
   * Cuts the client's connection at once (a web stream under node-server: its Node response's
   * `destroy`). A client dropped as too slow is cut off there rather than by erroring the web
   * stream, which node-server reports with `console.error` (a stack on stderr) and an `Error: …`
   * line appended to the event stream.
   */
  dropConnection?: () => void;
  /**
   * The last event of a dropped client (`SseStream.drop`, the backlog limit): it reads why it was
   * dropped, then the stream ends; a client that takes none of it within a few seconds is cut off.
   * Without it the connection is cut at once.
   */
  dropNotice?: (reason: SseDropReason, detail: string) => SseMessage;
  /** Watched with other streams' backlogs (./sse-budget.ts). */
  budget?: SseBudgetWatch;
}

export const SSE_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  // Reverse proxies (nginx) must not buffer the stream.
  'x-accel-buffering': 'no',
};

const DEFAULT_MAX_BACKLOG = 8 * 1024 * 1024;

/** How long a dropped client has to take its last event (`dropNotice`) before its connection is cut. */
export const DROP_GRACE_MS = 5000;

export function createStreamTracker(): StreamTracker {
  const open = new Map<SseStream, ((stream: SseStream) => void) | undefined>();
  return {
    get size() {
      return open.size;
    },
    add(stream, end) {
      if (stream.closed) return;
      open.set(stream, end);
      stream.onClose(() => open.delete(stream));
    },
    closeAll() {
      for (const [stream, end] of [...open]) {
        try {
          if (end) end(stream);
        } finally {
          stream.close();
        }
      }
    },
  };
}

/** Frame one message as SSE text. Multi-line data becomes several `data:` lines. */
export function formatSse(message: SseMessage): string {
  const { data } = message;
  // The usual message (the compat stream's: one line of JSON, no other field): no split, no regex.
  if (
    message.event === undefined &&
    message.id === undefined &&
    message.retry === undefined &&
    !data.includes('\n') &&
    !data.includes('\r')
  )
    return `data: ${data}\n\n`;
  let out = '';
  if (message.event !== undefined) out += `event: ${singleLine('event', message.event)}\n`;
  if (message.id !== undefined) out += `id: ${singleLine('id', String(message.id))}\n`;
  if (message.retry !== undefined) out += `retry: ${Math.max(0, Math.floor(message.retry))}\n`;
  for (const line of data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}

/** Open a stream: returns the Response to hand to the server and the handle to write to it. */
export function openSseStream(
  options: OpenSseOptions,
  headers: Record<string, string> = {},
): { stream: SseStream; response: Response } {
  const encoder = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let teardown = () => {};
  /** `drained` waiters: the reader asked for more (the queue is empty) or went away. */
  let waiting: (() => void)[] = [];
  const wake = () => {
    const now = waiting;
    waiting = [];
    for (const fn of now) fn();
  };
  const body = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      pull() {
        wake();
      },
      cancel() {
        // The client went away (node-server cancels the body when the socket closes).
        wake();
        teardown();
      },
    },
    { highWaterMark: 0, size: (chunk) => chunk.byteLength },
  );
  const opened = createSseStream(
    {
      write(text) {
        try {
          controller.enqueue(encoder.encode(text));
          return true;
        } catch {
          return false;
        }
      },
      backlog: () => Math.max(0, -(controller.desiredSize ?? 0)),
      drained: () =>
        (controller.desiredSize ?? 0) >= 0 ? Promise.resolve() : new Promise<void>((r) => waiting.push(r)),
      end(error, notice) {
        wake();
        if (error && notice !== undefined) {
          try {
            controller.enqueue(encoder.encode(notice));
            controller.close();
          } catch {
            // already closed by the client
          }
          return;
        }
        if (error && options.dropConnection) {
          // node-server sees the response close and cancels the body: the queue is let go.
          options.dropConnection();
          return;
        }
        try {
          if (error) controller.error(error);
          else controller.close();
        } catch {
          // already closed (or errored) by the client
        }
      },
    },
    options,
  );
  teardown = opened.teardown;
  return {
    stream: opened.stream,
    response: new Response(body, { status: 200, headers: { ...SSE_HEADERS, ...headers } }),
  };
}

/**
 * The text of a stream's events sent in the current turn, handed on as one piece at the end of the
 * turn, at `flush`, or with the end; `flush` is the transport's (a Node response's write, a
 * WebSocket's message). The end of the turn: the first tick after the promise callbacks queued so
 * far (a tick asked for by plain code would come before them: Node runs the ticks of a callback
 * before its promise callbacks).
 */
export abstract class TurnText {
  protected text = '';
  protected scheduled = false;
  private readonly atEnd = () => this.flush();
  /** Queued as a promise callback, so the tick it asks for comes after the turn's other callbacks. */
  private readonly atTick = () => process.nextTick(this.atEnd);

  /** Characters waiting for the tick (what a backlog counts of them: Node counts a string's length too). */
  get length(): number {
    return this.text.length;
  }

  add(text: string): void {
    this.text += text;
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(this.atTick);
  }

  drop(): void {
    this.text = '';
  }

  /** Hand the waiting text on now (and clear `scheduled`). */
  abstract flush(): void;
}

/** How an `SseStream` reaches its client: the only part that differs between a web and a Node stream. */
export interface SseTransport {
  /** Write one chunk of text; false when the client is gone (the stream then closes). */
  write(text: string): boolean;
  /** Bytes written and not yet taken by the client. */
  backlog(): number;
  /**
   * End the transport: cleanly, or with `error` when the client is dropped; with `notice` too, that
   * text goes last and the end is clean, the connection cut if the client does not take it soon.
   */
  end(error?: Error, notice?: string): void;
  /** Hand the written text to the socket now (see `SseStream.flush`). */
  flush?(): void;
  /** Resolves once the written text has been taken (or the client is gone). */
  drained(): Promise<void>;
}

/**
 * The `SseStream` over a transport, supervised (`superviseSseStream`): framing, the backlog limit,
 * one idempotent teardown. `teardown` is for the transport to call when the client goes away.
 */
export function createSseStream(
  transport: SseTransport,
  options: OpenSseOptions,
): { stream: SseStream; teardown: () => void } {
  const maxBacklog = options.maxBacklogBytes ?? DEFAULT_MAX_BACKLOG;
  const closers: (() => void)[] = [];
  /** `drained` calls waiting: they resolve at the teardown too. */
  const draining = new Set<() => void>();
  let closed = false;
  /** Undoes the abort listener and the heartbeat (`superviseSseStream`). */
  let unsupervise: (() => void) | undefined;

  const teardown = () => {
    if (closed) return;
    closed = true;
    unsupervise?.();
    for (const done of [...draining]) done();
    runClosers(closers);
  };

  const write = (text: string): boolean => {
    if (closed) return false;
    if (!transport.write(text)) {
      teardown();
      return false;
    }
    if (transport.backlog() > maxBacklog) {
      // Too slow: drop it rather than buffer without bound; it reconnects with Last-Event-ID.
      drop('backlog_limit', `more than ${maxBacklog} bytes waiting for this client (the per-stream limit)`);
      return false;
    }
    options.budget?.wrote(stream);
    return !closed;
  };

  const drop = (reason: SseDropReason, detail: string) => {
    if (closed) return;
    const notice = options.dropNotice?.(reason, detail);
    const error =
      reason === 'backlog_limit'
        ? 'SSE client too slow: backlog limit reached'
        : `SSE client dropped: ${detail}`;
    transport.end(new Error(error), notice && formatSse(notice));
    teardown();
  };

  const stream: SseStream = {
    get closed() {
      return closed;
    },
    get backlog() {
      return closed ? 0 : transport.backlog();
    },
    send: (message) => write(formatSse(message)),
    flush: () => {
      if (!closed) transport.flush?.();
    },
    comment: (text) => {
      write(`: ${text.replace(/[\r\n]+/g, ' ')}\n\n`);
    },
    close(last) {
      if (closed) return;
      if (last) write(formatSse(last));
      if (closed) return;
      transport.end();
      teardown();
    },
    onClose(fn) {
      if (closed) fn();
      else closers.push(fn);
    },
    drop,
    drained: () => {
      if (closed) return Promise.resolve();
      transport.flush?.();
      return new Promise<void>((resolve) => {
        const done = () => {
          draining.delete(done);
          resolve();
        };
        draining.add(done);
        void transport.drained().then(done);
      });
    },
  };

  unsupervise = superviseSseStream(stream, options);
  return { stream, teardown };
}

function singleLine(field: string, value: string): string {
  if (/[\r\n]/.test(value)) throw new Error(`SSE ${field} must be one line`);
  return value;
}

/**
 * What every open stream does until it closes, whichever way it is written: it closes when the
 * request is aborted, sends a heartbeat comment every `heartbeatMs` (a heartbeat alone never keeps
 * the process alive) and is tracked for the shutdown. Answers what undoes the first two, for the
 * stream's teardown.
 */
function superviseSseStream(stream: SseStream, options: OpenSseOptions): () => void {
  const onAbort = () => stream.close();
  if (options.signal?.aborted) queueMicrotask(onAbort);
  else options.signal?.addEventListener('abort', onAbort, { once: true });
  let timer: ReturnType<typeof setInterval> | undefined;
  if (options.heartbeatMs > 0) {
    let beat = 0;
    timer = setInterval(() => stream.comment(`ping ${++beat}`), options.heartbeatMs);
    timer.unref?.();
  }
  options.tracker?.add(stream, options.onShutdown);
  return () => {
    if (timer) clearInterval(timer);
    timer = undefined;
    options.signal?.removeEventListener('abort', onAbort);
  };
}

/** A stream's close callbacks, last added first; every one runs even if one throws (a leaked listener is worse than a lost log line). */
function runClosers(closers: (() => void)[]): void {
  for (const fn of closers.splice(0).reverse()) {
    try {
      fn();
    } catch {
      // nothing useful to do with a failing teardown callback
    }
  }
}
