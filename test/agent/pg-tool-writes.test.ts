/**
 * A tool step's call and result on a PostgreSQL App (issue 18, item 6): each is one write (the
 * message row's insert or update; the event is appended by the bus, never in a store
 * transaction), so it goes out on its own, without BEGIN and COMMIT around it
 * (`transactions.together` in src/agent/run-stream.ts). The step's end is one statement too (the
 * messages, the usage, the run's row and its event: src/agent/step-close.ts), so it needs none.
 */
import { describe, expect, it } from 'vitest';
import type { SqlClient } from '../../src/store/postgres/client';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

describe.skipIf(!pg.available)('tool call and result writes on PostgreSQL', () => {
  it('STORE-PG-agent: the tool message writes and the step end run outside a transaction', async () => {
    const sql = await migratedDatabase(pg.cluster());
    // The message writes the store sends, with whether a transaction was open around each.
    const writes: { text: string; params: readonly unknown[]; inTransaction: boolean }[] = [];
    const watched: SqlClient = new Proxy(sql, {
      get(target, key, receiver) {
        if (key === 'one') {
          return (text: string, params: readonly unknown[] = []) => {
            if (/INSERT INTO messages|UPDATE messages/.test(text))
              writes.push({ text, params, inTransaction: target.inTransaction() });
            return target.one(text, params);
          };
        }
        const value = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const { app } = await agentApp([reply().toolCall('echo', { text: 'hi' }), reply().text('done')], {
      extraTools: [echoTool],
      postgres: watched,
    });
    try {
      const session = await app.sessions.create({ title: 'tool writes' });
      const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
      expect((await app.agent.wait(run_id)).status).toBe('completed');
      const messages = await app.sessions.messages(session.id);
      const tool = messages.find((m) => m.role === 'tool');
      const assistant = messages.find((m) => m.parts.some((p) => p.type === 'tool-call'));
      if (!tool || !assistant) throw new Error('no tool step recorded');
      // The inserts of the assistant message holding the call and of the tool result message.
      const inserts = writes.filter((w) => /INSERT INTO messages/.test(w.text));
      const insertOf = (id: string) => inserts.find((w) => w.params.includes(id));
      expect(insertOf(assistant.id)?.inTransaction).toBe(false);
      // The step's end (the messages finished, usage, the run's row and its event) is one
      // statement, all or nothing by itself: no transaction around it. Since p-pgtoolend the step's
      // only result (its tool message, inserted finished) is in it too.
      const finishing = writes.filter((w) => /UPDATE agent_runs/.test(w.text) && w.params.includes(tool.id));
      expect(finishing).toHaveLength(1);
      expect(insertOf(tool.id)).toBe(finishing[0]);
      expect(finishing[0]?.text).toMatch(/UPDATE messages/);
      expect(finishing[0]?.inTransaction).toBe(false);
    } finally {
      await app.close();
      await sql.close();
    }
  });
});
