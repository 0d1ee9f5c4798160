/**
 * A compat request's start and finish on PostgreSQL send the texts kept for their shapes (issue 18
 * item 6, p-pgappend): the finish's statement (≈ 5.6 KB: the step end's `WITH`s, the run's UPDATE,
 * its event list, the compat row's end, the session events' call) and the start's (≈ 2.6 KB) were
 * built, flattened and hashed for their prepared names every request; now each shape's text is
 * made once a process. Pins: after two warm requests, three lone requests make no start or finish
 * text (`claimedTextsBuilt`, `finishTextsBuilt`), their starts and finishes go out as one text each
 * (their values their own), and each answers and settles as before.
 */
import { describe, expect, it } from 'vitest';
import { claimedTextsBuilt } from '../../src/runs/pg-run-create-repository';
import { finishTextsBuilt } from '../../src/runs/pg-run-update-event-repository';
import { reply } from '../helpers/fake-provider';
import { driverStatements, loggedEvents, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, LONE_REQUEST_LOG, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();
const FINISH = /UPDATE agent_runs SET status = /;
const START = /^WITH riding AS \(INSERT INTO sessions /;

describe.skipIf(!pg.available)('a compat request’s finish text on PostgreSQL, kept per shape', () => {
  it('STORE-PG-712: lone requests after warm ones make no start or finish text and send one text each, with their own values', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { app, client } = await compatServer(
      [
        reply().text('warm'),
        reply().text('warm again'),
        reply().text('one'),
        reply().text('two'),
        reply().text('three').usage(10, 2),
      ],
      { postgres: sql },
    );
    try {
      // Two warm requests: the process's first finish goes without the session events' call (its
      // own shape), the next ones with it.
      for (let i = 0; i < 2; i++) {
        await streamedAnswer(client);
        await settledCompatRow(app);
        await app.bus.flush();
      }
      const built = finishTextsBuilt();
      const started = claimedTextsBuilt();
      const statements = driverStatements();
      const answers: string[] = [];
      const rows: Awaited<ReturnType<typeof settledCompatRow>>[] = [];
      try {
        for (let i = 0; i < 3; i++) {
          answers.push(await streamedAnswer(client));
          rows.push(await settledCompatRow(app));
          await app.bus.flush();
        }
      } finally {
        statements.restore();
      }
      expect(answers).toEqual(['one', 'two', 'three']);
      // No finish text made for the three (on 4b2467a: one a request, and no count).
      expect(finishTextsBuilt() - built).toBe(0);
      const finishes = statements.calls.filter((call) => FINISH.test(call.text));
      expect(finishes).toHaveLength(3);
      expect(new Set(finishes.map((call) => call.text)).size).toBe(1);
      // Each with its own run's values.
      for (const [i, row] of rows.entries()) expect(finishes[i]?.values).toContain(row.run_id);
      // The starts likewise (the new session's INSERT, its run, events, prompt and session events).
      expect(claimedTextsBuilt() - started).toBe(0);
      const starts = statements.calls.filter((call) => START.test(call.text));
      expect(starts).toHaveLength(3);
      expect(new Set(starts.map((call) => call.text)).size).toBe(1);
      for (const [i, row] of rows.entries()) expect(starts[i]?.values).toContain(row.session_id);
      expect(new Set(rows.map((row) => row.run_id)).size).toBe(3);
      expect(rows.at(-1)).toMatchObject({ status: 'completed', prompt_tokens: 10, completion_tokens: 2 });
      // Each session's log the lone sequence (its answer's deltas as many as the model's chunks).
      const noDeltas = (types: string[]) => types.filter((type) => type !== 'message.delta');
      for (const row of rows) {
        expect(row.status).toBe('completed');
        const types = (await loggedEvents(sql, row.session_id)).map((e) => e.type);
        expect(noDeltas(types), row.session_id).toEqual(noDeltas(LONE_REQUEST_LOG));
        expect(types).toContain('message.delta');
      }
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
