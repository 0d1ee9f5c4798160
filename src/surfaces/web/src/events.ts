/**
 * The session event stream (`GET v1/sessions/{id}/events`) read with fetch, because EventSource
 * cannot send the bearer header. The stream resumes with `Last-Event-ID` after any break, so the
 * server replays exactly what was missed (from its ring or its event log): no gap, and no
 * duplicate because ids at or below the last one applied are dropped. Without a starting id the
 * first `connected` event says where "now" is; the history read after it covers the rest.
 * @module
 */
import { createParser } from 'eventsource-parser';
import type { SessionEvent } from '../../../events/bus';
import { type Api, ApiError, toApiError, unreachable } from './api';

export type StreamStatus =
  | { state: 'connecting' }
  | { state: 'live'; lastEventId: number }
  | { state: 'reconnecting'; reason: string; attempt: number; inMs: number }
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
}

export interface EventStream {
  close(): void;
  lastEventId(): number;
}

export function openEventStream(options: StreamOptions): EventStream {
  const controller = new AbortController();
  const signal = controller.signal;
  let lastId = options.afterId ?? -1;
  const minDelay = options.minDelayMs ?? 500;
  const maxDelay = options.maxDelayMs ?? 8_000;

  const run = async () => {
    let attempt = 0;
    while (!signal.aborted) {
      options.onStatus({ state: 'connecting' });
      let reason = 'the stream ended';
      try {
        const response = await fetch(
          options.api.url(`v1/sessions/${encodeURIComponent(options.sessionId)}/events`),
          {
            headers: {
              accept: 'text/event-stream',
              ...options.api.headers(),
              ...(lastId >= 0 ? { 'last-event-id': String(lastId) } : {}),
            },
            credentials: 'omit',
            cache: 'no-store',
            signal,
          },
        );
        if (!response.ok || !response.body) {
          const text = await response.text().catch(() => '');
          const error = toApiError(response.status, safeJson(text), text);
          // A wrong token or a session that is gone does not heal by retrying.
          if (error.code === 'unauthorized' || error.code === 'not_found') {
            options.onStatus({ state: 'stopped', error });
            if (error.code === 'unauthorized') options.api.unauthorized(error);
            return;
          }
          reason = error.message;
        } else {
          const outcome = await consume(response.body);
          if (outcome.connected) attempt = 0;
          if (outcome.shutdown) reason = 'the server is shutting down';
        }
      } catch (error) {
        if (signal.aborted) return;
        reason = unreachable(options.api.base, error).message;
      }
      if (signal.aborted) return;
      attempt++;
      const inMs = Math.min(maxDelay, minDelay * 2 ** Math.min(attempt - 1, 6));
      options.onStatus({ state: 'reconnecting', reason, attempt, inMs });
      await sleep(inMs, signal);
    }
  };

  /** Reads one connection: did it get as far as `connected`, did the server say it stops. */
  const consume = async (body: ReadableStream<Uint8Array>) => {
    let connected = false;
    let shutdown = false;
    const parser = createParser({
      onEvent(message) {
        const data = safeJson(message.data) as Record<string, unknown> | undefined;
        if (message.event === 'connected') {
          connected = true;
          if (lastId < 0) lastId = Number(data?.last_event_id ?? 0) || 0;
          options.onStatus({ state: 'live', lastEventId: lastId });
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
    const reader = body.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parser.feed(decoder.decode(value, { stream: true }));
      }
    } finally {
      reader.releaseLock();
    }
    return { connected, shutdown };
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
    lastEventId: () => lastId,
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
