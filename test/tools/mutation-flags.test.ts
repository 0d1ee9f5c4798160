/**
 * Honest mutation flags (issue 22 item 4). Pins:
 * - the tools that change the workspace, run processes, start runs or sub-agents, or rewrite a
 *   session's history are `mutates: true` (summarize_session, create_team, execute_dag,
 *   orchestrate_workflow, message, queue_enqueue, config);
 * - the deliberate exceptions (`agent`, `agentic_fetch`) start a child that works under its
 *   parent's mode and staged-workflow phase, so a plan-mode child still has no mutating tool;
 * - a walker runs every read-only tool's examples (and `{}` where that is valid) against a real
 *   git workspace and a store holding a session with history and a run, and fails when the
 *   workspace (git status, file hashes), a session's history or the run ledger's runs changed.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { callTool } from '../../src/tools/core/call-tool';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { isolatedEnv } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const MUST_MUTATE = [
  'summarize_session',
  'create_team',
  'execute_dag',
  'orchestrate_workflow',
  'message',
  'queue_enqueue',
  'config',
];

/** Read-only although they start a child run: the child inherits the parent's mode and phase. */
const DELIBERATE_SUB_AGENTS = ['agent', 'agentic_fetch'];

function fileHashes(root: string, skip: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const rel = relative(root, path);
      // .git is compared through `git status`; the data dir (the store, svc's scratch) and the
      // isolated HOME are svc's own state, compared through the history and the runs.
      if (skip.includes(path)) continue;
      if (statSync(path).isDirectory()) walk(path);
      else out[rel] = createHash('sha256').update(readFileSync(path)).digest('hex');
    }
  };
  walk(root);
  return out;
}

async function snapshot(app: App) {
  const sessions = await app.sessions.list({ limit: 1000 });
  return {
    git: execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], {
      cwd: app.workspace,
      encoding: 'utf8',
    }),
    files: fileHashes(app.workspace, [
      join(app.workspace, '.git'),
      join(app.workspace, '.home'),
      app.dataDir,
    ]),
    // A new, empty session (create_session) is not history; messages anywhere are.
    history: Object.fromEntries(
      (
        await Promise.all(
          sessions.map(async (s) => [s.id, JSON.stringify(await app.sessions.messages(s.id))] as const),
        )
      ).filter(([, m]) => m !== '[]'),
    ),
    runs: (await app.runs.list({ limit: 1000 })).map((r) => ({
      id: r.id,
      status: r.status,
      session_id: r.session_id,
    })),
  };
}

async function seededApp() {
  const ws = tmpWorkspace({
    git: true,
    files: { 'README.md': '# svc demo\n', 'src/a.ts': 'export const a = 1;\n', 'notes.txt': 'svc notes\n' },
  });
  const { app } = await agentApp([reply().toolCall('view', { path: 'README.md' }), reply().text('read it')], {
    workspace: ws,
    env: isolatedEnv(ws, { SVC_ENABLE_PROCESS_LIFECYCLE_TOOLS: '1' }),
    extraConfig: { options: { operating_packs: true, adaptive_orchestration: { enabled: true } } },
  });
  const run = await app.agent.run({ prompt: 'read the readme' });
  expect(run.status).toBe('completed');
  return app;
}

describe('mutation flags', () => {
  it('TOOLS-MUT-01: tools that start runs or sub-agents, edit files or rewrite history are mutates: true', async () => {
    const app = await seededApp();
    for (const name of MUST_MUTATE) expect(app.tools.get(name)?.mutates, name).toBe(true);
    for (const name of DELIBERATE_SUB_AGENTS) expect(app.tools.get(name)?.mutates, name).toBe(false);
  });

  it('TOOLS-MUT-02: a sub-agent started from a plan-mode session works in plan mode (no mutating tool reaches it)', async () => {
    const { app } = await agentApp([reply().text('child done')]);
    const parent = await app.agent.createSession({ title: 'planner' });
    await app.sessions.update(parent.id, { mode: 'plan' });
    const child = await app.agent.runChild({
      parentSessionId: parent.id,
      prompt: 'look around',
      agent: 'general',
    });
    expect(child.status).toBe('completed');
    const childSession = await app.sessions.require(child.session_id);
    expect(childSession.mode).toBe('plan');
    const effective = app.funnel(await app.funnelContext(childSession.id)).filter((e) => e.effective);
    expect(effective.length).toBeGreaterThan(0);
    expect(effective.filter((e) => e.mutates).map((e) => e.name)).toEqual([]);
  });

  // ≈ 150 real tool calls (3 s alone): the default 30 s bound was hit in a full suite on a loaded 2-core box.
  it('TOOLS-MUT-03: running every read-only tool example changes no file, no history and no run', {
    timeout: 120_000,
  }, async () => {
    const app = await seededApp();
    const before = await snapshot(app);
    expect(Object.keys(before.history).length).toBeGreaterThan(0);
    expect(before.runs.length).toBeGreaterThan(0);
    const ran: string[] = [];
    for (const tool of app.tools.registered()) {
      if (tool.mutates) continue;
      const inputs: unknown[] = [...(tool.examples ?? [])];
      if (tool.input.safeParse({}).success && !inputs.some((i) => JSON.stringify(i) === '{}'))
        inputs.push({});
      for (const input of inputs) {
        // Outcomes may be errors (an example naming a missing id); what matters is what changed.
        await callTool(app, tool.name, input, { surface: 'cli' });
        ran.push(tool.name);
        const after = await snapshot(app);
        expect(after, `${tool.name} ${JSON.stringify(input)}`).toEqual(before);
      }
    }
    expect(new Set(ran).size).toBeGreaterThan(60);
  });
});
