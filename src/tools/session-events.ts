/**
 * `list_session_events` (family sessions; spec, Adaptive orchestration surfaces; EVT-04): the
 * retained buffer entries that back SSE replay — exactly what `GET /v1/sessions/{id}/events`
 * replays on connect (no `Last-Event-ID`) or after a given id while it is still in the ring.
 * The ring lives in the serving process's memory, so there is no CLI binding: a separate `svc`
 * process would only ever show its own, empty ring.
 * @module
 */
import { z } from 'zod';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import { defineTool } from './core/define-tool';

export const listSessionEventsInput = () =>
  z.strictObject({
    session_id: sessionIdInput(
      'context',
      'Session whose retained events to list. Omit inside a session to use the current one.',
    ),
    after_id: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe(
        'Only entries with a larger id, as an SSE reconnect with Last-Event-ID would get. Omit for all.',
      ),
    type: z
      .string()
      .min(1)
      .optional()
      .describe('Only entries of this event type (for example run.finished). Omit for every type.'),
  });

export const listSessionEvents = defineTool({
  name: 'list_session_events',
  family: 'sessions',
  tag: 'primitive',
  description:
    'List the retained session events (the in-memory buffer that backs SSE replay): id, type, payload and time. ' +
    'Ids are the SSE event ids; an SSE reconnect whose Last-Event-ID is older than the oldest retained entry ' +
    'resyncs from the session event log instead.',
  input: listSessionEventsInput,
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/sessions/:id/retained-events', params: { id: 'session_id' } },
    mcp: 'svc_list_session_events',
  },
  examples: [{ session_id: 'ses_example_unknown' }, { session_id: 'ses_example_unknown', after_id: 3 }],
  async run(ctx, input): Promise<ListSessionEventsResult> {
    const { app } = ctx;
    // An unknown session has no retained events: the list is empty, not an error.
    const sessionId = (
      await resolveSession(app, input, {
        onMissing: 'context',
        context: ctx.sessionId,
        onUnknown: 'unchecked',
        required: 'session_id: required outside a session; see list_sessions',
      })
    ).session_id;
    const retained = await app.bus.retained(sessionId);
    const events = retained
      .filter((e) => e.id > (input.after_id ?? 0))
      .filter((e) => input.type === undefined || e.type === input.type)
      .map((e) => ({ id: e.id, type: e.type, payload: e.payload, created_at: e.created_at }));
    return {
      session_id: sessionId,
      // The buffer is keyed by session id and may outlive the session row (deleted sessions).
      session_exists: (await app.sessions.get(sessionId)) !== undefined,
      ring_size: app.config.services.http.event_ring_size,
      retained: retained.length,
      oldest_retained_id: retained[0]?.id ?? null,
      last_event_id: await app.bus.lastId(sessionId),
      total: events.length,
      events,
    };
  },
});

export interface ListSessionEventsResult {
  session_id: string;
  session_exists: boolean;
  ring_size: number;
  retained: number;
  oldest_retained_id: number | null;
  last_event_id: number;
  total: number;
  events: { id: number; type: string; payload: Record<string, unknown>; created_at: number }[];
}
