/**
 * Reads a fresh compat session need not make on PostgreSQL (issue 18 item 6, p-pgfresh). Pinned:
 * - STORE-PG-130: a streamed compat request does not read its run's final message back (the text
 *   went out as it streamed); the answer, its finish reason and usage are as before, and a caller
 *   that asks for the run's result (or waits for it) still gets the text.
 */
import { describe, expect, it } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { migratedDatabase, postgresForFile, recordingClient } from '../helpers/postgres';
import { compatServer } from '../http/compat-helpers';

const pg = postgresForFile();

const MESSAGE_BY_ID = /FROM messages WHERE id = \$1/;

describe.skipIf(!pg.available)('reads a fresh compat session need not make (PostgreSQL)', () => {
  it('STORE-PG-130: a streamed compat request does not read its final message back; result and wait still answer the text', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const sent: string[] = [];
    const { app, client: openai } = await compatServer(
      [reply().text('warm'), reply().text('one'), reply().text('two')],
      { postgres: recordingClient(sql, sent) },
    );
    try {
      const ask = async () => {
        const stream = await openai.chat.completions.create({
          model: 'fake/m1',
          messages: [{ role: 'user', content: 'hello' }],
          stream: true,
          stream_options: { include_usage: true },
        });
        let text = '';
        let finish: string | null | undefined;
        let usage: unknown;
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta?.content ?? '';
          finish ??= chunk.choices[0]?.finish_reason;
          usage ??= chunk.usage ?? undefined;
        }
        return { text, finish, usage };
      };
      await ask();
      await app.bus.flush();
      sent.length = 0;
      const answer = await ask();
      expect(answer.text).toBe('one');
      expect(answer.finish).toBe('stop');
      expect(answer.usage).toMatchObject({
        prompt_tokens: expect.any(Number),
        total_tokens: expect.any(Number),
      });
      let [row] = (await app.compatRequests.list({ limit: 1 })).rows;
      for (let i = 0; i < 100 && row.status === 'running'; i++) {
        await new Promise((r) => setTimeout(r, 20));
        [row] = (await app.compatRequests.list({ limit: 1 })).rows;
      }
      await app.agent.waitIdle(row.session_id);
      expect(row).toMatchObject({ status: 'completed', finish_reason: 'stop' });
      expect(sent.filter((t) => MESSAGE_BY_ID.test(t))).toEqual([]);

      // Asked for, the result has its text (read now).
      expect((await app.agent.result(row.run_id)).text).toBe('one');
      // A caller waiting for a run gets its text too (the run's waiter is answered with it).
      const sentBefore = sent.length;
      const { run_id } = await app.agent.send({ sessionId: row.session_id, prompt: 'again' });
      expect((await app.agent.wait(run_id)).text).toBe('two');
      expect(sent.slice(sentBefore).filter((t) => MESSAGE_BY_ID.test(t))).toHaveLength(1);
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
