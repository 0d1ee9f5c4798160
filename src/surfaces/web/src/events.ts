/**
 * The session event stream (`GET v1/sessions/{id}/events`) read with fetch, because EventSource
 * cannot send the bearer header. The stream resumes with `Last-Event-ID` after any break, so the
 * server replays exactly what was missed (from its ring or its event log): no gap, and no
 * duplicate because ids at or below the last one applied are dropped. Without a starting id the
 * first `connected` event says where "now" is; the history read after it covers the rest.
 *
 * A browser opens at most 6 connections to one server (HTTP/1.1) and every stream holds one, so a
 * page hidden for longer than a grace period lets its stream go (`pauseWhenHidden`, when its
 * caller says it may) and resumes it with `Last-Event-ID` when shown again. A stream that stays
 * silent past its heartbeats is taken as dead and opened again; a stream the server drops says
 * why (its `dropped` event: `stream_limit`, `backlog_limit`, `buffer_budget`).
 * @module
 */
import { createParser } from 'eventsource-parser';
import type { SessionEvent } from '../../../events/bus';
import { type Api, ApiError, toApiError, unreachable } from './api';

/** Why the server dropped a stream (its last `dropped` event). */
export interface Dropped {
  reason: string;
  message: string;
}

export type StreamStatus =
  | { state: 'connecting' }
  | { state: 'live'; lastEventId: number }
  | { state: 'reconnecting'; reason: string; attempt: number; inMs: number; dropped?: Dropped }
  /** The page is hidden and let its stream go; it resumes when the page is shown. */
  | { state: 'paused' }
  | { state: 'stopped'; error: ApiError };

export interface StreamOptions {
  api: Api;
  sessionId: string;
  /** Resume after this id; omitted: start at "now" (the `connected` event's last_event_id). */
  afterId?: number;
  onEvent(event: SessionEvent): void;
  onStatus(status: StreamStatus): void;
  /** The server's event ids do not continue ours (its database was reset): reload everything. */
  onReset?(): void;
  minDelayMs?: number;
  maxDelayMs?: number;
  /**
   * Let the stream go once the page has been hidden for `graceMs` and `mayPause()` agrees (asked
   * again every `graceMs` while hidden); it is opened again, with `Last-Event-ID`, when shown.
   */
  pauseWhenHidden?: { graceMs: number; mayPause(): boolean };
}

export interface EventStream {
  close(): void;
  lastEventId(): number;
}

/** How long a live stream may stay silent when the server did not say its heartbeat interval. */
const DEFAULT_SILENCE_MS = 45_000;

/** What one connection came to. */
interface Outcome {
  /** Stop for good (the status says why). */
  stop?: boolean;
  connected: boolean;
  reason: string;
  dropped?: Dropped;
}

export function openEventStream(options: StreamOptions): EventStream {
  const controller = new AbortController();
  const signal = controller.signal;
  const cursor = { lastId: options.afterId ?? -1 };
  const gate = createGate(signal, options.pauseWhenHidden);
  const minDelay = options.minDelayMs ?? 500;
  const maxDelay = options.maxDelayMs ?? 8_000;

  const run = async () => {
    let attempt = 0;
    while (!signal.aborted) {
      if (gate.paused()) {
        options.onStatus({ state: 'paused' });
        while (gate.paused() && !signal.aborted) await gate.rest(Number.POSITIVE_INFINITY);
        attempt = 0;
        continue;
      }
      options.onStatus({ state: 'connecting' });
      const outcome = await connect(options, cursor, gate.connection());
      if (signal.aborted || outcome.stop) return;
      if (gate.paused()) continue;
      if (outcome.connected) attempt = 0;
      attempt++;
      const inMs = Math.min(maxDelay, minDelay * 2 ** Math.min(attempt - 1, 6));
      options.onStatus({
        state: 'reconnecting',
        reason: outcome.reason,
        attempt,
        inMs,
        ...(outcome.dropped ? { dropped: outcome.dropped } : {}),
      });
      await gate.rest(inMs);
    }
  };

  void run().catch((error: unknown) => {
    if (!signal.aborted)
      options.onStatus({
        state: 'stopped',
        error: error instanceof ApiError ? error : new ApiError('server_error', String(error)),
      });
  });
  return {
    close: () => controller.abort(),
    lastEventId: () => cursor.lastId,
  };
}

/** One connection, read to its end (or until it is aborted: closed, paused, or silent too long). */
async function connect(
  options: StreamOptions,
  cursor: { lastId: number },
  connection: AbortController,
): Promise<Outcome> {
  const read: Reading = { connected: false, shutdown: false, staleAfterMs: 0 };
  try {
    const response = await fetch(
      options.api.url(`v1/sessions/${encodeURIComponent(options.sessionId)}/events`),
      {
        headers: {
          accept: 'text/event-stream',
          ...options.api.headers(),
          ...(cursor.lastId >= 0 ? { 'last-event-id': String(cursor.lastId) } : {}),
        },
        credentials: 'omit',
        cache: 'no-store',
        signal: connection.signal,
      },
    );
    if (!response.ok || !response.body) {
      const text = await response.text().catch(() => '');
      const error = toApiError(response.status, safeJson(text), text);
      // A wrong token or a session that is gone does not heal by retrying.
      if (error.code === 'unauthorized' || error.code === 'not_found') {
        options.onStatus({ state: 'stopped', error });
        if (error.code === 'unauthorized') options.api.unauthorized(error);
        return { stop: true, connected: false, reason: error.message };
      }
      return { connected: false, reason: error.message };
    }
    await consume(options, cursor, response.body, read, () => connection.abort());
  } catch (error) {
    // Closed or paused: the caller looks at why; silent too long: said below.
    if (!read.staleAfterMs && connection.signal.aborted) return { connected: read.connected, reason: '' };
    if (!read.staleAfterMs)
      return { connected: read.connected, reason: unreachable(options.api.base, error).message };
  }
  if (read.staleAfterMs)
    return {
      connected: read.connected,
      reason: `nothing came from the server for ${Math.round(read.staleAfterMs / 1000)} s, not even its heartbeat (the connection died silently)`,
    };
  if (read.dropped)
    return {
      connected: read.connected,
      reason: `the server dropped this stream: ${read.dropped.message}`,
      dropped: read.dropped,
    };
  return {
    connected: read.connected,
    reason: read.shutdown ? 'the server is shutting down' : 'the stream ended',
  };
}

/** What one connection read: did it get as far as `connected`, did the server say it stops, and why. */
interface Reading {
  connected: boolean;
  shutdown: boolean;
  dropped?: Dropped;
  /** Set when the connection was given up as silent: the silence allowed, in ms. */
  staleAfterMs: number;
}

async function consume(
  options: StreamOptions,
  cursor: { lastId: number },
  body: ReadableStream<Uint8Array>,
  read: Reading,
  abort: () => void,
): Promise<void> {
  // The server sends a heartbeat comment every `heartbeat_ms` (said in `connected`); three missed
  // in a row mean the connection is gone even though no error came (a laptop that slept, a proxy).
  let silenceMs = DEFAULT_SILENCE_MS;
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  const kick = () => {
    clearTimeout(watchdog);
    watchdog = setTimeout(() => {
      read.staleAfterMs = silenceMs;
      abort();
    }, silenceMs);
  };
  const parser = createParser({
    onEvent(message) {
      const data = safeJson(message.data) as Record<string, unknown> | undefined;
      if (message.event === 'connected') {
        read.connected = true;
        const heartbeat = Number(data?.heartbeat_ms);
        if (heartbeat > 0) silenceMs = Math.max(3 * heartbeat, 5_000);
        kick();
        if (cursor.lastId < 0) cursor.lastId = Number(data?.last_event_id ?? 0) || 0;
        options.onStatus({ state: 'live', lastEventId: cursor.lastId });
        return;
      }
      if (message.event === 'resync' && data?.reason === 'last_event_id_unknown') {
        // The server never gave our last id (another database): start over from its history.
        cursor.lastId = Number(data.after_id ?? 0) || 0;
        options.onReset?.();
        return;
      }
      if (message.event === 'dropped') {
        read.dropped = {
          reason: String(data?.reason ?? 'unknown'),
          message: String(data?.message ?? 'no reason given').replace(
            /;\s*reconnect with Last-Event-ID.*$/i,
            '',
          ),
        };
        return;
      }
      if (message.event === 'shutdown') read.shutdown = true;
      if (message.event === 'shutdown' || message.event === 'resync') return;
      const id = Number(message.id);
      if (!message.event || !data || !Number.isFinite(id)) return;
      if (id <= cursor.lastId) return;
      cursor.lastId = id;
      options.onEvent({
        id,
        session_id: String(data.session_id ?? options.sessionId),
        type: message.event,
        payload: data,
        created_at: 0,
      });
    },
  });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  kick();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      kick();
      parser.feed(decoder.decode(value, { stream: true }));
    }
  } finally {
    clearTimeout(watchdog);
    reader.releaseLock();
  }
}

/** Pausing while the page is hidden, and the waits of the loop (cut short when that changes). */
interface Gate {
  paused(): boolean;
  /** Waits `ms`, or less: until the stream closes, pauses, or the page is shown again. */
  rest(ms: number): Promise<void>;
  /** A new connection's controller (aborted when the stream closes or pauses). */
  connection(): AbortController;
}

function createGate(signal: AbortSignal, pause: StreamOptions['pauseWhenHidden']): Gate {
  let paused = false;
  let current: AbortController | undefined;
  let wake: (() => void) | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const watching = pause !== undefined && typeof document !== 'undefined';
  const hidden = () => watching && document.visibilityState === 'hidden';
  const arm = () => {
    clearTimeout(timer);
    if (!pause || !hidden() || paused || signal.aborted) return;
    timer = setTimeout(() => {
      if (!hidden() || signal.aborted) return;
      if (!pause.mayPause()) return arm();
      paused = true;
      current?.abort();
      wake?.();
    }, pause.graceMs);
  };
  const onVisibility = () => {
    if (hidden()) return arm();
    clearTimeout(timer);
    paused = false;
    // Shown again: connect now, not at the end of a back-off.
    wake?.();
  };
  if (watching) {
    document.addEventListener('visibilitychange', onVisibility);
    arm(); // opened in the background
  }
  signal.addEventListener(
    'abort',
    () => {
      clearTimeout(timer);
      if (watching) document.removeEventListener('visibilitychange', onVisibility);
      current?.abort();
      wake?.();
    },
    { once: true },
  );
  return {
    paused: () => paused,
    rest: (ms) =>
      new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        const sleeping = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
        wake = done;
        function done() {
          clearTimeout(sleeping);
          if (wake === done) wake = undefined;
          resolve();
        }
      }),
    connection: () => {
      current = new AbortController();
      return current;
    },
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
