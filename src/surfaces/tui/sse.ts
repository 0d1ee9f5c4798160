/**
 * A reconnecting SSE reader for the session event stream (`GET /v1/sessions/{id}/events`):
 * `Last-Event-ID` on reconnect so the server replays what was missed, bounded backoff, and one
 * AbortSignal that ends it. The `connected` event is a status, not a session event.
 * @module
 */
import { createParser } from 'eventsource-parser';
import type { SessionEvent } from '../../events/bus';
import { safeJson, sleep } from '../../util/stream-wait';

export interface EventStreamOptions {
  url: string;
  headers?: Record<string, string>;
  /** Replay after this id on the first connect. */
  lastEventId?: number;
  signal: AbortSignal;
  fetch?: typeof fetch;
  onEvent(event: SessionEvent): void;
  onStatus?(status: 'connected' | 'reconnecting' | 'closed', detail?: string): void;
  /** Backoff bounds (ms). */
  minDelayMs?: number;
  maxDelayMs?: number;
}

export async function readEventStream(options: EventStreamOptions): Promise<void> {
  const doFetch = options.fetch ?? globalThis.fetch;
  let lastId = options.lastEventId ?? 0;
  let delay = options.minDelayMs ?? 250;
  const maxDelay = options.maxDelayMs ?? 5_000;
  while (!options.signal.aborted) {
    let detail = 'stream ended';
    try {
      const response = await doFetch(options.url, {
        headers: {
          accept: 'text/event-stream',
          ...options.headers,
          ...(lastId > 0 ? { 'last-event-id': String(lastId) } : {}),
        },
        signal: options.signal,
      });
      if (!response.ok || !response.body) {
        detail = `HTTP ${response.status}`;
        // Auth and missing routes do not heal by retrying fast.
        if (response.status === 401 || response.status === 403 || response.status === 404) delay = maxDelay;
      } else {
        const parser = createParser({
          onEvent(message) {
            if (message.event === 'connected') {
              delay = options.minDelayMs ?? 250;
              // Without a Last-Event-ID the server replays its retained ring; a caller that gave
              // no lastEventId has the history already and wants only what comes next.
              if (lastId === 0 && options.lastEventId === undefined) {
                const latest = Number((safeJson(message.data) as { last_event_id?: unknown })?.last_event_id);
                if (Number.isFinite(latest) && latest > 0) lastId = latest;
              }
              options.onStatus?.('connected');
              return;
            }
            const event = toSessionEvent(message.id, message.event, message.data);
            if (!event) return;
            if (event.id > 0 && event.id <= lastId) return;
            if (event.id > 0) lastId = event.id;
            options.onEvent(event);
          },
        });
        const decoder = new TextDecoder();
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          parser.feed(decoder.decode(chunk, { stream: true }));
        }
      }
    } catch (error) {
      if (options.signal.aborted) break;
      detail = error instanceof Error ? error.message : String(error);
    }
    if (options.signal.aborted) break;
    options.onStatus?.('reconnecting', detail);
    await sleep(delay, options.signal);
    delay = Math.min(maxDelay, delay * 2);
  }
  options.onStatus?.('closed');
}

/** Lenient: the data is the whole event envelope, or just its payload with `event:`/`id:` lines. */
export function toSessionEvent(
  id: string | undefined,
  type: string | undefined,
  data: string,
): SessionEvent | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const record = parsed as Record<string, unknown>;
  const numericId = Number(id ?? record.id ?? 0) || 0;
  if (typeof record.type === 'string' && typeof record.payload === 'object' && record.payload !== null) {
    return {
      id: typeof record.id === 'number' ? record.id : numericId,
      session_id: String(record.session_id ?? (record.payload as Record<string, unknown>).session_id ?? ''),
      type: record.type,
      payload: record.payload as Record<string, unknown>,
      created_at: typeof record.created_at === 'number' ? record.created_at : 0,
    };
  }
  const eventType =
    type && type !== 'message' ? type : typeof record.type === 'string' ? record.type : undefined;
  if (!eventType) return undefined;
  return {
    id: numericId,
    session_id: String(record.session_id ?? ''),
    type: eventType,
    payload: record,
    created_at: 0,
  };
}
