/**
 * A compat request with pending tool calls whose run finishes inside `drain` (issue 18 item 6,
 * p-pgsingle Left 4, p-pgcost). Such a start runs the calls, then starts its queued run with
 * `drain`, which does not wait for the run: with a provider that answers fast (or a late turn
 * under load) the run can finish before `prepare` goes on. Its row and the row's end in the run's
 * finish were written and registered after `drain`, so that finish found nothing to carry and the
 * answer ended the row with a statement of its own. Now both come before `drain`. Forced here:
 * `drain` answers only once the run has finished.
 */
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { reply } from '../helpers/fake-provider';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, expectRowEndInFinish, settledCompatRow } from './compat-helpers';

const pg = postgresForFile();

/** The next `drain` answers once the run it started has finished. */
function finishInDrain(app: App): { finishedFirst: () => boolean } {
  const original = app.agent.drain;
  let first = false;
  app.agent.drain = async (sessionId: string) => {
    app.agent.drain = original;
    const runId = await original.call(app.agent, sessionId);
    if (runId) first = (await app.agent.wait(runId)).status === 'completed';
    return runId;
  };
  return { finishedFirst: () => first };
}

const pendingAsk = (stream: boolean) => ({
  model: 'fake/m1',
  stream,
  messages: [
    { role: 'user' as const, content: 'Read a.txt' },
    {
      role: 'assistant' as const,
      content: null,
      tool_calls: [
        { id: 'c1', type: 'function' as const, function: { name: 'view', arguments: '{"path":"a.txt"}' } },
      ],
    },
  ],
});

describe.skipIf(!pg.available)(
  'a compat request with pending tool calls whose run finishes in drain, on PostgreSQL',
  () => {
    for (const [id, stream] of [
      ['STORE-PG-840', true],
      ['STORE-PG-841', false],
    ] as const) {
      it(`${id}: ${stream ? 'streamed' : 'not streamed'}: the row’s end in the run’s finish statement, no statement of its own; one \`openai_compat.response\``, async () => {
        const sql = await migratedDatabase(pg.cluster());
        try {
          const { app, client } = await compatServer(
            [reply().text('warm'), reply().text('It says hello.').usage(9, 4)],
            { postgres: sql, files: { 'a.txt': 'hello\n' } },
          );
          await client.chat.completions.create({
            model: 'fake/m1',
            messages: [{ role: 'user', content: 'hi' }],
          });
          await settledCompatRow(app);
          await app.bus.flush();
          const forced = finishInDrain(app);
          const statements = driverStatements();
          let text = '';
          try {
            if (stream) {
              const answer = await client.chat.completions.create({ ...pendingAsk(true), stream: true });
              for await (const chunk of answer) text += chunk.choices[0]?.delta?.content ?? '';
            } else {
              const answer = await client.chat.completions.create({ ...pendingAsk(false), stream: false });
              text = answer.choices[0]?.message.content ?? '';
            }
            await settledCompatRow(app);
            await app.bus.flush();
          } finally {
            statements.restore();
          }
          expect(forced.finishedFirst()).toBe(true);
          expect(text).toBe('It says hello.');
          await expectRowEndInFinish(app, statements.sent, {
            status: 'completed',
            finish_reason: 'stop',
            prompt_tokens: 9,
            completion_tokens: 4,
            stream,
          });
          await app.close();
        } finally {
          await sql.close();
        }
      });
    }
  },
);
