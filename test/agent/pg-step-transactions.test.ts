/**
 * The agent's step transactions on a PostgreSQL App (issue 18): `app.store.transactions` is the
 * client's ambient transaction, and the events a step publishes inside it (tool.started, …) are
 * appended by the bus outside it, so each is stored once and delivered, even when the body ends
 * before the append starts.
 */
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/events/bus';
import { makeTestApp } from '../helpers/make-test-app';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

describe.skipIf(!pg.available)('step transactions on PostgreSQL', () => {
  it('STORE-PG-agent: events published inside a store transaction are stored and delivered, none lost', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const app = await makeTestApp({ postgres: sql });
    try {
      expect(app.store.kind).toBe('postgres');
      const session = await app.sessions.create({ title: 't' });
      await app.bus.flush();
      const delivered: SessionEvent[] = [];
      app.bus.subscribe(session.id, (event) => delivered.push(event));
      for (let i = 0; i < 5; i++) {
        await app.store.transactions.run(async () => {
          app.bus.publish(session.id, 'loop.detected', { n: i });
        });
        await app.bus.flush();
      }
      await app.store.transactions.run(async () => {
        app.bus.publish(session.id, 'loop.detected', { n: 5 });
        await sql.query('SELECT 1');
      });
      await app.bus.flush();
      const stored = await sql.query<{ payload: string }>(
        "SELECT payload FROM session_events WHERE session_id = $1 AND type = 'loop.detected' ORDER BY id",
        [session.id],
      );
      expect(stored.map((row) => JSON.parse(row.payload).n)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(delivered.map((event) => event.payload.n)).toEqual([0, 1, 2, 3, 4, 5]);
      expect(app.memoryLog.records.filter((r) => r.message === 'event listener failed')).toEqual([]);
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
