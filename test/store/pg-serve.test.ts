/**
 * An App served from PostgreSQL (issue 18): the agent runs a session end to end with every write
 * on the database, and nothing is written to SQLite (no svc.db in the data dir); workflows (a DAG,
 * a worktree override, a team task) run and record their rows there too.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { createIds, systemClock } from '../../src/util/ids';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { migratedDatabase, postgresForFile, twoNodes } from '../helpers/postgres';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { afterTool, lastToolResult, promptOf, router } from '../workflow/helpers';

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

  it('STORE-PG-62: a DAG, a worktree override and a team task run on PostgreSQL; their rows are there; no svc.db', async () => {
    const sql = await migratedDatabase(pg.cluster());
    try {
      const dag = {
        title: 'pair',
        tasks: [
          { id: 'a', prompt: 'Task A: count' },
          { id: 'b', prompt: 'Task B: sum {{ tasks.a.output }}', depends_on: ['a'] },
        ],
      };
      const { app } = await agentApp(
        router(11, (request) => {
          const prompt = promptOf(request);
          if (prompt.includes('Answer with a JSON object only'))
            return reply().text(JSON.stringify({ assignments: [{ member: 'scout', task: 'Look around' }] }));
          if (prompt.startsWith('Dig deep.')) return reply().text('found it');
          if (prompt.includes('The members reported:')) return reply().text('Team done.');
          if (prompt.startsWith('Task A')) return reply().text('three');
          if (prompt.startsWith('Task B')) return reply().text('summed three');
          if (prompt.startsWith('Write it')) {
            return afterTool(request)
              ? reply().text('wrote it')
              : reply().toolCall('write', { path: 'wt.txt', content: 'from the worktree\n' });
          }
          if (afterTool(request)) return reply().text(`parent saw: ${lastToolResult(request).slice(0, 30)}`);
          return prompt === 'run the dag'
            ? reply().toolCall('execute_dag', dag)
            : reply().toolCall('spawn_worktree_override', { prompt: 'Write it', description: 'pg work' });
        }),
        {
          postgres: sql,
          git: true,
          files: { 'a.txt': 'original\n' },
          extraConfig: { permissions: { allowed_tools: ['execute_dag', 'spawn_worktree_override'] } },
        },
      );
      const dagParent = await app.agent.run({ prompt: 'run the dag', yolo: true });
      expect(dagParent.text).toMatch(/^parent saw: /);
      const [row] = await app.workflows.runs.list({ kind: 'dag' });
      expect(row).toMatchObject({ name: 'pair', status: 'completed' });
      expect(row.result.finished_order).toEqual(['a', 'b']);
      expect(await sql.query('SELECT id, status FROM workflow_runs')).toEqual([
        { id: row.id, status: 'completed' },
      ]);

      const wtParent = await app.agent.run({ prompt: 'work in a worktree', yolo: true });
      expect(wtParent.status).toBe('completed');
      const [override] = await app.workflows.worktrees.list();
      expect(override).toMatchObject({ status: 'removed', files_changed: 1 });
      expect(
        execFileSync('git', ['show', `${override.branch}:wt.txt`], { cwd: app.workspace, encoding: 'utf8' }),
      ).toBe('from the worktree\n');
      // The worktree's own workspace recorded its file change on PostgreSQL too.
      expect(
        await sql.query<{ path: string }>('SELECT path FROM file_history WHERE session_id = $1', [
          override.child_session_id,
        ]),
      ).toHaveLength(1);

      // A team's task: the team and its workflow run are PostgreSQL rows.
      const team = (await invokeTool(
        app,
        'create_team',
        {
          name: 'crew',
          members: [{ name: 'scout', agent: 'explore', instructions: 'Dig deep.' }],
          task: 'Survey the code',
        },
        { surface: 'cli' },
      )) as { task: { status: string; answer: string } };
      expect(team.task).toMatchObject({ status: 'completed', answer: 'Team done.' });
      expect(await sql.query('SELECT name FROM teams')).toEqual([{ name: 'crew' }]);
      expect((await app.workflows.runs.list({ kind: 'team' })).map((run) => run.status)).toEqual([
        'completed',
      ]);
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
      // Each run writes its own new file (each write passes its own checks at once, so only the
      // lease orders them; one file for both would refuse the second write as never read,
      // without waiting), then answers slowly. The model answers by what it is asked.
      const step = (request: { body: any }) => {
        const who = JSON.stringify(request.body).includes('writer one') ? 'one' : 'two';
        const answered = (request.body.messages as any[]).some((m) => m.role === 'tool');
        return answered
          ? reply().text(`${who} done`).slow(100)
          : reply().toolCall('write', { path: `lease-${who}.txt`, content: `${who}\n` });
      };
      const provider = await fakeProvider([step, step, step, step]);
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
        a.agent.run({ sessionId: sa.id, prompt: 'write it (writer one)', yolo: true }),
        b.agent.run({ sessionId: sb.id, prompt: 'write it (writer two)', yolo: true }),
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
