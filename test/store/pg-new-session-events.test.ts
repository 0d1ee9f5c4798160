/**
 * A new session's events appended inline in the statement that inserts the session (issue 18 item
 * 6, p-pglone: a lone compat start's seven session events): `appendNewEventsCall`
 * (src/events/pg-event-store.ts) gives `WITH`s of the statement instead of a
 * `svc_append_events_across` call (no advisory lock, no function: nothing else can know the session
 * before the statement commits). Pinned against the function on two sessions given the same
 * events: the rows stored in order, the answers (ids ascending, each with the session's highest id
 * before: 0 for a session with none, the highest for one with events already), one NOTIFY with the
 * session's last id; nothing written, answered or notified where `go` is false.
 */
import pgDriver from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { appendNewEventsCall } from '../../src/events/pg-event-store';
import { migratedInPlace, noticesOn, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

const events = (sessionId: string) =>
  ['session.created', 'queue.changed', 'state.changed'].map((type, i) => ({
    sessionId,
    type,
    payload: JSON.stringify({ type, i }),
    createdAt: 100 + i,
  }));

describe.skipIf(!pg.available)('a new session’s events inline in its statement', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-652: the rows, answers and NOTIFY of svc_append_events_across, without the call; nothing where go is false', async () => {
    const { url, client, close } = await migratedInPlace(pg.cluster());
    closers.push(close);
    const notices = await noticesOn(new pgDriver.Client({ connectionString: url }), 'svc_events', closers);
    const settled = async (count: number) => {
      for (let i = 0; i < 1000 && notices.length < count; i++) await new Promise((r) => setTimeout(r, 10));
      return notices.splice(0);
    };

    /** The inline form in a statement of its own, gated by `go`. */
    const inline = async (sessionId: string, go = 'true') => {
      const call = appendNewEventsCall(1, events(sessionId), go);
      expect(call.ctes).not.toContain('svc_append_events_across');
      return (
        await client.query<{ event_id: string; previous_id: string }>(
          `WITH ${call.ctes}, svc_e AS (SELECT event_id, previous_id FROM ${call.rows} x)
           SELECT event_id, previous_id FROM svc_e ORDER BY event_id`,
          call.values,
        )
      ).rows.map((r) => [Number(r.event_id), Number(r.previous_id)]);
    };
    /** The function, as the bus's own append. */
    const across = async (sessionId: string) =>
      (
        await client.query<{ event_id: string; previous_id: string }>(
          'SELECT event_id, previous_id FROM svc_append_events_across($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6)',
          [
            events(sessionId).map((e) => e.sessionId),
            events(sessionId).map((e) => e.type),
            events(sessionId).map((e) => e.payload),
            events(sessionId).map((e) => e.createdAt),
            [7],
            'svc_events',
          ],
        )
      ).rows.map((r) => [Number(r.event_id), Number(r.previous_id)]);
    const stored = async (sessionId: string) =>
      (
        await client.query<{ type: string; payload: string; created_at: string }>(
          'SELECT type, payload, created_at FROM session_events WHERE session_id = $1 ORDER BY id',
          [sessionId],
        )
      ).rows.map((r) => [r.type, r.payload, Number(r.created_at)]);

    // A new session: previous 0, ids ascending in the events' order, one NOTIFY with the last id.
    const byCall = await across('s-call');
    const callNotices = await settled(1);
    const byInline = await inline('s-new');
    const inlineNotices = await settled(1);
    for (const [rows, notes, id] of [
      [byCall, callNotices, 's-call'],
      [byInline, inlineNotices, 's-new'],
    ] as const) {
      expect(rows.map(([, previous]) => previous)).toEqual([0, 0, 0]);
      const ids = rows.map(([eventId]) => eventId);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(ids[2]! - ids[0]!).toBe(2);
      expect(notes).toEqual([`${id}:${ids[2]}`]);
    }
    expect(await stored('s-new')).toEqual(await stored('s-call'));

    // Events already there (a session's earlier append): each answered with its highest id before.
    const again = await inline('s-call');
    expect(again.map(([, previous]) => previous)).toEqual([byCall[2]![0], byCall[2]![0], byCall[2]![0]]);
    expect(await settled(1)).toEqual([`s-call:${again[2]![0]}`]);

    // `go` false: nothing inserted, answered or notified.
    expect(await inline('s-none', 'false')).toEqual([]);
    expect(await stored('s-none')).toEqual([]);
    await new Promise((r) => setTimeout(r, 100));
    expect(notices).toEqual([]);
  });
});
