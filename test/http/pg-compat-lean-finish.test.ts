/**
 * A lone compat request's finish on PostgreSQL with nothing to patch (issue 18 item 6,
 * p-pgnopatch): the step end in it has no message to update (the assistant message is inserted
 * closed), so its text leaves out the patches' `WITH`s (`p`, `m`, `d`) and their 10 empty arrays.
 * The same rows stored and the same answer as before. Counted, never timed.
 */
import { describe, expect, it } from 'vitest';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { settledCompatRow, warmedJsonCompat } from './compat-helpers';

const pg = postgresForFile();
const FINISH = /^WITH q AS MATERIALIZED .*r AS \(UPDATE agent_runs /s;

describe.skipIf(!pg.available)('a lone compat request’s finish with nothing to patch (PostgreSQL)', () => {
  it('STORE-PG-912: a warm lone request’s finish binds 86 parameters (was 96), no patch `WITH`s nor empty arrays; one text for two requests; the answers, messages, run events and usage stored', async () => {
    const sql = await migratedDatabase(pg.cluster());
    try {
      const { app, ask } = await warmedJsonCompat(sql, ['one', 'two']);
      const answers: string[] = [];
      const finishes: { text: string; values?: unknown[] }[] = [];
      for (let i = 0; i < 2; i++) {
        const statements = driverStatements();
        try {
          answers.push((await ask()).choices[0]?.message.content ?? '');
          await settledCompatRow(app);
          await app.bus.flush();
        } finally {
          statements.restore();
        }
        finishes.push(...statements.calls.filter((call) => FINISH.test(call.text)));
      }
      expect(answers).toEqual(['one', 'two']);
      expect(finishes).toHaveLength(2);
      for (const finish of finishes) {
        expect(finish.values).toHaveLength(86);
        expect(finish.text).not.toMatch(/UPDATE messages x|unnest\(\$1::text\[\], \$2::text\[\]/);
        // No empty array sent (the patches' were the only ones).
        expect(finish.values?.filter((v) => Array.isArray(v) && v.length === 0)).toEqual([]);
      }
      expect(finishes[1]?.text).toBe(finishes[0]?.text);
      const rows = await sql.query<{ status: string; run_id: string; session_id: string }>(
        'SELECT status, run_id, session_id FROM openai_compat_requests ORDER BY created_at',
      );
      expect(rows.map((row) => row.status)).toEqual(['completed', 'completed', 'completed']);
      for (const [i, row] of rows.slice(1).entries()) {
        const messages = await sql.query<{
          role: string;
          parts: string;
          finished: boolean;
          usage: string | null;
        }>(
          `SELECT role, parts, finished_at IS NOT NULL AS finished, usage FROM messages
            WHERE session_id = $1 ORDER BY created_at, id`,
          [row.session_id],
        );
        expect(messages.map((m) => [m.role, m.finished])).toEqual([
          ['user', true],
          ['assistant', true],
        ]);
        expect(messages[1]?.parts).toContain(['one', 'two'][i]);
        const session = await sql.one<{ prompt_tokens: number | string; completion_tokens: number | string }>(
          'SELECT prompt_tokens, completion_tokens FROM sessions WHERE id = $1',
          [row.session_id],
        );
        expect([Number(session?.prompt_tokens), Number(session?.completion_tokens)]).toEqual([5, 1]);
        const events = await sql.query<{ type: string; seq: number | string }>(
          'SELECT type, seq FROM agent_run_events WHERE run_id = $1 ORDER BY seq',
          [row.run_id],
        );
        expect(events.map((e) => Number(e.seq))).toEqual(events.map((_, k) => k + 1));
        expect(events.map((e) => e.type).slice(-4)).toEqual([
          'phase',
          'step.finished',
          'run.finished',
          'openai_compat.response',
        ]);
      }
      await app.close();
    } finally {
      await sql.close();
    }
  });
});
