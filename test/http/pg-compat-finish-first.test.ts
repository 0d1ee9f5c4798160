/**
 * A compat request whose run finishes before its answer begins (issue 18 item 6, p-pgsingle). On
 * PostgreSQL a lone start commits by itself and the model request goes out at once: with a provider
 * that answers fast and the request's own turn late (load), the run's finish can come before
 * `prepare` returns. The row's end in that finish (`finishInRunFinish`) was registered only when
 * the answer began, so such a finish ended the run alone and the answer wrote the row's end and its
 * `openai_compat.response` in a statement of its own after it: STORE-PG-650's third event INSERT
 * (2 in 13 under load). Now `prepare` registers it with the run's id. Forced here: the start's
 * transaction call answers only once the run has finished.
 */
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { reply } from '../helpers/fake-provider';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, expectRowEndInFinish, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();

/** The next compat start's transaction answers once its run has finished (its `run.finished` published). */
function finishFirst(app: App): { finishedFirst: () => boolean } {
  const transactions = app.store.transactions;
  const original = transactions.runWith;
  let first = false;
  transactions.runWith = async <T>(...args: Parameters<typeof original<T>>): Promise<T> => {
    transactions.runWith = original;
    const runId = await original(...args);
    if (typeof runId === 'string') {
      const done = await app.agent.wait(runId);
      first = done.status === 'completed';
    }
    return runId;
  };
  return { finishedFirst: () => first };
}

describe.skipIf(!pg.available)(
  'a compat request whose run finishes before its answer begins, on PostgreSQL',
  () => {
    it('STORE-PG-800: streamed: the row’s end in the run’s finish statement, no statement of its own after; one `openai_compat.response`; the answer whole', async () => {
      const sql = await migratedDatabase(pg.cluster());
      try {
        const { app, client } = await compatServer([reply().text('warm'), reply().text('one').usage(10, 2)], {
          postgres: sql,
        });
        await streamedAnswer(client);
        await settledCompatRow(app);
        await app.bus.flush();
        const forced = finishFirst(app);
        const statements = driverStatements();
        let answer: string;
        try {
          answer = await streamedAnswer(client);
          await settledCompatRow(app);
          await app.bus.flush();
        } finally {
          statements.restore();
        }
        expect(forced.finishedFirst()).toBe(true);
        expect(answer).toBe('one');
        await expectRowEndInFinish(app, statements.sent, {
          status: 'completed',
          finish_reason: 'stop',
          prompt_tokens: 10,
          completion_tokens: 2,
        });
        await app.close();
      } finally {
        await sql.close();
      }
    });

    it('STORE-PG-801: not streamed: the row’s end in the run’s finish statement; the JSON answer whole', async () => {
      const sql = await migratedDatabase(pg.cluster());
      try {
        const { app, client } = await compatServer([reply().text('warm'), reply().text('two').usage(7, 3)], {
          postgres: sql,
        });
        await client.chat.completions.create({
          model: 'fake/m1',
          messages: [{ role: 'user', content: 'hi' }],
        });
        await settledCompatRow(app);
        await app.bus.flush();
        const forced = finishFirst(app);
        const statements = driverStatements();
        let text: string | null | undefined;
        try {
          const answer = await client.chat.completions.create({
            model: 'fake/m1',
            messages: [{ role: 'user', content: 'hi' }],
          });
          text = answer.choices[0]?.message.content;
          await settledCompatRow(app);
          await app.bus.flush();
        } finally {
          statements.restore();
        }
        expect(forced.finishedFirst()).toBe(true);
        expect(text).toBe('two');
        await expectRowEndInFinish(app, statements.sent, {
          status: 'completed',
          finish_reason: 'stop',
          prompt_tokens: 7,
          completion_tokens: 3,
        });
        await app.close();
      } finally {
        await sql.close();
      }
    });
  },
);
