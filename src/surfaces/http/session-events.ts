/**
 * `GET /v1/sessions/{id}/events` (spec, Events → Session event stream): the session's bus events
 * as SSE. Order on every connection:
 *
 * 1. `connected` (payload below) — always first;
 * 2. with `include_snapshot` (1, true, yes or on): one adaptive-orchestration resync event from
 *    the current snapshot (`app.adaptive.resync`, or a minimal payload without that layer);
 * 3. `resync` — only when `Last-Event-ID` is older than the retained ring (or unknown): what
 *    follows comes from the session event log, not the ring;
 * 4. the replay: without `Last-Event-ID` the retained ring; with it, every event after that id;
 * 5. live events as they are published.
 *
 * Bus events carry `id:` (the bus id), `event:` (the type) and `data:` (the payload JSON,
 * redacted). Events the stream makes itself (`connected`, the snapshot resync, `resync`,
 * `shutdown`, `dropped`) carry the stream's cursor as `id:` so they never move the client's
 * position. Heartbeats are comments (`: ping N`). The stream subscribes before anything is read,
 * so an event published meanwhile is delivered exactly once; the replay is read in pages as the
 * client reads (./session-replay.ts). A client over a limit (its backlog, the streams' byte budget,
 * the session's stream cap: ./sse-budget.ts) is dropped after a `dropped` event naming it.
 * @module
 */
import type { Context, Hono } from 'hono';
import type { AdaptiveResync, App } from '../../app';
import { SvcError } from '../../errors';
import type { ReplayResult } from '../../events/bus';
import { VERSION } from '../../version';
import { errorResponse } from './errors';
import type { AppRef } from './mount-tools';
import { type SessionFeed, sessionFeed } from './session-replay';
import { type OpenSseOptions, openSseStream, type SseStream, type StreamTracker } from './sse';
import type { SseBudget } from './sse-budget';
import { nodeResponseOf, openRouteSseStream } from './sse-node';
import { eventSocketOf } from './sse-socket';

export const SESSION_EVENTS_PATH = '/v1/sessions/:id/events';

export interface SessionEventsOptions {
  heartbeatMs: number;
  /** `retry:` sent with `connected`: how long the client waits before reconnecting. */
  retryMs?: number;
  streams: StreamTracker;
  maxBacklogBytes?: number;
  /** The limits over all session streams (./sse-budget.ts). */
  budget?: SseBudget;
}

/** The `connected` event payload (spec: "not shown"; this is svc's design, documented in docs/http.md). */
export interface ConnectedPayload {
  type: 'connected';
  session_id: string;
  server: 'svc';
  version: string;
  /** Highest event id of the session when the stream opened (0 when none). */
  last_event_id: number;
  /** How the stream catches the client up before going live. */
  replay: {
    /** ring: the retained buffer; log: the session event log (the id was older than the ring). */
    source: 'ring' | 'log';
    /** Events after this id follow (the `Last-Event-ID` sent, or where the retained ring starts). */
    after_id: number;
    /** How many events the replay holds. */
    count: number;
    /** The `Last-Event-ID` the client sent, when it sent one. */
    last_event_id_received?: number;
  };
  include_snapshot: boolean;
  heartbeat_ms: number;
  retry_ms: number;
}

const TRUE_VALUES = new Set(['1', 'true', 'yes', 'on']);
const FALSE_VALUES = new Set(['', '0', 'false', 'no', 'off']);

export function mountSessionEvents(hono: Hono, appRef: AppRef, options: SessionEventsOptions): void {
  hono.get(SESSION_EVENTS_PATH, (c) => handleSessionEvents(c, appRef, options));
  const app = appRef();
  if (app) markSessionPublisher(app);
}

/**
 * Say that this app's session events are published to SSE clients: the HTTP service mounted the
 * session route over it (an app built after the route was mounted is marked by the server).
 */
export function markSessionPublisher(app: App): void {
  app.runtime.sessionPublisher = true;
}

async function handleSessionEvents(
  c: Context,
  appRef: AppRef,
  options: SessionEventsOptions,
): Promise<Response> {
  const app = appRef();
  if (!app?.runtime.ready) return errorResponse(c, new SvcError('unavailable', 'App not ready'));
  try {
    const sessionId = c.req.param('id') ?? '';
    await app.sessions.require(sessionId);
    const includeSnapshot = parseIncludeSnapshot(c.req.query('include_snapshot'));
    const lastEventId = parseLastEventId(c.req.header('last-event-id') ?? c.req.query('last_event_id'));
    const attach = parseFlag(c.req.query('attach'), 'attach', true);
    return await openSessionStream(c, app, sessionId, { includeSnapshot, lastEventId, attach }, options);
  } catch (error) {
    return errorResponse(c, error, { app });
  }
}

async function openSessionStream(
  c: Context,
  app: App,
  sessionId: string,
  request: { includeSnapshot: boolean; lastEventId?: number; attach: boolean },
  options: SessionEventsOptions,
): Promise<Response> {
  const retryMs = options.retryMs ?? 1000;
  const feed = sessionFeed(app, sessionId);
  // Subscribe first: whatever is stored from here on is delivered, after the replay, exactly once.
  const unsubscribe = app.bus.subscribe(sessionId, (event) => feed.listener(event));
  let plan: ReplayPlan;
  try {
    plan = await replayPlan(app, sessionId, request.lastEventId, feed);
  } catch (error) {
    unsubscribe();
    throw error;
  }
  const { first, afterId, latest, resyncReason } = plan;
  const count = first.count ?? first.events.length;

  const { stream, response } = openEventStream(c, sessionId, feed, options);
  feed.start(stream, afterId);
  stream.onClose(unsubscribe);
  // An open stream is an attached client (like the local TUI): the session's permission requests
  // wait for an answer (POST /v1/sessions/{id}/permissions/{request_id}) instead of failing as
  // unattended. A monitor that never answers opts out with attach=0.
  if (request.attach)
    stream.onClose(app.agent.attach(sessionId, eventSocketOf(c) ? 'http (WebSocket)' : 'http (SSE)'));
  options.budget?.admit(stream, sessionId);

  const connected: ConnectedPayload = {
    type: 'connected',
    session_id: sessionId,
    server: 'svc',
    version: VERSION,
    last_event_id: latest,
    replay: {
      source: first.source,
      after_id: afterId,
      count,
      ...(request.lastEventId !== undefined ? { last_event_id_received: request.lastEventId } : {}),
    },
    include_snapshot: request.includeSnapshot,
    heartbeat_ms: options.heartbeatMs,
    retry_ms: retryMs,
  };
  stream.send({ event: 'connected', id: afterId, retry: retryMs, data: JSON.stringify(connected) });

  if (request.includeSnapshot) {
    const resync = await adaptiveResync(app, sessionId);
    stream.send({
      event: resync.event,
      id: afterId,
      data: JSON.stringify(app.redactor.value(resync.payload)),
    });
  }
  if (resyncReason) {
    stream.send({
      event: 'resync',
      id: afterId,
      data: JSON.stringify({
        type: 'resync',
        session_id: sessionId,
        reason: resyncReason,
        source: first.source,
        after_id: afterId,
        count,
      }),
    });
  }
  // The replay goes on after the answer: page by page, as the client reads (./session-replay.ts).
  void feed.run(first.events).catch((error: unknown) => {
    app.log.warn('sse replay failed; the stream is closed (the client reconnects with Last-Event-ID)', {
      session_id: sessionId,
      error,
    });
    stream.close();
  });
  app.log.debug('sse stream opened', {
    session_id: sessionId,
    replay_source: first.source,
    replayed: count,
    streams: options.streams.size,
  });
  stream.onClose(() => app.log.debug('sse stream closed', { session_id: sessionId, cursor: feed.cursor }));
  return response;
}

interface ReplayPlan {
  /** The replay's first page (`count`: the whole replay's events up to `latest`). */
  first: ReplayResult;
  afterId: number;
  latest: number;
  resyncReason?: 'last_event_id_evicted' | 'last_event_id_unknown';
}

/**
 * Where the replay starts: without `Last-Event-ID`, where the retained ring starts, or at the
 * session's first event when this node's ring lacks the start of a log that fits in a ring (the
 * session was created on another node, or before a restart); with an id this
 * server never gave for the session (another data dir, a reset), the same, after a `resync`; else
 * after that id (from the log, after a `resync`, when it is older than the ring).
 */
async function replayPlan(
  app: App,
  sessionId: string,
  lastEventId: number | undefined,
  feed: SessionFeed,
): Promise<ReplayPlan> {
  // Events stored while these are read arrive at the feed's listener; it drops the ids already sent.
  const latest = await app.bus.lastId(sessionId);
  if (lastEventId === undefined || lastEventId > latest) {
    const retained = await app.bus.retained(sessionId);
    let afterId = retained.length ? retained[0].id - 1 : latest;
    let first = await feed.read(afterId, latest);
    // A ring that may not hold the session's start (another node created it, or this one
    // restarted): when the whole log fits in a ring, it is sent, as the creator's ring would.
    if (retained.length < app.config.services.http.event_ring_size && afterId > 0) {
      const head = await feed.read(0, latest);
      if (head.source === 'log' && (head.count ?? Infinity) <= app.config.services.http.event_ring_size) {
        afterId = 0;
        first = head;
      }
    }
    return {
      first,
      afterId,
      latest,
      ...(lastEventId === undefined ? {} : { resyncReason: 'last_event_id_unknown' }),
    };
  }
  const first = await feed.read(lastEventId, latest);
  return {
    first,
    afterId: lastEventId,
    latest,
    ...(first.source === 'log' ? { resyncReason: 'last_event_id_evicted' } : {}),
  };
}

/**
 * The stream of one connection: written straight to the Node response when there is one (the
 * backlog is the socket's real buffer), a web stream otherwise and for a HEAD (its body is
 * cancelled, so nothing stays open). A dropped client reads why in a last `dropped` event.
 */
function openEventStream(
  c: Context,
  sessionId: string,
  feed: SessionFeed,
  options: SessionEventsOptions,
): { stream: SseStream; response: Response } {
  const outgoing = nodeResponseOf(c);
  const sseOptions: OpenSseOptions = {
    signal: c.req.raw.signal,
    dropConnection: outgoing ? () => outgoing.destroy() : undefined,
    heartbeatMs: options.heartbeatMs,
    maxBacklogBytes: options.maxBacklogBytes,
    tracker: options.streams,
    headWithFirst: true,
    budget: options.budget?.watch,
    dropNotice: (reason, detail) => ({
      event: 'dropped',
      id: feed.cursor,
      data: JSON.stringify({
        type: 'dropped',
        session_id: sessionId,
        reason,
        message: `${detail}; reconnect with Last-Event-ID to resume`,
      }),
    }),
    onShutdown: (s) =>
      s.send({
        event: 'shutdown',
        id: feed.cursor,
        data: JSON.stringify({ type: 'shutdown', session_id: sessionId, reason: 'server shutting down' }),
      }),
  };
  return c.req.method === 'HEAD' ? openSseStream(sseOptions) : openRouteSseStream(c, sseOptions);
}

/**
 * The snapshot resync: the adaptive layer's payload when it is wired; otherwise a minimal payload
 * in the snapshot's own shape that says honestly that there is no adaptive evidence:
 * `{session_id, action: "unknown", posture: {state: "disabled" | "unavailable", reason, …false}}`.
 */
export async function adaptiveResync(app: App, sessionId: string): Promise<AdaptiveResync> {
  if (app.adaptive) {
    try {
      return await app.adaptive.resync(sessionId);
    } catch (error) {
      app.log.error('adaptive snapshot failed', { session_id: sessionId, error });
      return minimalAdaptiveResync(app, sessionId, 'adaptive snapshot failed; see the server log');
    }
  }
  return minimalAdaptiveResync(app, sessionId);
}

export function minimalAdaptiveResync(app: App, sessionId: string, failure?: string): AdaptiveResync {
  const configured = app.config.options.adaptive_orchestration.enabled;
  const reason =
    failure ??
    (configured
      ? 'adaptive orchestration is not wired in this process'
      : 'options.adaptive_orchestration.enabled is false');
  return {
    event: 'adaptive_orchestration.genome',
    payload: {
      session_id: sessionId,
      action: 'unknown',
      posture: {
        state: configured ? 'unavailable' : 'disabled',
        reason,
        implemented: false,
        configured,
        available: false,
        active: false,
        pending_apply: false,
        applied: false,
        degraded: failure !== undefined,
        decision_trace_available: false,
      },
    },
  };
}

function parseIncludeSnapshot(value: string | undefined): boolean {
  return parseFlag(value, 'include_snapshot', false);
}

function parseFlag(value: string | undefined, name: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  const v = value.trim().toLowerCase();
  if (TRUE_VALUES.has(v)) return true;
  if (FALSE_VALUES.has(v)) return false;
  throw new SvcError('invalid_input', `invalid ${name} (use 1, true, yes or on; 0, false, no or off)`);
}

function parseLastEventId(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const v = value.trim();
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) {
    throw new SvcError('invalid_input', 'invalid Last-Event-ID (expected an event id sent by this stream)');
  }
  return Number(v);
}
