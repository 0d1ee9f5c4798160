/**
 * A compat request's ledger on a PostgreSQL App (issue 18 item 6, p-pg9): the request row's insert
 * and finish are each one statement with their run event (`RunLedger.appendAlongside`), with no
 * read of the run before the response event; the run's events are those main records on
 * PostgreSQL, in the same order (SQLite's: test/http/compat-run-ledger.test.ts), and the row ends
 * completed with the usage.
 */
import { describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { migratedDatabase, postgresForFile, recordingClient } from '../helpers/postgres';
import { compatServer, PG_LONE_RUN_EVENTS, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();

describe.skipIf(!pg.available)('a compat request’s ledger on PostgreSQL', () => {
  it('STORE-PG-114: the row`s insert rides in its run’s claim, its finish in its run’s finish (STORE-PG-440), each with its event; the events and the row as on SQLite', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const sent: string[] = [];
    const { app, client } = await compatServer([reply().text('warm'), reply().text('one').usage(10, 2)], {
      postgres: recordingClient(sql, sent),
    });
    try {
      // Streamed, as the bench's requests (a JSON answer waits for its run: a read of the run).
      const ask = () => streamedAnswer(client);
      await ask();
      await app.bus.flush();
      sent.length = 0;
      expect(await ask()).toBe('one');
      // The finish may be written after the answer's last chunk: wait for the row's end.
      const row = await settledCompatRow(app);
      const during = [...sent];
      expect(row).toMatchObject({ status: 'completed', prompt_tokens: 10, completion_tokens: 2 });
      const compatWrites = during.filter((t) => /openai_compat_requests/.test(t) && !t.startsWith('SELECT'));
      // The insert rides in the run's claim (p-pgstart), since p-pgclaimed in a new session's run's
      // INSERT (inserted claimed); the finish with its event in the run's finish (p-pgcompat6,
      // STORE-PG-440; was a statement of its own after it).
      expect(
        compatWrites.map((t) =>
          /INSERT INTO agent_runs .*alongside AS \(INSERT /s.test(t)
            ? 'CLAIM'
            : /^WITH q AS MATERIALIZED .*r AS \(UPDATE agent_runs .*alongside AS \(UPDATE openai_compat_requests /s.test(
                  t,
                )
              ? 'RUN FINISH'
              : /^WITH alongside AS \((INSERT|UPDATE) /.exec(t)?.[1],
        ),
      ).toEqual(['CLAIM', 'RUN FINISH']);
      expect(during.filter((t) => t === 'SELECT * FROM agent_runs WHERE id = $1')).toEqual([]);

      const run = await app.runs.get(row.run_id);
      expect(run).toMatchObject({ status: 'completed', origin: 'openai_compat', steps: 1 });
      const events = await app.runs.events(row.run_id);
      expect(events.map((e) => [e.seq, e.type])).toEqual(PG_LONE_RUN_EVENTS);
      expect(events.at(-1)?.payload).toMatchObject({ request_id: row.request_id, status: 'completed' });
      expect(events.find((e) => e.type === 'openai_compat.request')?.payload).toMatchObject({
        request_id: row.request_id,
        model: 'fake/m1',
      });
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
