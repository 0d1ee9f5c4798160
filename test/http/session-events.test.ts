/**
 * `GET /v1/sessions/{id}/events` through `app.request` (spec, Events → Session event stream).
 * Pins:
 * - the stream is text/event-stream and opens with `connected` (payload fixed below);
 * - include_snapshot (1, true, yes, on) adds one adaptive resync event before the replay; other
 *   false values add none; anything else is 400 by name;
 * - without Last-Event-ID the retained ring is replayed; with it, exactly the events after it;
 * - an id older than the ring resyncs from the session event log behind a `resync` event;
 * - events published while the stream is being set up arrive exactly once;
 * - every event has `id:` and `event:`; payloads are redacted;
 * - a disconnect removes the bus listener, the heartbeat timer and the tracked stream;
 * - unknown session 404, bad Last-Event-ID 400, not ready 503;
 * - list_session_events returns what the replay sends (EVT-04).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app';
import { createHttpApp, createStreamTracker } from '../../src/surfaces/http/index';
import { listSessionEvents } from '../../src/tools/session-events';
import { VERSION } from '../../src/version';
import { makeTestApp } from '../helpers/make-test-app';
import { maskVolatile, viaHttp, viaTool } from '../helpers/surfaces';
import { sseReader } from './sse-reader';

afterEach(() => {
  vi.restoreAllMocks();
});

async function setup(options: Parameters<typeof makeTestApp>[0] = {}) {
  const app = await makeTestApp(options);
  const streams = createStreamTracker();
  const hono = createHttpApp(app, { allowNoAuth: true, streams, sseHeartbeatMs: 0 });
  const session = await app.sessions.create({ title: 'sse' });
  const open = async (query = '', headers: Record<string, string> = {}) => {
    const response = await hono.request(`/v1/sessions/${session.id}/events${query}`, { headers });
    expect(response.status, await peek(response)).toBe(200);
    return sseReader(response);
  };
  return { app, hono, streams, session, open };
}

async function peek(response: Response): Promise<string> {
  return response.status === 200 ? '' : await response.clone().text();
}

const busIds = async (app: App, sessionId: string) =>
  (await app.bus.retained(sessionId)).map((e) => String(e.id));

describe('GET /v1/sessions/{id}/events', () => {
  it('EVT-02, EVT-05: is an SSE stream whose first event is connected', async () => {
    const { app, hono, session } = await setup();
    const response = await hono.request(`/v1/sessions/${session.id}/events`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache, no-transform');
    const reader = sseReader(response);
    const connected = await reader.next();
    const created = (await app.bus.retained(session.id))[0];
    expect(connected).toMatchObject({ event: 'connected', id: String(created.id - 1), retry: 1000 });
    expect(connected.json).toEqual({
      type: 'connected',
      session_id: session.id,
      server: 'svc',
      version: VERSION,
      last_event_id: created.id,
      replay: { source: 'ring', after_id: created.id - 1, count: 1 },
      include_snapshot: false,
      heartbeat_ms: 0,
      retry_ms: 1000,
    });
    await reader.cancel();
  });

  it('replays the retained ring on a fresh connection, then streams live events with bus ids', async () => {
    const { app, session, open } = await setup();
    const a = await app.bus.publishStored(session.id, 'state.changed', {
      session_id: session.id,
      state: 'running',
    });
    const reader = await open();
    const [, created, first] = await reader.take(3);
    expect(created).toMatchObject({ event: 'session.created', id: (await busIds(app, session.id))[0] });
    expect(first).toMatchObject({ event: 'state.changed', id: String(a.id) });
    expect(first.json).toEqual({ session_id: session.id, state: 'running' });
    const b = await app.bus.publishStored(session.id, 'state.changed', {
      session_id: session.id,
      state: 'idle',
    });
    app.bus.publish('another-session', 'state.changed', { session_id: 'another-session', state: 'idle' });
    const live = await reader.next();
    expect(live).toMatchObject({ event: 'state.changed', id: String(b.id) });
    expect(live.json.state).toBe('idle');
    await reader.cancel();
  });

  for (const value of ['1', 'true', 'yes', 'on', 'TRUE', 'On']) {
    it(`EVT-03, EVT-06, EVT-07: include_snapshot=${value} sends one adaptive resync after connected, before the replay`, async () => {
      const { session, open } = await setup();
      const reader = await open(`?include_snapshot=${value}`);
      const [connected, resync, replayed] = await reader.take(3);
      expect(connected.event).toBe('connected');
      expect(connected.json.include_snapshot).toBe(true);
      expect(resync).toMatchObject({ event: 'adaptive_orchestration.genome', id: connected.id });
      expect(resync.json).toEqual({
        session_id: session.id,
        action: 'unknown',
        // The adaptive layer's own snapshot (src/adaptive): wired, gate off.
        posture: {
          state: 'disabled',
          reason: 'options.adaptive_orchestration.enabled is false',
          implemented: true,
          configured: false,
          available: false,
          active: false,
          pending_apply: false,
          applied: false,
          degraded: false,
          decision_trace_available: false,
        },
      });
      expect(replayed.event).toBe('session.created');
      await reader.cancel();
    });
  }

  for (const value of ['0', 'false', 'no', 'off', '']) {
    it(`sends no snapshot event for include_snapshot=${JSON.stringify(value)}`, async () => {
      const { open } = await setup();
      const reader = await open(`?include_snapshot=${value}`);
      const [connected, next] = await reader.take(2);
      expect(connected.json.include_snapshot).toBe(false);
      expect(next.event).toBe('session.created');
      await reader.cancel();
    });
  }

  it('answers 400 naming include_snapshot for any other value', async () => {
    const { hono, session } = await setup();
    const response = await hono.request(`/v1/sessions/${session.id}/events?include_snapshot=maybe`);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(
      /^invalid include_snapshot/,
    );
  });

  it('sends a minimal payload from a runtime without the adaptive layer', async () => {
    const { session, open } = await setup({ adaptive: false });
    const reader = await open('?include_snapshot=1');
    const [, resync] = await reader.take(2);
    expect(resync.json).toMatchObject({
      session_id: session.id,
      action: 'unknown',
      posture: { state: 'disabled', implemented: false, configured: false },
    });
    await reader.cancel();
  });

  it('sends the adaptive layer snapshot when app.adaptive is wired', async () => {
    const { app, session, open } = await setup({
      config: { options: { adaptive_orchestration: { enabled: true } } },
    });
    const payload = {
      session_id: session.id,
      action: 'updated',
      posture: { state: 'active' },
      effective_genome: { schema_version: 1, choreography_preset: 'solo', topology: 'single' },
    };
    vi.spyOn(app.adaptive!, 'resync').mockImplementation(async (id) => ({
      event: 'adaptive_orchestration.genome',
      payload: { ...payload, session_id: id },
    }));
    const reader = await open('?include_snapshot=1');
    const [, resync] = await reader.take(2);
    expect(resync.event).toBe('adaptive_orchestration.genome');
    expect(resync.json).toEqual(payload);
    await reader.cancel();
  });

  it('reports a failing snapshot hook as a degraded minimal payload, not a broken stream', async () => {
    const { app, open } = await setup({ config: { options: { adaptive_orchestration: { enabled: true } } } });
    vi.spyOn(app.adaptive!, 'resync').mockImplementation(() => {
      throw new Error('boom');
    });
    const reader = await open('?include_snapshot=yes');
    const [, resync, next] = await reader.take(3);
    expect(resync.json.posture).toMatchObject({ state: 'unavailable', degraded: true, configured: true });
    expect(next.event).toBe('session.created');
    expect(app.memoryLog.records.some((r) => r.message === 'adaptive snapshot failed')).toBe(true);
    await reader.cancel();
  });

  it('EVT-08: with Last-Event-ID replays exactly the retained events after it', async () => {
    const { app, session, open } = await setup();
    const sent = await Promise.all([1, 2, 3, 4].map((n) => app.bus.publishStored(session.id, 'tick', { n })));
    const reader = await open('', { 'last-event-id': String(sent[1].id) });
    const connected = await reader.next();
    expect(connected.id).toBe(String(sent[1].id));
    expect(connected.json.replay).toEqual({
      source: 'ring',
      after_id: sent[1].id,
      count: 2,
      last_event_id_received: sent[1].id,
    });
    const replayed = await reader.take(2);
    expect(replayed.map((e) => [e.id, e.json.n])).toEqual([
      [String(sent[2].id), 3],
      [String(sent[3].id), 4],
    ]);
    // The query form works for clients that cannot set headers.
    const byQuery = await open(`?last_event_id=${sent[2].id}`);
    const [, only] = await byQuery.take(2);
    expect(only.id).toBe(String(sent[3].id));
    await reader.cancel();
    await byQuery.cancel();
  });

  it('EVT-09: resyncs from the session event log when Last-Event-ID is older than the ring', async () => {
    const { app, session, open } = await setup({ config: { services: { http: { event_ring_size: 2 } } } });
    const sent = await Promise.all(
      [1, 2, 3, 4, 5].map((n) => app.bus.publishStored(session.id, 'tick', { n })),
    );
    expect((await app.bus.retained(session.id)).map((e) => e.payload.n)).toEqual([4, 5]);
    const reader = await open('?include_snapshot=on', { 'last-event-id': String(sent[0].id) });
    const events = await reader.take(7);
    expect(events.map((e) => e.event)).toEqual([
      'connected',
      'adaptive_orchestration.genome',
      'resync',
      'tick',
      'tick',
      'tick',
      'tick',
    ]);
    expect(events[0].json.replay).toMatchObject({ source: 'log', after_id: sent[0].id, count: 4 });
    expect(events[2].json).toEqual({
      type: 'resync',
      session_id: session.id,
      reason: 'last_event_id_evicted',
      source: 'log',
      after_id: sent[0].id,
      count: 4,
    });
    expect(events.slice(3).map((e) => [Number(e.id), e.json.n])).toEqual(
      sent.slice(1).map((e, i) => [e.id, i + 2]),
    );
    await reader.cancel();
  });

  it('treats a Last-Event-ID ahead of the session as unknown: resync, then the retained ring', async () => {
    const { app, session, open } = await setup();
    const reader = await open('', { 'last-event-id': '999999' });
    const [connected, resync, created] = await reader.take(3);
    expect(connected.json.replay.source).toBe('ring');
    expect(resync.json).toMatchObject({ reason: 'last_event_id_unknown', source: 'ring', count: 1 });
    expect(created.id).toBe((await busIds(app, session.id))[0]);
    await reader.cancel();
  });

  it('answers 400 for a Last-Event-ID that is not an event id', async () => {
    const { hono, session } = await setup();
    const response = await hono.request(`/v1/sessions/${session.id}/events`, {
      headers: { 'last-event-id': 'abc' },
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(
      /^invalid Last-Event-ID/,
    );
  });

  it('delivers an event published while the stream is set up exactly once, after the replay', async () => {
    const { app, session, open } = await setup();
    let published: number | undefined;
    vi.spyOn(app.adaptive!, 'resync').mockImplementation(async (id) => {
      published = (await app.bus.publishStored(id, 'during.setup', { session_id: id })).id;
      return { event: 'adaptive_orchestration.genome', payload: { session_id: id } };
    });
    const reader = await open('?include_snapshot=1');
    const events = await reader.take(4);
    expect(events.map((e) => e.event)).toEqual([
      'connected',
      'adaptive_orchestration.genome',
      'session.created',
      'during.setup',
    ]);
    expect(events[3].id).toBe(String(published));
    const after = await app.bus.publishStored(session.id, 'tick', {});
    expect((await reader.next()).id).toBe(String(after.id));
    expect(reader.seen.filter((e) => e.event === 'during.setup')).toHaveLength(1);
    await reader.cancel();
  });

  it('gives every event an id and a type, and redacts payloads', async () => {
    const { app, session, open } = await setup({
      env: { HOME: '/nonexistent', ACME_API_KEY: 'sk-live-secret-value-123' },
    });
    const reader = await open();
    app.bus.publish(session.id, 'tool.finished', {
      session_id: session.id,
      summary: 'key sk-live-secret-value-123',
    });
    const events = await reader.take(3);
    for (const event of events) {
      expect(event.id).toMatch(/^\d+$/);
      expect(event.event).not.toBe('message');
    }
    expect(events[2].json.summary).toBe('key [REDACTED]');
    await reader.cancel();
  });

  it('sends heartbeat comments that never move the cursor', async () => {
    const app = await makeTestApp();
    const hono = createHttpApp(app, { allowNoAuth: true, sseHeartbeatMs: 20 });
    const session = await app.sessions.create();
    const reader = sseReader(await hono.request(`/v1/sessions/${session.id}/events`));
    await reader.take(2);
    const pings = () => reader.comments.filter((c) => /^ping \d+$/.test(c)).length;
    // Read on (an event at a time, each the next by id) until two pings came in between: a fixed
    // pause was not enough on a loaded box, where a late interval fires once, not twice.
    const deadline = Date.now() + 10_000;
    do {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const next = await app.bus.publishStored(session.id, 'tick', {});
      expect((await reader.next()).id).toBe(String(next.id));
    } while (pings() < 2 && Date.now() < deadline);
    expect(pings()).toBeGreaterThanOrEqual(2);
    await reader.cancel();
  });

  it('leaks nothing when the client disconnects: listener, timer and tracked stream are gone', async () => {
    const app = await makeTestApp();
    const streams = createStreamTracker();
    const unsubscribed = vi.fn();
    const subscribe = app.bus.subscribe.bind(app.bus);
    vi.spyOn(app.bus, 'subscribe').mockImplementation((id, listener) => {
      const off = subscribe(id, listener);
      return () => {
        unsubscribed(id);
        off();
      };
    });
    const setIntervalSpy = vi.spyOn(globalThis, 'setInterval');
    const clearIntervalSpy = vi.spyOn(globalThis, 'clearInterval');
    const hono = createHttpApp(app, { allowNoAuth: true, streams, sseHeartbeatMs: 10_000 });
    const session = await app.sessions.create();
    const reader = sseReader(await hono.request(`/v1/sessions/${session.id}/events`));
    await reader.take(2);
    expect(streams.size).toBe(1);
    const timer = setIntervalSpy.mock.results.at(-1)?.value;
    await reader.cancel();
    await vi.waitFor(() => expect(unsubscribed).toHaveBeenCalledWith(session.id), { timeout: 10_000 });
    expect(streams.size).toBe(0);
    expect(clearIntervalSpy).toHaveBeenCalledWith(timer);
    // Publishing after the disconnect reaches nobody and breaks nothing.
    app.bus.publish(session.id, 'tick', {});
    expect(app.memoryLog.records.filter((r) => r.level === 'error')).toEqual([]);
  });

  it('ends the stream after session.deleted', async () => {
    const { app, session, open } = await setup();
    const reader = await open();
    await reader.take(2);
    app.bus.publish(session.id, 'session.deleted', { session_id: session.id });
    expect((await reader.next()).event).toBe('session.deleted');
    expect(await reader.ended()).toBe(true);
  });

  it('ends every tracked stream at shutdown with a shutdown event carrying the cursor', async () => {
    const { app, session, streams, open } = await setup();
    const reader = await open();
    await reader.take(2);
    const last = await app.bus.publishStored(session.id, 'tick', {});
    await reader.next();
    streams.closeAll();
    const shutdown = await reader.next();
    expect(shutdown).toMatchObject({ event: 'shutdown', id: String(last.id) });
    expect(shutdown.json).toEqual({
      type: 'shutdown',
      session_id: session.id,
      reason: 'server shutting down',
    });
    expect(await reader.ended()).toBe(true);
    expect(streams.size).toBe(0);
  });

  it('answers 404 for an unknown session', async () => {
    const { hono } = await setup();
    const response = await hono.request('/v1/sessions/ses_nope/events');
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      error: { message: 'session_id: no session "ses_nope"; see svc session list', type: 'not_found' },
    });
  });

  it('answers 503 App not ready before the app is ready', async () => {
    const app = await makeTestApp({ ready: false });
    const hono = createHttpApp(app, { allowNoAuth: true });
    const response = await hono.request('/v1/sessions/any/events');
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ error: { message: 'App not ready', type: 'unavailable' } });
  });
});

describe('list_session_events', () => {
  it('EVT-04: returns the retained entries that a Last-Event-ID replay sends', async () => {
    const { app, session, open } = await setup({ config: { services: { http: { event_ring_size: 3 } } } });
    const sent = await Promise.all([1, 2, 3, 4].map((n) => app.bus.publishStored(session.id, 'tick', { n })));
    const listed = (await viaTool(app, listSessionEvents, { session_id: session.id })) as {
      events: { id: number; type: string; payload: unknown }[];
    };
    expect(listed).toMatchObject({
      session_id: session.id,
      session_exists: true,
      ring_size: 3,
      retained: 3,
      oldest_retained_id: sent[1].id,
      last_event_id: sent[3].id,
      total: 3,
    });
    const fresh = await open();
    const replayed = (await fresh.take(4)).slice(1);
    expect(replayed.map((e) => ({ id: Number(e.id), type: e.event, payload: e.json }))).toEqual(
      listed.events.map(({ id, type, payload }) => ({ id, type, payload })),
    );
    const after = (await viaTool(app, listSessionEvents, {
      session_id: session.id,
      after_id: sent[2].id,
    })) as {
      events: { id: number }[];
    };
    const resumed = await open('', { 'last-event-id': String(sent[2].id) });
    const [, only] = await resumed.take(2);
    expect(after.events.map((e) => e.id)).toEqual([Number(only.id)]);
    await fresh.cancel();
    await resumed.cancel();
  });

  it('filters by type and reports an unknown session without failing', async () => {
    const { app, session } = await setup();
    app.bus.publish(session.id, 'tick', {});
    const ticks = (await viaTool(app, listSessionEvents, { session_id: session.id, type: 'tick' })) as {
      events: { type: string }[];
    };
    expect(ticks.events.map((e) => e.type)).toEqual(['tick']);
    expect(await viaTool(app, listSessionEvents, { session_id: 'ses_gone' })).toMatchObject({
      session_exists: false,
      total: 0,
      events: [],
    });
  });

  it('returns the same JSON over the tool and HTTP', async () => {
    const { app, session } = await setup();
    app.bus.publish(session.id, 'tick', { n: 1 });
    const input = { session_id: session.id, after_id: 0 };
    const direct = maskVolatile(await viaTool(app, listSessionEvents, input));
    const http = await viaHttp(
      app,
      { method: 'GET', path: '/v1/sessions/:id/retained-events', params: { id: 'session_id' } },
      input,
    );
    expect(http.status, http.text).toBe(200);
    expect(maskVolatile(http.body)).toEqual(direct);
  });

  it('names a bad after_id query value', async () => {
    const { hono, session } = await setup();
    const response = await hono.request(`/v1/sessions/${session.id}/retained-events?after_id=abc`);
    expect(response.status).toBe(400);
    // The query parameter is named first (spec DASH-58's wording), with what every surface's
    // invalid-input message says (issue 14): the tool, what was expected and what came.
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
      'invalid after_id: list_session_events: expected integer, received "abc"',
    );
  });
});
