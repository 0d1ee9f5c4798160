/**
 * The session event stream (`GET v1/sessions/{id}/events`), read over a WebSocket, or with fetch
 * where a socket cannot open (./event-transport.ts; EventSource cannot send the bearer header):
 * the same SSE text either way, parsed here. The stream resumes with `Last-Event-ID` after any
 * break, so the server replays exactly what was missed (from its ring or its event log): no gap,
 * and no duplicate because ids at or below the last one applied are dropped. Without a starting id the
 * first `connected` event says where "now" is; the history read after it covers the rest.
 *
 * A stream the server drops ends with a `dropped` event naming why. `backlog_limit` and
 * `buffer_budget` mean this page fell behind: it reconnects at once with `Last-Event-ID` and misses
 * nothing. `stream_limit` means the session has as many streams open as the server allows
 * (`sse_max_streams_per_session`) and none gave way: asking again at once would be refused again,
 * so the page says so and asks again only after a long back-off, or when told to (`retry`).
 *
 * With `pauseWhenHidden` a page hidden for longer than a grace period lets its stream go (when its
 * caller says it may: nothing needs it attached), which spares the server a stream and, where the
 * stream is fetched, one of the browser's 6 connections to a server over HTTP/1.1; it waits,
 * `paused`, until it is shown again, then reconnects with the `Last-Event-ID` it kept, and the
 * server replays what it missed.
 *
 * A connection that died without a word (a laptop asleep, a network gone, a proxy that dropped it)
 * leaves a stream waiting for bytes that never come, and the page said "live" meanwhile. The server
 * sends a heartbeat every `heartbeat_ms` (said in `connected`): three missed (at least 5 s, 45 s
 * before it is said) and the connection is given up and opened again, with the reason.
 * @module
 */
import { createParser } from 'eventsource-parser';
import type { SessionEvent } from '../../../events/bus';
import { safeJson, sleep } from '../../../util/stream-wait';
import { type Api, ApiError, toApiError, unreachable } from './api';
import { openStream } from './event-transport';

/** Why the server dropped a stream (its last `dropped` event): the limit's name and its message. */
export interface StreamDrop {
  reason: 'backlog_limit' | 'buffer_budget' | 'stream_limit' | string;
  message: string;
}

export type StreamStatus =
  | { state: 'connecting' }
  /** `resumed`: this connection follows a drop for falling behind (what was missed was replayed). */
  | { state: 'live'; lastEventId: number; resumed?: StreamDrop }
  | { state: 'reconnecting'; reason: string; attempt: number; inMs: number; dropped?: StreamDrop }
  /** Refused: the session has as many streams as the server allows; asked again in `inMs`. */
  | { state: 'limited'; drop: StreamDrop; attempt: number; inMs: number }
  /** The page is hidden and let its stream go; it reconnects when the page is shown again. */
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
  /** The back-off after a `stream_limit` refusal: from this, doubling up to `maxLimitedDelayMs`. */
  limitedDelayMs?: number;
  maxLimitedDelayMs?: number;
  /**
   * Let the stream go once the page has been hidden for `graceMs` and `mayPause()` agrees (asked
   * again every `graceMs` while it does not); connect again, with `Last-Event-ID`, when shown.
   */
  pauseWhenHidden?: { graceMs: number; mayPause(): boolean };
}

export interface EventStream {
  close(): void;
  lastEventId(): number;
  /** Reconnect now, not at the end of the back-off (the user pressed "Try again"). */
  retry(): void;
}

/** How long a connection may stay silent before the server has said its heartbeat interval. */
const DEFAULT_SILENCE_MS = 45_000;

export function openEventStream(options: StreamOptions): EventStream {
  const controller = new AbortController();
  const signal = controller.signal;
  let lastId = options.afterId ?? -1;
  const minDelay = options.minDelayMs ?? 500;
  const maxDelay = options.maxDelayMs ?? 8_000;
  const limitedDelay = options.limitedDelayMs ?? 10_000;
  const maxLimitedDelay = options.maxLimitedDelayMs ?? 60_000;
  /** Ends the current wait early (`retry`, a pause, the page shown again). */
  let wake: (() => void) | undefined;
  /** Refusals for the stream limit in a row; `retry` starts the back-off over. */
  let refusals = 0;
  /** The drop for falling behind that the next `live` status reports as resumed after. */
  let behind: StreamDrop | undefined;
  /** The current connection's controller: aborted when the stream closes or pauses. */
  let connection: AbortController | undefined;
  const hidden = createHiddenWatch(signal, options.pauseWhenHidden, () => {
    connection?.abort();
    wake?.();
  });

  /** Failed connections in a row: a connection that went live starts the back-off over. */
  let attempt = 0;

  const run = async () => {
    while (!signal.aborted) {
      if (hidden.paused()) {
        options.onStatus({ state: 'paused' });
        while (hidden.paused() && !signal.aborted) await rest(Number.POSITIVE_INFINITY);
        attempt = 0;
        continue;
      }
      options.onStatus({ state: 'connecting' });
      const current = new AbortController();
      connection = current;
      const stop = () => current.abort();
      signal.addEventListener('abort', stop, { once: true });
      let reason = 'the stream ended';
      let dropped: StreamDrop | undefined;
      /** Set when the connection was given up as silent: the silence allowed, in ms. */
      let silentMs: number | undefined;
      const giveUp = (ms: number) => {
        silentMs = ms;
        current.abort();
      };
      try {
        const opened = await openStream(options.api, options.sessionId, lastId, current.signal);
        if (!opened.ok) {
          const error = toApiError(opened.status, opened.json, opened.text);
          // A wrong token or a session that is gone does not heal by retrying.
          if (error.code === 'unauthorized' || error.code === 'not_found') {
            options.onStatus({ state: 'stopped', error });
            if (error.code === 'unauthorized') options.api.unauthorized(error);
            return;
          }
          reason = error.message;
        } else {
          const outcome = await consume(opened.chunks, giveUp);
          if (outcome.shutdown) reason = 'the server is shutting down';
          dropped = outcome.dropped;
        }
      } catch {
        if (signal.aborted) return;
        if (silentMs !== undefined)
          reason = `nothing came from the server for ${Math.round(silentMs / 1000)} s, not even its heartbeat (the connection died silently)`;
        else if (!hidden.paused()) reason = unreachable(options.api.base).message;
      } finally {
        signal.removeEventListener('abort', stop);
      }
      if (signal.aborted) return;
      // Let go while hidden: the loop waits, paused, and connects again once shown.
      if (hidden.paused()) continue;
      if (dropped?.reason === 'stream_limit') {
        // Refused again at once unless another view of the session closes: wait long, or for `retry`.
        refusals++;
        const inMs = Math.min(maxLimitedDelay, limitedDelay * 2 ** Math.min(refusals - 1, 6));
        options.onStatus({ state: 'limited', drop: dropped, attempt: refusals, inMs });
        await rest(inMs);
        continue;
      }
      refusals = 0;
      if (dropped) {
        // Fell behind: the server let go of this stream; the next one replays what it had not read.
        behind = dropped;
        reason = `the server dropped the stream because this page fell behind (${dropped.reason}).`;
      }
      attempt++;
      const inMs = Math.min(maxDelay, minDelay * 2 ** Math.min(attempt - 1, 6));
      options.onStatus({ state: 'reconnecting', reason, attempt, inMs, ...(dropped ? { dropped } : {}) });
      await rest(inMs);
    }
  };

  /** Waits `ms` (for ever: `Infinity`), or less: until closed or woken (`close` wakes it too). */
  const rest = (ms: number) =>
    new Promise<void>((resolve) => {
      wake = resolve;
      if (Number.isFinite(ms)) void sleep(ms, signal).then(resolve);
    }).finally(() => {
      wake = undefined;
    });

  /**
   * Reads one connection: did the server say it stops, did it drop the stream (why). Its
   * `connected` starts the back-off over. Silent past three heartbeats, it is given up (`giveUp`).
   */
  const consume = async (chunks: AsyncIterable<string>, giveUp: (silentMs: number) => void) => {
    let silenceMs = DEFAULT_SILENCE_MS;
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    const heard = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => giveUp(silenceMs), silenceMs);
    };
    let shutdown = false;
    let dropped: StreamDrop | undefined;
    const parser = createParser({
      onEvent(message) {
        const data = safeJson(message.data) as Record<string, unknown> | undefined;
        if (message.event === 'connected') {
          attempt = 0; // also when the connection dies afterwards (an error, or silent)
          const heartbeat = Number(data?.heartbeat_ms);
          if (heartbeat > 0) silenceMs = Math.max(3 * heartbeat, 5_000);
          if (lastId < 0) lastId = Number(data?.last_event_id ?? 0) || 0;
          options.onStatus({ state: 'live', lastEventId: lastId, ...(behind ? { resumed: behind } : {}) });
          behind = undefined;
          return;
        }
        if (message.event === 'dropped') {
          // Its id is the stream's cursor, not an event: the position stays where it was.
          dropped = {
            reason: String(data?.reason ?? 'unknown'),
            message: String(data?.message ?? 'the server dropped the stream'),
          };
          return;
        }
        if (message.event === 'resync' && data?.reason === 'last_event_id_unknown') {
          // The server never gave our last id (another database): start over from its history.
          lastId = Number(data.after_id ?? 0) || 0;
          options.onReset?.();
          return;
        }
        if (message.event === 'shutdown') shutdown = true;
        if (message.event === 'shutdown' || message.event === 'resync') return;
        const id = Number(message.id);
        if (!message.event || !data || !Number.isFinite(id)) return;
        if (id <= lastId) return;
        lastId = id;
        options.onEvent({
          id,
          session_id: String(data.session_id ?? options.sessionId),
          type: message.event,
          payload: data,
          created_at: 0,
        });
      },
    });
    try {
      heard();
      for await (const text of chunks) {
        parser.feed(text);
        heard();
      }
    } finally {
      clearTimeout(watchdog);
    }
    return { shutdown, dropped };
  };

  void run().catch((error: unknown) => {
    if (!signal.aborted)
      options.onStatus({
        state: 'stopped',
        error: error instanceof ApiError ? error : new ApiError('server_error', String(error)),
      });
  });
  return {
    close: () => {
      controller.abort();
      hidden.close();
      wake?.();
    },
    lastEventId: () => lastId,
    retry() {
      refusals = 0;
      wake?.();
    },
  };
}

/** Whether the stream is paused: the page hidden past the grace period, with its caller's leave. */
interface HiddenWatch {
  paused(): boolean;
  close(): void;
}

/**
 * Watches the page's visibility (`visibilitychange`): hidden for `graceMs` with `mayPause()`
 * agreeing, it pauses and calls `changed` (the loop lets the connection go); shown again, it
 * resumes and calls `changed` (the loop connects now, not at the end of a back-off).
 */
function createHiddenWatch(
  signal: AbortSignal,
  pause: StreamOptions['pauseWhenHidden'],
  changed: () => void,
): HiddenWatch {
  let paused = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const watching = pause !== undefined && typeof document !== 'undefined';
  const hidden = () => watching && document.visibilityState === 'hidden';
  const arm = () => {
    clearTimeout(timer);
    if (!pause || !hidden() || paused || signal.aborted) return;
    timer = setTimeout(() => {
      if (!hidden() || signal.aborted) return;
      // Still needed (a run, a permission request, a send): asked again after another grace period.
      if (!pause.mayPause()) return arm();
      paused = true;
      changed();
    }, pause.graceMs);
  };
  const onVisibility = () => {
    if (hidden()) return arm();
    clearTimeout(timer);
    if (!paused) return;
    paused = false;
    changed();
  };
  if (watching) {
    document.addEventListener('visibilitychange', onVisibility);
    arm(); // opened in the background
  }
  return {
    paused: () => paused,
    close() {
      clearTimeout(timer);
      if (watching) document.removeEventListener('visibilitychange', onVisibility);
    },
  };
}
