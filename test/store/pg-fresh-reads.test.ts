/**
 * Reads a fresh compat session need not make on PostgreSQL (issue 18 item 6, p-pgfresh). Pinned:
 * - STORE-PG-130: a streamed compat request does not read its run's final message back (the text
 *   went out as it streamed); the answer, its finish reason and usage are as before, and a caller
 *   that asks for the run's result (or waits for it) still gets the text.
 * - STORE-PG-131: a run reads its history in the statement that appends its prompt: a streamed
 *   compat request sends no `messages WHERE session_id` read, and the model is asked with the
 *   imported history and the prompt in order, the list another node reads.
 * - STORE-PG-132: that statement's history is the list `messages()` answers right after it: the
 *   stored messages in `created_at, row_seq` order (one stamped later than the prompt included),
 *   the prompt last among equals; a session that does not exist is not_found, as `appendMessage`.
 * - STORE-PG-133: every write of this process to a session's messages (append, update, delete,
 *   the session's delete) moves the version the run checks before it uses that history.
 */
import { describe, expect, it } from 'vitest';
import { messagesVersion } from '../../src/sessions/pg-session-rows';
import { createPostgresSessionStore } from '../../src/sessions/pg-session-store';
import { createSequentialIds } from '../../src/util/ids';
import { reply } from '../helpers/fake-provider';
import { migratedDatabase, postgresForFile, recordingClient, twoNodes } from '../helpers/postgres';
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
      for (let i = 0; i < 500 && row.status === 'running'; i++) {
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

  it('STORE-PG-131: a compat run reads its history with its prompt`s append: no messages read by session, the model gets the imported history in order', async () => {
    const nodes = await twoNodes(pg.cluster());
    const sent: string[] = [];
    const {
      app,
      client: openai,
      provider,
    } = await compatServer([reply().text('warm'), reply().text('fine')], {
      postgres: recordingClient(nodes.sql, sent),
    });
    try {
      const ask = async (messages: { role: 'system' | 'user' | 'assistant'; content: string }[]) => {
        const stream = await openai.chat.completions.create({ model: 'fake/m1', messages, stream: true });
        let text = '';
        for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
        return text;
      };
      await ask([{ role: 'user', content: 'hello' }]);
      await app.bus.flush();
      sent.length = 0;
      const text = await ask([
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'first answer' },
        { role: 'user', content: 'second question' },
      ]);
      expect(text).toBe('fine');
      let [row] = (await app.compatRequests.list({ limit: 1 })).rows;
      for (let i = 0; i < 500 && row.status === 'running'; i++) {
        await new Promise((r) => setTimeout(r, 20));
        [row] = (await app.compatRequests.list({ limit: 1 })).rows;
      }
      await app.agent.waitIdle(row.session_id);
      expect(sent.filter((t) => /FROM messages WHERE session_id/.test(t))).toEqual([]);
      // The model was asked with the history and the prompt, in order (the system prompt aside).
      const asked = provider.requests.at(-1)?.body.messages as { role: string; content: unknown }[];
      const conversation = asked
        .filter((m) => m.role !== 'system')
        .map((m) => ({ role: m.role, text: JSON.stringify(m.content) }));
      expect(conversation.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
      expect(conversation[0].text).toContain('first question');
      expect(conversation[1].text).toContain('first answer');
      expect(conversation[2].text).toContain('second question');
      // Another node reads the same conversation, the run's answer after it.
      const other = createPostgresSessionStore({
        sql: nodes.other,
        clock: { now: () => Date.now() },
        ids: createSequentialIds(),
        workspace: '/w',
      });
      const stored = await other.messages(row.session_id);
      expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
      expect(stored.map((m) => m.id)).toEqual((await app.sessions.messages(row.session_id)).map((m) => m.id));
    } finally {
      await app.close();
      await nodes.close();
    }
  });

  it('STORE-PG-132: the append`s history is what messages() answers after it, in created_at, row_seq order', async () => {
    const sql = await migratedDatabase(pg.cluster());
    let now = 10_000;
    const store = createPostgresSessionStore({
      sql,
      clock: { now: () => now },
      ids: createSequentialIds(),
      workspace: '/w',
    });
    try {
      const append = store.appendWithMessages;
      expect(append).toBeDefined();
      if (!append) return;
      const session = await store.create({ title: 't' });
      const text = (t: string) => [{ type: 'text' as const, text: t }];
      await store.appendMessage({ session_id: session.id, role: 'user', parts: text('a'), finished: true });
      now = 30_000; // a message stamped later than the prompt below (another node's clock)
      await store.appendMessage({
        session_id: session.id,
        role: 'assistant',
        parts: text('late'),
        usage: { input_tokens: 1, output_tokens: 2 },
        cost: 0.25,
        model: 'm',
        provider: 'p',
      });
      now = 20_000;
      await store.appendMessage({ session_id: session.id, role: 'user', parts: text('b'), finished: false });
      const appended = await append({
        session_id: session.id,
        role: 'user',
        parts: text('prompt'),
        run_id: 'run_1',
      });
      const read = await store.messages(session.id);
      expect(appended.messages).toEqual(read);
      expect(read.map((m) => m.parts)).toEqual([text('a'), text('b'), text('prompt'), text('late')]);
      expect(appended.message).toEqual(read[2]);
      // A missing session: not_found, nothing written.
      await expect(append({ session_id: 'ses_missing', role: 'user', parts: text('x') })).rejects.toThrow(
        /no session "ses_missing"/,
      );
    } finally {
      await sql.close();
    }
  });

  it('STORE-PG-133: every write of this process to a session`s messages moves its version; a read does not', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const store = createPostgresSessionStore({
      sql,
      clock: { now: () => Date.now() },
      ids: createSequentialIds(),
      workspace: '/w',
    });
    try {
      const session = await store.create({ title: 't' });
      const other = await store.create({ title: 'other' });
      const text = (t: string) => [{ type: 'text' as const, text: t }];
      let at = messagesVersion(session.id);
      const moved = () => {
        const now = messagesVersion(session.id);
        const changed = now !== at;
        at = now;
        return changed;
      };
      const message = await store.appendMessage({ session_id: session.id, role: 'user', parts: text('a') });
      expect(moved()).toBe(true);
      await store.messages(session.id);
      await store.getMessage(message.id);
      await store.appendMessage({ session_id: other.id, role: 'user', parts: text('b') });
      expect(moved()).toBe(false);
      await store.updateMessage(message.id, { parts: text('a2') });
      expect(moved()).toBe(true);
      await store.deleteMessage(message.id);
      expect(moved()).toBe(true);
      await store.appendWithMessages?.({ session_id: session.id, role: 'user', parts: text('c') });
      expect(moved()).toBe(true);
      await store.delete(session.id);
      expect(moved()).toBe(true);
    } finally {
      await sql.close();
    }
  });
});
