/**
 * A step's end on PostgreSQL in one statement (issue 18 item 6, p-pgstep): the session store's
 * `closeStep` writes the step's message updates and the session's usage as `updateMessage` and
 * `addUsage` write them, in one statement (src/sessions/pg-step-close-repository.ts), and the agent's step end
 * uses it (src/agent/step-close.ts). Pinned: the rows are the separate writes' (messages, search
 * rows, session usage), one statement is sent, a missing message fails as updateMessage's
 * not_found; a tool step on a PostgreSQL App sends one such statement a step and no separate
 * message or usage UPDATE, with the same rows and events in the same order.
 */
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../../src/events/bus';
import type { SessionStore } from '../../src/sessions/types';
import type { SqlClient } from '../../src/store/postgres/client';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { migratedDatabase, postgresForFile, recordingClient } from '../helpers/postgres';
import { appendStepMessages } from '../helpers/step-messages';

const pg = postgresForFile();

const tokens = { input_tokens: 120, output_tokens: 30, reasoning_tokens: 0, cached_input_tokens: 0 };

/** A session with a step's two messages as the recorder leaves them before the step's end. */
async function stepOf(sessions: SessionStore) {
  const session = await sessions.create({ title: 'step' });
  const { assistant, tool } = await appendStepMessages(sessions, session.id, null);
  return { session, assistant, tool };
}

/** The stored rows of a session's step, ids and the session's own id masked. */
async function rowsOf(sql: SqlClient, sessionId: string) {
  const session = await sql.one<Record<string, unknown>>(
    'SELECT prompt_tokens, completion_tokens, cost, updated_at FROM sessions WHERE id = $1',
    [sessionId],
  );
  const messages = await sql.query<Record<string, unknown>>(
    `SELECT role, parts, model, provider, usage, cost, created_at, updated_at, finished_at
       FROM messages WHERE session_id = $1 ORDER BY row_seq`,
    [sessionId],
  );
  const docs = await sql.query<Record<string, unknown>>(
    `SELECT d.role, d.tools, d.body, d.terms::text AS terms FROM message_search_docs d
       JOIN messages m ON m.id = d.message_id WHERE d.session_id = $1 ORDER BY m.row_seq`,
    [sessionId],
  );
  return { session, messages, docs };
}

describe.skipIf(!pg.available)('a step`s end in one statement on PostgreSQL', () => {
  it('STORE-PG-160: closeStep writes the rows updateMessage and addUsage write, in one statement', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const sent: string[] = [];
    const app = await makeTestApp({ postgres: recordingClient(sql, sent) });
    try {
      const { sessions } = app;
      if (!sessions.closeStep) throw new Error('the PostgreSQL session store has no closeStep');
      const usage = { input_tokens: 120, output_tokens: 30, cost: 0.25 };
      const finalParts = [
        { type: 'tool-result' as const, tool_call_id: 'c1', tool: 'echo', output: 'second', is_error: false },
      ];
      // Separately, as the step's end wrote them before.
      const apart = await stepOf(sessions);
      await sessions.updateMessage(apart.assistant.id, { usage: tokens, cost: 0.25, finished: true });
      await sessions.updateMessage(apart.tool.id, { parts: finalParts, finished: true });
      const added = await sessions.addUsage(apart.session.id, usage);
      // In one statement.
      const together = await stepOf(sessions);
      await app.bus.flush();
      sent.length = 0;
      const closed = await sessions.closeStep({
        sessionId: together.session.id,
        messages: [
          { id: together.assistant.id, patch: { usage: tokens, cost: 0.25, finished: true } },
          { id: together.tool.id, patch: { parts: finalParts, finished: true } },
        ],
        usage,
      });
      // The step's tables only: the App's own background statements (a start-up sweep of another
      // table, the bus's event appends) may land in this window.
      const writes = sent.filter((text) =>
        /\b(UPDATE|INSERT INTO)\s+(messages|message_search_docs|sessions)\b/.test(text),
      );
      expect(writes).toHaveLength(1);
      expect(writes[0]).toMatch(/UPDATE messages[\s\S]*UPDATE message_search_docs[\s\S]*UPDATE sessions/);
      expect(await rowsOf(sql, together.session.id)).toEqual(await rowsOf(sql, apart.session.id));
      const { id: _a, created_at: _b, ...closedRest } = closed ?? ({} as Record<string, unknown>);
      const { id: _c, created_at: _d, ...addedRest } = added ?? ({} as Record<string, unknown>);
      expect(closedRest).toEqual(addedRest);
      expect(closed?.prompt_tokens).toBe(120);
      // The messages as updateMessage answers them afterwards.
      expect((await sessions.getMessage(together.tool.id))?.parts).toEqual(finalParts);
      expect((await sessions.getMessage(together.assistant.id))?.usage).toEqual(tokens);

      // Messages only (a step without usage): no session row answered, the session untouched.
      const bare = await stepOf(sessions);
      const before = await rowsOf(sql, bare.session.id);
      expect(
        await sessions.closeStep({
          sessionId: bare.session.id,
          messages: [{ id: bare.assistant.id, patch: { finished: true } }],
        }),
      ).toBeUndefined();
      expect((await rowsOf(sql, bare.session.id)).session).toEqual(before.session);
      expect((await sessions.getMessage(bare.assistant.id))?.finished_at).not.toBeNull();
    } finally {
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-161: a missing message is updateMessage`s not_found; in a transaction nothing is written', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const app = await makeTestApp({ postgres: sql });
    try {
      const { sessions } = app;
      if (!sessions.closeStep) throw new Error('the PostgreSQL session store has no closeStep');
      const step = await stepOf(sessions);
      const before = await rowsOf(sql, step.session.id);
      const closing = app.store.transactions.run(() =>
        (sessions.closeStep as NonNullable<SessionStore['closeStep']>)({
          sessionId: step.session.id,
          messages: [
            { id: step.assistant.id, patch: { usage: tokens, cost: 1, finished: true } },
            { id: 'msg_gone', patch: { finished: true } },
          ],
          usage: { input_tokens: 1, output_tokens: 1, cost: 1 },
        }),
      );
      await expect(closing).rejects.toMatchObject({
        code: 'not_found',
        message: 'message_id: no message "msg_gone"',
      });
      expect(await rowsOf(sql, step.session.id)).toEqual(before);
    } finally {
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-162: a tool step`s end sends its messages and usage as one statement; rows and events as before', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const sent: string[] = [];
    const { app, events } = await agentApp(
      [reply().toolCall('echo', { text: 'hi' }).usage(100, 20), reply().text('done').usage(130, 10)],
      { extraTools: [echoTool], postgres: recordingClient(sql, sent) },
    );
    try {
      const session = await app.sessions.create({ title: 'step end' });
      const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
      expect((await app.agent.wait(run_id)).status).toBe('completed');
      await app.bus.flush();
      // Two steps: each end is one closeStep statement; no message or usage UPDATE of its own.
      expect(
        sent.filter((t) => /unnest\(/.test(t) && /UPDATE sessions SET prompt_tokens/.test(t)),
      ).toHaveLength(2);
      expect(sent.filter((t) => /^UPDATE sessions SET prompt_tokens/.test(t))).toEqual([]);
      expect(sent.filter((t) => /^WITH m AS \(UPDATE messages/.test(t))).toEqual([]);
      // The rows: every message finished, the assistant's usage, the session's totals.
      const messages = await app.sessions.messages(session.id);
      expect(messages.map((m) => [m.role, m.finished_at !== null])).toEqual([
        ['user', true],
        ['assistant', true],
        ['tool', true],
        ['assistant', true],
      ]);
      expect(messages[1].usage).toMatchObject({ input_tokens: 100, output_tokens: 20 });
      expect(messages[3].usage).toMatchObject({ input_tokens: 130, output_tokens: 10 });
      expect(messages[2].parts).toMatchObject([{ type: 'tool-result', tool_call_id: expect.any(String) }]);
      const stored = await app.sessions.require(session.id);
      expect([stored.prompt_tokens, stored.completion_tokens]).toEqual([230, 30]);
      // The events: each step's completions (message order), then its context gauge.
      const ends = (events as SessionEvent[])
        .filter((e) => e.session_id === session.id)
        .filter((e) => e.type === 'message.completed' || e.type === 'context.usage')
        .map((e) => (e.type === 'message.completed' ? `completed ${e.payload.message_id}` : e.type));
      expect(ends).toEqual([
        `completed ${messages[0].id}`, // the prompt's, at the send
        `completed ${messages[1].id}`,
        `completed ${messages[2].id}`,
        'context.usage',
        `completed ${messages[3].id}`,
        'context.usage',
      ]);
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
