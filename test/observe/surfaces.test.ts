/**
 * The observability readouts on every surface. Pins:
 * - after real runs (sub-agent, file change, permission, tool error) every observe tool returns
 *   the same JSON through the agent tool, its HTTP route, its MCP tool and its CLI --json command
 *   (GEN-09 on live state, beyond the walker's seeded one);
 * - `svc config show-journal-narrative` and `svc config show-composition-graph` are read-only
 *   projections: text by default, the payload with --json, no database created in a fresh
 *   workspace and no row changed in a used one (CLI-07).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { bindingsOf } from '../../src/surfaces/http/mount-tools';
import type { CliBinding } from '../../src/tools/core/define-tool';
import { observeTools } from '../../src/tools/observe';
import { agentApp, throwingTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { maskVolatile, viaCli, viaHttp, viaMcp, viaTool } from '../helpers/surfaces';

const TABLES = [
  'sessions',
  'messages',
  'agent_runs',
  'agent_run_events',
  'session_events',
  'file_history',
  'prompt_stack_builds',
  'codebase_context_cache',
  'session_todos',
];

function rowCounts(app: App): Record<string, number> {
  return Object.fromEntries(
    TABLES.map((t) => [t, (app.db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n]),
  );
}

async function busyApp() {
  const { app } = await agentApp(
    [
      reply().toolCall('todos', { todos: [{ content: 'Write notes', status: 'in_progress' }] }),
      reply().toolCall('agent', { prompt: 'write notes', agent: 'general', description: 'writer' }),
      reply().toolCall('write', { path: 'notes.md', content: '# notes\n' }).toolCall('explode', {}),
      reply().text('child done'),
      reply().text('all done'),
    ],
    { extraTools: [throwingTool], git: true, files: { 'package.json': '{"scripts":{"test":"vitest"}}' } },
  );
  app.agent.attach('*', 'test');
  app.bus.subscribe('*', (event) => {
    if (event.type === 'permission.requested')
      queueMicrotask(async () => {
        try {
          await app.agent.answerPermission(
            (event.payload as { request_id: string }).request_id,
            'allow_once',
            'test',
          );
        } catch {
          // answered already through the other session's stream
        }
      });
  });
  const run = await app.agent.run({ prompt: 'get notes written', origin: 'cli' });
  expect(run.status).toBe('completed');
  return { app, run };
}

const cliOf = (name: string): CliBinding => {
  const tool = observeTools.find((t) => t.name === name)!;
  return tool.surfaces!.cli as CliBinding;
};

describe('observability readouts on every surface', () => {
  it('return the same JSON through the tool, HTTP, MCP and CLI after real runs', async () => {
    const { app, run } = await busyApp();
    const child = (await app.sessions.list({ parent_id: run.session_id }))[0];
    const inputs: Record<string, Record<string, unknown>[]> = {
      session_observability: [{ session_id: run.session_id, recent_runs_limit: 1 }, { session_id: child.id }],
      run_cue_ledger: [{ session_id: run.session_id }, { session_id: child.id, limit: 1 }],
      get_journal: [{ session_id: run.session_id }, { session_id: child.id, limit: 2 }],
      get_journal_posture: [{ session_id: run.session_id }],
      get_composition_graph: [{ session_id: run.session_id }, { session_id: run.session_id, max_nodes: 4 }],
      get_task_aggregate: [{ session_id: child.id }],
      get_prompt_stack_status: [{}, { session_id: child.id }],
      list_recent_prompt_stack_builds: [{ limit: 1 }],
      describe_context: [{}],
      workspace_snapshot: [{}],
      get_repo_preflight_status: [{}],
    };
    expect(Object.keys(inputs).sort()).toEqual(observeTools.map((t) => t.name).sort());
    for (const tool of observeTools) {
      for (const input of inputs[tool.name]) {
        const label = `${tool.name} ${JSON.stringify(input)}`;
        const direct = maskVolatile(await viaTool(app, tool, input));
        for (const binding of bindingsOf(tool)) {
          const http = await viaHttp(app, binding, input);
          expect(http.status, `${label}: ${http.text}`).toBe(200);
          expect(maskVolatile(http.body), label).toEqual(direct);
        }
        const mcp = await viaMcp(app, tool, input);
        expect(mcp.isError, `${label}: ${mcp.text}`).toBe(false);
        expect(maskVolatile(mcp.json), label).toEqual(direct);
        for (const binding of [tool.surfaces?.cli ?? []].flat()) {
          const out = await viaCli(app, binding, input);
          expect(out.code, out.stderr).toBe(0);
          expect(maskVolatile(out.json), label).toEqual(direct);
        }
      }
    }
  });

  it('CLI-07: show-journal-narrative and show-composition-graph are read-only projections', async () => {
    const fresh = await makeTestApp();
    for (const name of ['get_journal', 'get_composition_graph']) {
      const text = await viaCli(fresh, cliOf(name), {}, []);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toMatch(/^no (journal|composition graph): no_session: there are no sessions yet/);
      const json = await viaCli(fresh, cliOf(name), {});
      expect(json.code, json.stderr).toBe(0);
      expect(json.json).toMatchObject({ session_id: null, session_known: false, selected_by: 'none' });
    }
    expect(existsSync(join(fresh.dataDir, 'svc.db'))).toBe(false);

    const { app, run } = await busyApp();
    const before = rowCounts(app);
    const narrative = await viaCli(app, cliOf('get_journal'), { session_id: run.session_id }, []);
    expect(narrative.code, narrative.stderr).toBe(0);
    const lines = narrative.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`Journal of session ${run.session_id} "get notes written"`);
    expect(lines.slice(1)).toEqual([
      '9 entries, 2026-11-22 12:00:00 – 12:00:00 UTC',
      '',
      '12:00:00  session created',
      `12:00:00  run ${run.run_id} started: build agent, fake/m1, via cli`,
      '12:00:00    user: get notes written',
      '12:00:00    todos (0 ms)',
      // The sub-agent's permission ask reaches the parent's stream too.
      '12:00:00    asked permission: write notes.md',
      '12:00:00    permission for write: allow_once by test',
      '12:00:00    agent writer (0 ms)',
      '12:00:00    assistant: all done',
      `12:00:00  run ${run.run_id} completed after 3 step(s), 30 in / 15 out tokens`,
    ]);
    // Defaults to the most recent session when none is named.
    const byDefault = await viaCli(app, cliOf('get_journal'), {});
    expect(byDefault.json).toMatchObject({ session_id: run.session_id, selected_by: 'most_recent' });

    const graph = await viaCli(app, cliOf('get_composition_graph'), { session_id: run.session_id }, []);
    expect(graph.code, graph.stderr).toBe(0);
    expect(graph.stdout).toContain(
      `composition graph of session family ${run.session_id} (2 sessions, 2 runs, 4 tools, 0 MCP servers, 1 files, `,
    );
    expect(graph.stdout).toContain('files changed:\n  write → notes.md ×1');
    expect(rowCounts(app)).toEqual(before);
  });
});
