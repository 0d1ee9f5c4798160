/**
 * An App served from PostgreSQL (issue 18): the agent runs a session end to end with every write
 * on the database, and nothing is written to SQLite (no svc.db in the data dir).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

describe.skipIf(!pg.available)('an App served from PostgreSQL', () => {
  it('STORE-PG-60: an agent run on PostgreSQL: session, messages, run, events; no svc.db', async () => {
    const sql = await migratedDatabase(pg.cluster());
    try {
      const { app, events } = await agentApp(
        [reply().toolCall('echo', { text: 'hi' }), reply().text('done')],
        { postgres: sql, extraTools: [echoTool] },
      );
      const run = await app.agent.run({ prompt: 'say hi', yolo: true });
      expect(run.status).toBe('completed');
      const messages = await sql.query<{ role: string }>(
        'SELECT role FROM messages WHERE session_id = $1 ORDER BY created_at',
        [run.session_id],
      );
      expect(messages.map((m) => m.role)).toContain('assistant');
      expect(events.some((e) => e.type === 'tool.completed' || e.type.startsWith('tool'))).toBe(true);
      await app.close();
      expect(existsSync(join(app.dataDir, 'svc.db'))).toBe(false);
    } finally {
      await sql.close();
    }
  });
});
