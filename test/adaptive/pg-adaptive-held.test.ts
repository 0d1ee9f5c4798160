/**
 * The adaptive monitor's `settled()` inside a PostgreSQL store transaction (a compat start's run
 * is started in the start's transaction body): the events the transaction holds for its end
 * (src/events/held-publishes.ts) are not delivered before that end for it (p-ownctx Left 2:
 * `flush()` released them, so every listener got them before the COMMIT, or before a ROLLBACK);
 * the monitor handles them itself, in the transaction (its reads see the run's start there, as on
 * SQLite), and not again when they are delivered. A rolled-back transaction's events are dropped.
 */
import { describe, expect, it, vi } from 'vitest';
import type { SqlClient } from '../../src/store/postgres/client';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';
import { adaptiveApp } from './helpers';

const pg = postgresForFile();

/** The session's row in `adaptive_sessions`, read in the caller's context (its transaction, if open). */
async function classified(sql: SqlClient, sessionId: string): Promise<number> {
  const row = await sql.one<{ n: number }>(
    'SELECT count(*)::int AS n FROM adaptive_sessions WHERE session_id = $1',
    [sessionId],
  );
  return row?.n ?? 0;
}

/** The monitor's classifications logged for the session. */
const classifications = (app: Awaited<ReturnType<typeof adaptiveApp>>['app'], sessionId: string) =>
  app.memoryLog.records.filter(
    (r) => r.message === 'adaptive genome classified' && JSON.stringify(r).includes(sessionId),
  ).length;

describe.skipIf(!pg.available)('the adaptive monitor`s settled() inside a transaction (PostgreSQL)', () => {
  it('STORE-PG-452: settled() inside a transaction delivers none of its held events before its end: the monitor handles its run.started in it (rolled back with it), every listener gets the events after the COMMIT, once, in publish order, none of a rolled-back one', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { app } = await adaptiveApp([], {}, { postgres: sql });
    try {
      let open = false;
      const seen: { session: string; type: string; id: number; open: boolean }[] = [];
      app.bus.subscribe('*', (event) => {
        seen.push({ session: event.session_id, type: event.type, id: event.id, open });
      });
      const adaptive = app.adaptive;
      if (!adaptive) throw new Error('no adaptive service');

      /** A session created and its run started in a transaction, `settled()` in it; `end` ends it. */
      const started = async (title: string, end: 'commit' | 'rollback') => {
        let sessionId = '';
        let inside = { classified: -1, seen: -1 };
        const body = app.store.transactions.run(async () => {
          open = true;
          try {
            const session = await app.sessions.create({ title });
            sessionId = session.id;
            app.bus.publish(session.id, 'run.started', {
              session_id: session.id,
              run_id: `run_${title}`,
              parent_run_id: null,
            });
            await adaptive.settled();
            inside = { classified: await classified(sql, session.id), seen: seen.length };
          } finally {
            open = false;
          }
          if (end === 'rollback') throw new Error('rolled back by the test');
        });
        if (end === 'rollback') await expect(body).rejects.toThrow(/rolled back by the test/);
        else await body;
        // The monitor's reads of the session once the events are delivered after the end: none.
        const gets = vi.spyOn(app.sessions, 'get');
        try {
          await app.bus.flush();
          await adaptive.settled();
          const after = gets.mock.calls.filter(([id]) => id === sessionId).length;
          return { sessionId, inside, after };
        } finally {
          gets.mockRestore();
        }
      };

      const before = seen.length;
      const rolled = await started('rolled', 'rollback');
      // The monitor classified the session in the transaction (it read the session created there).
      expect(rolled.inside).toEqual({ classified: 1, seen: before });
      // Rolled back with it; not handled again when the events came after the ROLLBACK (no read).
      expect(await classified(sql, rolled.sessionId)).toBe(0);
      expect(classifications(app, rolled.sessionId)).toBe(1);
      expect(rolled.after).toBe(0);

      const kept = await started('kept', 'commit');
      expect(kept.inside.classified).toBe(1);
      expect(await classified(sql, kept.sessionId)).toBe(1);
      expect(classifications(app, kept.sessionId)).toBe(1);
      expect(kept.after).toBe(0);

      // No listener got an event with its transaction open; none of the rolled-back one's (they
      // announced writes that never happened); after the COMMIT each once, in order.
      expect(seen.filter((e) => e.open)).toEqual([]);
      expect(seen.filter((e) => e.session === rolled.sessionId)).toEqual([]);
      {
        const own = seen.filter((e) => e.session === kept.sessionId);
        expect(own.slice(0, 2).map((e) => e.type)).toEqual(['session.created', 'run.started']);
        expect(new Set(own.map((e) => e.id)).size).toBe(own.length);
        expect(own.map((e) => e.id)).toEqual([...own.map((e) => e.id)].sort((x, y) => x - y));
        expect(own.filter((e) => e.type === 'run.started')).toHaveLength(1);
      }
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
