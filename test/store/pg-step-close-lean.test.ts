/**
 * A step end with no message to patch on PostgreSQL (issue 18 item 6, p-pgnopatch): `closeStepWrite`
 * hands over `WITH`s without the patches' (`p`, `m`, `d`) and parameters without their 10 arrays,
 * every other parameter numbered 10 lower. Its write stores what `closeStep`'s full text stores for
 * the same usage on a twin session (with a message to patch) and answers the same session row. The
 * standalone `closeStep` with no
 * message (a usage-only step end: a run handed over at a clean stop, p-gatearg) sends the lean text
 * too, and stores and answers what `addUsage` does; with a message it still sends the full text.
 */
import { describe, expect, it } from 'vitest';
import type { SqlClient } from '../../src/store/postgres/client';
import { makeTestApp } from '../helpers/make-test-app';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { appendStepMessages } from '../helpers/step-messages';

const pg = postgresForFile();

const sessionRow = (sql: SqlClient, id: string) =>
  sql.one<Record<string, unknown>>(
    'SELECT prompt_tokens, completion_tokens, cost, updated_at FROM sessions WHERE id = $1',
    [id],
  );

describe.skipIf(!pg.available)('a step end with nothing to patch on PostgreSQL', () => {
  it('STORE-PG-913: closeStepWrite without messages binds 6 parameters (was 16), no patch `WITH`s; it stores and answers what the full statement does', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const app = await makeTestApp({ postgres: sql });
    try {
      const { sessions } = app;
      if (!sessions.closeStepWrite || !sessions.closeStep) throw new Error('no PostgreSQL step end');
      const usage = { input_tokens: 120, output_tokens: 30, cost: 0.25 };
      const lean = await sessions.create({ title: 'step' });
      const full = await sessions.create({ title: 'step' });
      const write = sessions.closeStepWrite({ sessionId: lean.id, messages: [], usage });
      expect(write.values).toHaveLength(6);
      expect(write.ready).toBe('true');
      const go = '(SELECT go FROM g)';
      const text = `WITH g AS (SELECT (${write.ready}) AS go), ${write.ctes(go)}
        SELECT (${write.answer(go)}) AS answer`;
      expect(text).not.toMatch(/UPDATE messages|message_search_docs|\$(?:[7-9]|\d\d)\b/);
      const row = await sql.one<{ answer: unknown }>(text, [...write.values]);
      const answered = write.read(row?.answer);
      // The full text: since p-gatearg a `closeStep` without messages is lean too.
      const { assistant } = await appendStepMessages(sessions, full.id, null);
      const closed = await sessions.closeStep({
        sessionId: full.id,
        messages: [{ id: assistant.id, patch: { finished: true } }],
        usage,
      });
      expect(await sessionRow(sql, lean.id)).toEqual(await sessionRow(sql, full.id));
      expect(await sessionRow(sql, lean.id)).toMatchObject({ prompt_tokens: 120, completion_tokens: 30 });
      const { id: _a, title: _b, ...leanAnswer } = answered ?? ({} as Record<string, unknown>);
      const { id: _c, title: _d, ...fullAnswer } = closed ?? ({} as Record<string, unknown>);
      expect(leanAnswer).toEqual(fullAnswer);
      expect(answered?.id).toBe(lean.id);
    } finally {
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-914: closeStep without messages (a usage-only step end) binds 6 parameters (was 16), no patch `WITH`s; it stores and answers what addUsage does; with a message, the full text (16)', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const app = await makeTestApp({ postgres: sql });
    try {
      const { sessions } = app;
      if (!sessions.closeStep) throw new Error('no PostgreSQL step end');
      const usage = { input_tokens: 120, output_tokens: 30, cost: 0.25 };
      const lean = await sessions.create({ title: 'step' });
      const apart = await sessions.create({ title: 'step' });
      const patched = await sessions.create({ title: 'step' });
      const { assistant } = await appendStepMessages(sessions, patched.id, null);
      await app.bus.flush();
      const added = await sessions.addUsage(apart.id, usage);
      const statements = driverStatements();
      let closed: Awaited<ReturnType<typeof sessions.closeStep>>;
      try {
        closed = await sessions.closeStep({ sessionId: lean.id, messages: [], usage });
        await sessions.closeStep({
          sessionId: patched.id,
          messages: [{ id: assistant.id, patch: { finished: true } }],
          usage,
        });
      } finally {
        statements.restore();
      }
      const ends = statements.calls.filter((call) => /prompt_tokens = prompt_tokens \+/.test(call.text));
      expect(ends).toHaveLength(2);
      const [leanEnd, fullEnd] = ends;
      expect(leanEnd?.values).toHaveLength(6);
      expect(leanEnd?.text).not.toMatch(/UPDATE messages|message_search_docs|unnest|\$(?:[7-9]|\d\d)\b/);
      expect(leanEnd?.values?.filter((v) => Array.isArray(v))).toEqual([]);
      expect(fullEnd?.values).toHaveLength(16);
      expect(fullEnd?.text).toMatch(/UPDATE messages x/);
      // The lean statement stores what addUsage stores, and answers its session row.
      expect(await sessionRow(sql, lean.id)).toEqual(await sessionRow(sql, apart.id));
      expect(await sessionRow(sql, lean.id)).toMatchObject({ prompt_tokens: 120, completion_tokens: 30 });
      const { id: _a, title: _b, ...leanAnswer } = closed ?? ({} as Record<string, unknown>);
      const { id: _c, title: _d, ...addedAnswer } = added ?? ({} as Record<string, unknown>);
      expect(leanAnswer).toEqual(addedAnswer);
      expect(closed?.id).toBe(lean.id);
      // The full text still patches the message and adds the usage.
      const message = await sql.one<{ finished: boolean }>(
        'SELECT finished_at IS NOT NULL AS finished FROM messages WHERE id = $1',
        [assistant.id],
      );
      expect(message?.finished).toBe(true);
      expect(await sessionRow(sql, patched.id)).toMatchObject({ prompt_tokens: 120, completion_tokens: 30 });
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
