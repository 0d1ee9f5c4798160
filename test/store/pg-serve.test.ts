/**
 * An App served from PostgreSQL (issue 18): the agent runs a session end to end with every write
 * on the database, and nothing is written to SQLite (no svc.db in the data dir).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createIds, systemClock } from '../../src/util/ids';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { migratedDatabase, postgresForFile, twoNodes } from '../helpers/postgres';
import { tmpWorkspace } from '../helpers/tmp-workspace';

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
      expect(events.some((e) => e.type === 'tool.finished')).toBe(true);
      // Every write landed: no ledger, cost or event write failed on the way.
      const problems = app.memoryLog.records.filter((r) => r.level === 'warn' || r.level === 'error');
      expect(problems.map((r) => `${r.message}: ${JSON.stringify(r)}`)).toEqual([]);
      await app.close();
      expect(existsSync(join(app.dataDir, 'svc.db'))).toBe(false);
    } finally {
      await sql.close();
    }
  });
});

describe.skipIf(!pg.available)('two Apps served from one PostgreSQL database', () => {
  it('STORE-PG-61: two runs writing one workspace from two nodes are serialized by the workspace lease', async () => {
    const nodes = await twoNodes(pg.cluster());
    try {
      const workspace = tmpWorkspace();
      const provider = await fakeProvider([
        // Two new files: each write passes its own checks at once, so only the lease orders them
        // (one file for both would refuse the second write as never read, without waiting).
        reply().toolCall('write', { path: 'lease-one.txt', content: 'one\n' }),
        reply().toolCall('write', { path: 'lease-two.txt', content: 'two\n' }),
        reply().text('first done').slow(100),
        reply().text('second done').slow(100),
      ]);
      const config = {
        providers: { fake: { type: 'openai-compat', base_url: provider.url } },
        models: { large: 'fake/m1' },
      };
      const open = (sql: typeof nodes.sql, name: string) =>
        makeTestApp({
          workspace,
          dataDir: join(workspace, '.nodes', name),
          postgres: sql,
          clock: systemClock,
          ids: createIds(systemClock),
          config,
        });
      const a = await open(nodes.sql, 'a');
      const b = await open(nodes.other, 'b');
      const sa = await a.agent.createSession({});
      const sb = await b.agent.createSession({});
      const [ra, rb] = await Promise.all([
        a.agent.run({ sessionId: sa.id, prompt: 'write it', yolo: true }),
        b.agent.run({ sessionId: sb.id, prompt: 'write it', yolo: true }),
      ]);
      expect([ra.status, rb.status]).toEqual(['completed', 'completed']);
      const writes = await Promise.all(
        [ra, rb].map(async (r) => {
          const events = await a.runs.events(r.run_id);
          const tool = events.find((e) => e.type === 'tool.finished');
          expect((tool?.payload as { is_error?: boolean } | undefined)?.is_error).toBe(false);
          return { at: tool?.created_at, finished: (await a.runs.get(r.run_id))!.finished_at! };
        }),
      );
      writes.sort((x, y) => x.at! - y.at!);
      expect(writes[0]!.at).toBeDefined();
      expect(writes[1]!.at).toBeGreaterThanOrEqual(writes[0]!.finished);
      expect(readFileSync(join(workspace, 'lease-one.txt'), 'utf8')).toBe('one\n');
      expect(readFileSync(join(workspace, 'lease-two.txt'), 'utf8')).toBe('two\n');
      expect(await nodes.sql.query('SELECT * FROM workspace_leases')).toEqual([]);
      await provider.close();
    } finally {
      await nodes.close();
    }
  });
});
