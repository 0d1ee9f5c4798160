/**
 * A PostgreSQL service's first compat request after start-up (p-flake2 Left 1): its start is the
 * lone statement every later request's is, and its model request leaves after that statement's
 * answer. The run ledger's first-use recovery ran in the first start's transaction (its reads
 * joined it), so that start was BEGIN … COMMIT and its run's model request could leave before the
 * COMMIT was answered: a start lost at its COMMIT would have billed a model call (STORE-PG-310's
 * rule). The service recovers at start-up now (../../src/app/warm.ts), as the DBOS engine's did.
 */
import { describe, expect, it } from 'vitest';
import { warmService } from '../../src/app/warm';
import { reply } from '../helpers/fake-provider';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, settledCompatRow } from './compat-helpers';

const pg = postgresForFile();

describe.skipIf(!pg.available)('a PostgreSQL service’s first compat request', () => {
  it('STORE-PG-861: the first request after start-up starts with the lone statement, no transaction; the run’s recovery done at start-up', async () => {
    const sql = await migratedDatabase(pg.cluster());
    try {
      // The node's heartbeat runs the same recovery read every node_heartbeat_ms (3 s by default):
      // on a loaded box one fell inside the request's window. An hour apart, none does here.
      const { app, client } = await compatServer([reply().text('one')], {
        postgres: sql,
        extraConfig: { store: { node_heartbeat_ms: 3_600_000, node_stale_ms: 7_200_000 } },
      });
      await warmService(app);
      const statements = driverStatements();
      try {
        const answer = await client.chat.completions.create({
          model: 'fake/m1',
          messages: [{ role: 'user', content: 'hi' }],
        });
        expect(answer.choices[0]?.message.content).toBe('one');
        await settledCompatRow(app);
      } finally {
        statements.restore();
      }
      const sent = statements.sent.map((text) => text.trim());
      // The start's statement (the session, the run, its events: one statement) in no transaction.
      const start = sent.findIndex((text) => text.startsWith('WITH riding AS (INSERT INTO sessions'));
      expect(start).toBeGreaterThanOrEqual(0);
      const before = sent.slice(0, start);
      expect(before.filter((text) => text === 'BEGIN').length).toBe(
        before.filter((text) => text === 'COMMIT').length,
      );
      // The recovery's reads were made at start-up, not in the request.
      expect(
        sent.filter((text) => text.startsWith("SELECT * FROM agent_runs WHERE status = 'running'")),
      ).toEqual([]);
      expect(await settledCompatRow(app)).toMatchObject({ status: 'completed', finish_reason: 'stop' });
      await app.close();
    } finally {
      await sql.close();
    }
  });
});
