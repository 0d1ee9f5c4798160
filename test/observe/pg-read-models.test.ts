/**
 * The read models on a PostgreSQL App (issue 18): the journal reads the session event log and the
 * conversation through the App's store (`app.observe.queries`), never the SQLite handle, and
 * answers what it answers on SQLite for the same session history.
 */
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { journalPosture } from '../../src/observe/journal';
import { makeTestApp } from '../helpers/make-test-app';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

async function journalOf(app: App) {
  const session = await app.sessions.create({ title: 't' });
  app.bus.publish(session.id, 'loop.detected', {
    session_id: session.id,
    run_id: 'r1',
    tool: 'echo',
    repeats: 3,
  });
  app.bus.publish(session.id, 'compaction.started', { session_id: session.id, reason: 'window' });
  await app.bus.flush();
  const posture = await journalPosture(app, { session_id: session.id });
  const { generated_at: _at, span, ...rest } = posture;
  return { ...rest, span: { first: typeof span.first_at, last: typeof span.last_at } };
}

describe.skipIf(!pg.available)('read models on a PostgreSQL App', () => {
  it('STORE-PG-obs: the journal posture reads the event log from PostgreSQL, as on SQLite', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const onPg = await makeTestApp({ postgres: sql });
    const onSqlite = await makeTestApp();
    try {
      const expected = await journalOf(onSqlite);
      expect(expected.available).toBe(true);
      expect(expected.session?.entries).toBeGreaterThan(0);
      const actual = await journalOf(onPg);
      expect(onPg.hasDb()).toBe(false);
      expect(actual).toEqual(expected);
    } finally {
      await onPg.close();
      await onSqlite.close();
      await sql.close();
    }
  });
});
