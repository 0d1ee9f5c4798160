/**
 * The session readouts against real runs (agent harness + fake provider). Pins:
 * - the observability and context read tools are registered, read-only, in the status family,
 *   with MCP names svc_<tool> (TOOLS-32);
 * - session_observability honours recent_runs_limit on the tool and on its HTTP route, echoes it
 *   in filters_applied and rejects a bad value naming the field (TOOLS-33, HTTP-05);
 * - its counts follow the session: runs, tool calls with errors, permissions, file changes,
 *   context ratio, compactions;
 * - run_cue_ledger names the cue that started each run (user prompt, queue, sub-agent) and the
 *   cues during it (permission asks and answers, cancel requests, loop stops), without prompt text;
 * - get_journal tells the session in order, with previews redacted and no tool bodies, and grows
 *   with the session; get_journal_posture counts it;
 * - get_composition_graph links sessions, runs, sub-agent runs, tools, files and MCP servers, bounded
 *   by max_nodes; get_task_aggregate sums todos, runs and outcomes of the family;
 * - the prompt stack ledger records every assembly (sections, sizes, hashes; never the text);
 * - the four session routes answer (HTTP-03), also for an unknown session.
 */
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import { invokeTool } from '../../src/tools/core/call-tool';
import { allTools } from '../../src/tools/index';
import { agentApp, echoTool, gateTool, throwingTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { isolatedEnv } from '../helpers/make-test-app';
import { viaHttp } from '../helpers/surfaces';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const OBSERVE_TOOLS = [
  'session_observability',
  'run_cue_ledger',
  'get_journal',
  'get_journal_posture',
  'get_composition_graph',
  'get_task_aggregate',
  'get_prompt_stack_status',
  'list_recent_prompt_stack_builds',
  'describe_context',
  'workspace_snapshot',
  'get_repo_preflight_status',
];

const call = (app: App, name: string, input: Record<string, unknown> = {}) =>
  invokeTool(app, name, input, { surface: 'agent' }) as Promise<any>;

/** An operator attached to every session who answers every permission request with allow_session. */
function autoApprove(app: App) {
  app.agent.attach('*', 'test');
  app.bus.subscribe('*', (event) => {
    if (event.type !== 'permission.requested') return;
    const request = event.payload as { request_id: string };
    queueMicrotask(async () => {
      try {
        await app.agent.answerPermission(request.request_id, 'allow_session', 'test');
      } catch {
        // answered through the parent session already
      }
    });
  });
}

describe('observability tool registration', () => {
  it('TOOLS-32: the observability and context read tools are registered', async () => {
    const { app } = await agentApp([]);
    for (const name of OBSERVE_TOOLS) {
      expect(app.tools.get(name), name).toBeDefined();
      const tool = allTools.find((t) => t.name === name)!;
      expect({ family: tool.family, tag: tool.tag, mutates: tool.mutates, mcp: tool.surfaces?.mcp }).toEqual({
        family: 'status',
        tag: 'primitive',
        mutates: false,
        mcp: `svc_${name}`,
      });
    }
  });
});

describe('session_observability', () => {
  it('TOOLS-33, HTTP-05: recent_runs_limit caps the recent runs on the tool and on the route', async () => {
    const { app } = await agentApp([reply().text('one'), reply().text('two'), reply().text('three')]);
    const first = await app.agent.run({ prompt: 'one' });
    const second = await app.agent.run({ sessionId: first.session_id, prompt: 'two' });
    const third = await app.agent.run({ sessionId: first.session_id, prompt: 'three' });

    const all = await call(app, 'session_observability', { session_id: first.session_id });
    expect(all.filters_applied).toEqual({ recent_runs_limit: 5 });
    expect(all.runs.recent.map((r: { run_id: string }) => r.run_id)).toEqual([
      third.run_id,
      second.run_id,
      first.run_id,
    ]);
    const two = await call(app, 'session_observability', {
      session_id: first.session_id,
      recent_runs_limit: 2,
    });
    expect(two.filters_applied).toEqual({ recent_runs_limit: 2 });
    expect(two.runs.recent.map((r: { run_id: string }) => r.run_id)).toEqual([third.run_id, second.run_id]);
    expect(two.runs).toMatchObject({ total: 3, recent_truncated: true });

    const binding = {
      method: 'GET' as const,
      path: '/v1/sessions/:id/observability',
      params: { id: 'session_id' },
    };
    const http = await viaHttp(app, binding, { session_id: first.session_id, recent_runs_limit: 1 });
    expect(http.status).toBe(200);
    expect((http.body as any).filters_applied).toEqual({ recent_runs_limit: 1 });
    expect((http.body as any).runs.recent.map((r: { run_id: string }) => r.run_id)).toEqual([third.run_id]);

    const bad = await viaHttp(app, binding, { session_id: first.session_id, recent_runs_limit: 'lots' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('recent_runs_limit');
    await expect(
      call(app, 'session_observability', { session_id: first.session_id, recent_runs_limit: -1 }),
    ).rejects.toThrow(/recent_runs_limit/);
    // An out-of-range value names the field once (the path prefix), not twice.
    for (const value of [-3, 1000]) {
      const out = await viaHttp(app, binding, { session_id: first.session_id, recent_runs_limit: value });
      expect(out.status).toBe(400);
      expect(out.text.match(/recent_runs_limit/g)).toHaveLength(1);
    }
  });

  it('follows the session: runs, tool calls and errors, permissions, file changes, context, compactions', async () => {
    const { app } = await agentApp(
      [
        reply().toolCall('write', { path: 'notes.txt', content: 'one\n' }).usage(200, 10),
        reply().toolCall('bash', { command: 'ls' }).toolCall('explode', {}).usage(300, 10),
        reply().text('wrote notes').usage(400, 20),
        reply().text('the summary'),
        reply().toolCall('write', { path: 'notes.txt', content: 'two\n' }),
        reply().text('rewrote notes'),
      ],
      { extraTools: [throwingTool], modelInfo: { context_window: 1000 } },
    );
    autoApprove(app);
    const session = await app.sessions.create({ title: 'observed' });
    const before = await call(app, 'session_observability', { session_id: session.id });
    expect(before).toMatchObject({
      session_known: true,
      state: { state: 'idle' },
      queue_length: 0,
      runs: { total: 0, recent: [] },
      tool_calls: { total: 0, errors: 0, by_tool: [] },
      file_changes: { total: 0 },
      context: { last_usage_ratio: null },
    });

    const first = await app.agent.run({ sessionId: session.id, prompt: 'write notes', origin: 'cli' });
    expect(first.status).toBe('completed');
    const after = await call(app, 'session_observability', { session_id: session.id });
    expect(after.runs).toMatchObject({ total: 1, by_status: { completed: 1 }, by_origin: { cli: 1 } });
    expect(after.tokens).toMatchObject({ input: 900, output: 40, total: 940 });
    expect(after.tool_calls).toMatchObject({ total: 3, errors: 1, error_rate: 0.3333 });
    expect(
      after.tool_calls.by_tool.map((t: any) => [t.tool, t.calls, t.errors, t.duration_ms.count]),
    ).toEqual([
      ['bash', 1, 0, 1],
      ['explode', 1, 1, 1],
      ['write', 1, 0, 1],
    ]);
    expect(after.steps).toMatchObject({ total: 3, latency_ms: { count: 3 } });
    expect(after.permissions).toMatchObject({
      asked: 1,
      approved: 1,
      denied: 0,
      auto_allowed: 1,
      auto_allowed_by: { read_only: 1 },
      unanswered: 0,
    });
    expect(after.file_changes).toEqual({
      total: 1,
      distinct_paths: 1,
      by_change: { create: 1, modify: 0, delete: 0 },
      recent_paths: ['notes.txt'],
    });
    expect(after.context).toMatchObject({
      last_usage_ratio: 0.42,
      context_window: 1000,
      run_id: first.run_id,
    });
    expect(after.compactions).toMatchObject({ count: 0 });

    await call(app, 'summarize_session', { session_id: session.id });
    const second = await app.agent.run({ sessionId: session.id, prompt: 'rewrite notes' });
    expect(second.status).toBe('completed');
    const later = await call(app, 'session_observability', { session_id: session.id });
    expect(later.runs.total).toBe(2);
    expect(later.compactions).toMatchObject({ count: 1, started_by: { manual: 1 }, failed: 0 });
    expect(later.file_changes).toMatchObject({
      total: 2,
      distinct_paths: 1,
      by_change: { create: 1, modify: 1 },
    });
    // allow_session covered the second write: no new ask.
    expect(later.permissions).toMatchObject({
      asked: 1,
      auto_allowed: 2,
      auto_allowed_by: { session_grant: 1 },
    });
    expect(later.context.run_id).toBe(second.run_id);
  });
});

describe('run_cue_ledger', () => {
  it('names the start cue of each run (user prompt, queue) and the cues during it, without prompt text', async () => {
    const gate = gateTool();
    const { app } = await agentApp(
      [
        reply().toolCall('gate', {}),
        reply().toolCall('write', { path: 'a.txt', content: 'a\n' }),
        reply().text('first done'),
        reply().text('second done'),
      ],
      { extraTools: [gate.tool] },
    );
    autoApprove(app);
    const first = await app.agent.send({ prompt: 'SECRET-PROMPT-ONE', origin: 'cli' });
    await gate.reached;
    const second = await app.agent.send({
      sessionId: first.session_id,
      prompt: 'SECRET-PROMPT-TWO',
      origin: 'tui',
    });
    expect(second.status).toBe('queued');
    const during = await call(app, 'run_cue_ledger', { session_id: first.session_id });
    expect(during.runs.map((r: any) => [r.run_id, r.status, r.start_cue.kind])).toEqual([
      [first.run_id, 'running', 'user_prompt'],
      [second.run_id, 'queued', 'queue'],
    ]);
    expect(during.runs[1].start_cue.queued_behind_run_id).toBe(first.run_id);
    gate.release();
    await app.agent.wait(second.run_id);

    const ledger = await call(app, 'run_cue_ledger', { session_id: first.session_id });
    expect(ledger).toMatchObject({ session_known: true, family_session_id: first.session_id, total_runs: 2 });
    const [one, two] = ledger.runs;
    expect(one.start_cue).toEqual({
      kind: 'user_prompt',
      origin: 'cli',
      queued_behind_run_id: null,
      parent_run_id: null,
    });
    expect(one.cues.map((c: any) => [c.kind, c.detail.tool ?? null])).toEqual([
      ['permission_ask', 'write'],
      ['permission_decision', 'write'],
    ]);
    expect(one.cues[1].detail).toMatchObject({ decision: 'allow_session', by: 'test' });
    expect(one.end).toEqual({ status: 'completed', reason: null, steps: 3 });
    expect(two.start_cue).toEqual({
      kind: 'queue',
      origin: 'tui',
      queued_behind_run_id: first.run_id,
      parent_run_id: null,
    });
    expect(ledger.counts).toEqual({
      by_start_kind: { user_prompt: 1, queue: 1 },
      by_cue_kind: { permission_ask: 1, permission_decision: 1 },
    });
    expect(JSON.stringify(ledger)).not.toMatch(/SECRET-PROMPT/);
  });

  it('records operator cancels, loop stops and sub-agent runs of the family', async () => {
    const gate = gateTool();
    const same = () => reply().toolCall('echo', { text: 'again' });
    const { app } = await agentApp(
      [
        reply().toolCall('gate', {}),
        reply().toolCall('agent', { prompt: 'look around', agent: 'explore', description: 'look' }),
        reply().text('child answer'),
        same(),
        same(),
        same(),
      ],
      { extraTools: [gate.tool, echoTool], extraConfig: { options: { loop_detection: { max_repeats: 3 } } } },
    );
    const cancelled = await app.agent.send({ prompt: 'wait at the gate' });
    await gate.reached;
    await app.agent.cancel(cancelled.session_id);
    await app.agent.wait(cancelled.run_id);
    const looped = await app.agent.run({ sessionId: cancelled.session_id, prompt: 'spawn then loop' });
    expect(looped.status).toBe('failed');

    const ledger = await call(app, 'run_cue_ledger', { session_id: cancelled.session_id });
    expect(ledger.runs.map((r: any) => [r.status, r.start_cue.kind])).toEqual([
      ['cancelled', 'user_prompt'],
      ['failed', 'user_prompt'],
      ['completed', 'sub_agent'],
    ]);
    expect(ledger.runs[0].cues.map((c: any) => c.kind)).toEqual(['cancel_request']);
    expect(ledger.runs[0].cues[0]).toMatchObject({ source: 'session_events', detail: { via: 'operator' } });
    expect(ledger.runs[0].end).toMatchObject({ status: 'cancelled', reason: 'cancelled by the operator' });
    expect(ledger.runs[1].cues.map((c: any) => c.kind)).toEqual(['loop_stop']);
    expect(ledger.runs[1].cues[0].detail).toEqual({ tool: 'echo', repeats: 3 });
    const child = ledger.runs[2];
    expect(child.session_id).not.toBe(cancelled.session_id);
    expect(child.start_cue).toMatchObject({
      kind: 'sub_agent',
      origin: 'subagent',
      parent_run_id: looped.run_id,
    });

    // Asked from the child session, the ledger is the same family's.
    const fromChild = await call(app, 'run_cue_ledger', { session_id: child.session_id, limit: 1 });
    expect(fromChild).toMatchObject({
      family_session_id: cancelled.session_id,
      total_runs: 3,
      truncated: true,
    });
    expect(fromChild.runs.map((r: any) => r.run_id)).toEqual([child.run_id]);
  });
});

describe('get_journal', () => {
  it('tells the session in order, redacted, without tool bodies, and grows with it', async () => {
    const workspace = tmpWorkspace({ files: { 'README.md': '# hi\n' } });
    const env = isolatedEnv(workspace, { DEMO_API_KEY: 'sk-demo-secret-4242' });
    const { app } = await agentApp(
      [
        reply().toolCall('echo', { text: 'TOOL-BODY-MARKER' }),
        reply().toolCall('write', { path: 'notes.txt', content: 'WRITTEN-BODY\n' }),
        reply().text('Done: notes written.'),
        reply().text('second answer'),
      ],
      { workspace, env, extraTools: [echoTool] },
    );
    autoApprove(app);
    const first = await app.agent.run({
      prompt: 'use key sk-demo-secret-4242 and write notes',
      origin: 'cli',
    });
    const journal = await call(app, 'get_journal', { session_id: first.session_id });
    expect(journal.entries.map((e: any) => e.kind)).toEqual([
      'session_created',
      'run_started',
      'user_prompt',
      'tool_call',
      'permission_request',
      'permission_decision',
      'file_change',
      'tool_call',
      'assistant_message',
      'run_finished',
    ]);
    const byKind = (kind: string) => journal.entries.filter((e: any) => e.kind === kind);
    expect(byKind('user_prompt')[0].detail.preview).not.toContain('sk-demo-secret-4242');
    expect(byKind('user_prompt')[0].summary).toMatch(/^user: use key .+ and write notes$/);
    expect(byKind('file_change')[0]).toMatchObject({
      run_id: first.run_id,
      summary: 'created notes.txt (write)',
      detail: { path: 'notes.txt', change: 'create', tool: 'write' },
    });
    expect(byKind('permission_decision')[0]).toMatchObject({
      run_id: first.run_id,
      detail: { tool: 'write', decision: 'allow_session', by: 'test' },
    });
    expect(byKind('tool_call').map((e: any) => e.detail.title)).toEqual(['echo', 'write notes.txt']);
    expect(byKind('run_finished')[0].detail).toMatchObject({ status: 'completed', steps: 3 });
    const text = JSON.stringify(journal);
    expect(text).not.toContain('TOOL-BODY-MARKER');
    expect(text).not.toContain('WRITTEN-BODY');
    expect(text).not.toContain('sk-demo-secret-4242');
    const ids = journal.entries.map((e: any) => e.event_id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);

    await call(app, 'set_plan_artifact', { session_id: first.session_id, markdown: '# Plan\n1. more' });
    await call(app, 'approve_plan', { session_id: first.session_id });
    await app.agent.run({ sessionId: first.session_id, prompt: 'again' });
    const grown = await call(app, 'get_journal', { session_id: first.session_id });
    expect(grown.total_entries).toBeGreaterThan(journal.total_entries);
    expect(grown.entries.slice(journal.total_entries).map((e: any) => [e.kind, e.summary])).toEqual([
      ['phase_change', 'workflow phase none → planning'],
      ['plan_update', 'plan set'],
      ['phase_change', 'workflow phase planning → execute'],
      ['run_started', expect.stringContaining('started')],
      ['user_prompt', 'user: again'],
      ['assistant_message', 'assistant: second answer'],
      ['run_finished', expect.stringContaining('completed after 1 step(s)')],
    ]);
    const last3 = await call(app, 'get_journal', { session_id: first.session_id, limit: 3 });
    expect(last3).toMatchObject({ truncated: true, total_entries: grown.total_entries });
    expect(last3.entries.map((e: any) => e.seq)).toEqual([
      grown.total_entries - 2,
      grown.total_entries - 1,
      grown.total_entries,
    ]);

    const posture = await call(app, 'get_journal_posture', { session_id: first.session_id });
    expect(posture).toMatchObject({
      available: true,
      sessions_with_entries: 1,
      session: { session_known: true, entries: grown.total_entries, by_kind: grown.counts },
    });
    expect(posture.source_events.by_type['run.started']).toBe(2);
  });
});

describe('get_composition_graph and get_task_aggregate', () => {
  it('links sessions, runs, sub-agent runs, tools, files and MCP servers, bounded by max_nodes', async () => {
    const { app } = await agentApp(
      [
        reply().toolCall('todos', {
          todos: [
            { content: 'Write the notes', status: 'in_progress' },
            { content: 'Review them', status: 'pending' },
          ],
        }),
        reply().toolCall('agent', { prompt: 'write notes', agent: 'general', description: 'writer' }),
        reply().toolCall('write', { path: 'docs/notes.md', content: '# notes\n' }),
        reply().text('notes written'),
        reply().text('all done'),
      ],
      {
        extraConfig: { mcp: { docs: { command: 'node', args: ['server.js'], disabled: true } } },
      },
    );
    autoApprove(app);
    const root = await app.agent.run({ prompt: 'get notes written' });
    expect(root.status).toBe('completed');
    const graph = await call(app, 'get_composition_graph', { session_id: root.session_id });
    const child = (await app.sessions.list({ parent_id: root.session_id }))[0];
    const childRun = (await app.runs.list({ session_id: child.id }))[0];
    expect(graph.counts).toEqual({
      nodes: 9,
      edges: 8,
      sessions: 2,
      runs: 2,
      tools: 3,
      mcp_servers: 1,
      files: 1,
    });
    expect(graph.nodes.map((n: any) => n.id)).toEqual([
      `session:${root.session_id}`,
      `session:${child.id}`,
      `run:${childRun.id}`,
      `run:${root.run_id}`,
      'tool:agent',
      'tool:todos',
      'tool:write',
      'mcp:docs',
      'file:docs/notes.md',
    ]);
    expect(graph.edges).toEqual(
      expect.arrayContaining([
        { from: `session:${root.session_id}`, to: `session:${child.id}`, type: 'parent_of', count: 1 },
        { from: `run:${root.run_id}`, to: `run:${childRun.id}`, type: 'spawned', count: 1 },
        { from: `run:${childRun.id}`, to: 'tool:write', type: 'called', count: 1, errors: 0 },
        { from: `run:${root.run_id}`, to: 'tool:agent', type: 'called', count: 1, errors: 0 },
        { from: 'tool:write', to: 'file:docs/notes.md', type: 'changed', count: 1 },
      ]),
    );
    expect(graph.nodes.find((n: any) => n.id === 'mcp:docs').attrs).toEqual({
      server: 'docs',
      configured: true,
      transport: 'stdio',
      disabled: true,
      tool_calls: 0,
    });
    const bounded = await call(app, 'get_composition_graph', { session_id: child.id, max_nodes: 3 });
    expect(bounded).toMatchObject({
      family_session_id: root.session_id,
      truncated: true,
      omitted: { run: 1, tool: 3, mcp_server: 1, file: 1 },
    });
    expect(bounded.nodes).toHaveLength(3);
    for (const edge of bounded.edges) {
      expect(bounded.nodes.map((n: any) => n.id)).toEqual(expect.arrayContaining([edge.from, edge.to]));
    }

    const aggregate = await call(app, 'get_task_aggregate', { session_id: child.id });
    expect(aggregate).toMatchObject({
      family_session_id: root.session_id,
      tasks: {
        total: 2,
        by_status: { in_progress: 1, pending: 1, completed: 0, cancelled: 0 },
        completion_rate: 0,
        in_progress: [{ session_id: root.session_id, task: 'Write the notes' }],
        pending: [{ session_id: root.session_id, task: 'Review them' }],
      },
      runs: {
        total: 2,
        by_status: { completed: 2 },
        by_start_cue: { user_prompt: 1, sub_agent: 1 },
        sub_agent_runs: 1,
      },
      outcomes: { finished: 2, success_rate: 1, by_reason: { completed: 2 } },
    });
    expect(aggregate.sessions.map((s: any) => [s.session_id, s.subagent, s.todos.total])).toEqual([
      [root.session_id, false, 2],
      [child.id, true, 0],
    ]);
  });

  it('get_task_aggregate counts failures and finished tasks as they happen', async () => {
    const same = () => reply().toolCall('echo', { text: 'x' });
    const { app } = await agentApp(
      [
        reply().toolCall('todos', { todos: [{ content: 'Echo', status: 'completed' }] }),
        reply().text('done'),
        same(),
        same(),
      ],
      { extraTools: [echoTool], extraConfig: { options: { loop_detection: { max_repeats: 2 } } } },
    );
    const ok = await app.agent.run({ prompt: 'a' });
    const before = await call(app, 'get_task_aggregate', { session_id: ok.session_id });
    expect(before.tasks).toMatchObject({ total: 1, completion_rate: 1 });
    expect(before.outcomes).toMatchObject({ finished: 1, success_rate: 1 });
    await app.agent.run({ sessionId: ok.session_id, prompt: 'b' });
    const after = await call(app, 'get_task_aggregate', { session_id: ok.session_id });
    expect(after.outcomes).toMatchObject({
      finished: 2,
      success_rate: 0.5,
      by_reason: { completed: 1, loop_detected: 1 },
      last: { status: 'failed', reason_kind: 'loop_detected' },
    });
  });
});

describe('prompt stack ledger', () => {
  it('records every assembly with sections, sizes and hashes, never the text', async () => {
    const { app, provider } = await agentApp([reply().text('one'), reply().text('two')], {
      files: { 'AGENTS.md': 'Project rule: be brief.\n' },
      // Every tool sent: no deferred_tools section (the fake model tells no window, so auto would defer).
      extraConfig: { options: { tool_exposure: 'all' } },
    });
    const empty = await call(app, 'get_prompt_stack_status');
    expect(empty).toMatchObject({
      builds: { total: 0 },
      last_build: null,
      warnings: [expect.stringMatching(/^no_builds_yet/)],
    });

    const first = await app.agent.run({ prompt: 'one' });
    const status = await call(app, 'get_prompt_stack_status', { session_id: first.session_id });
    const build = status.last_build;
    expect(build).toMatchObject({ session_id: first.session_id, run_id: first.run_id, agent: 'build' });
    expect(build.sections.map((s: any) => [s.name, s.source])).toEqual([
      ['base', 'builtin'],
      ['environment', 'workspace'],
      ['context_files', 'AGENTS.md'],
    ]);
    // The ledger measures what the model received.
    const system = provider.requests[0].body.messages[0].content as string;
    expect(build.total_chars).toBe(system.length);
    expect(
      build.sections.reduce((n: number, s: any) => n + s.chars, 0) + 2 * (build.sections.length - 1),
    ).toBe(system.length);
    expect(build.token_estimate).toBe(Math.ceil(system.length / 4));
    const rows = JSON.stringify(app.db.prepare('SELECT * FROM prompt_stack_builds').all());
    expect(rows).not.toContain('You are svc');
    expect(rows).not.toContain('Project rule');

    const second = await app.agent.run({ sessionId: first.session_id, prompt: 'two' });
    const later = await call(app, 'get_prompt_stack_status', { session_id: first.session_id });
    expect(later.builds.total).toBe(2);
    expect(later.stability.compared_pairs).toBe(1);
    expect(later.sections.find((s: any) => s.name === 'base')).toMatchObject({
      builds: 2,
      distinct_versions: 1,
    });
    const recent = await call(app, 'list_recent_prompt_stack_builds', { limit: 1 });
    expect(recent).toMatchObject({ total: 2, filters_applied: { limit: 1 } });
    expect(recent.builds.map((b: any) => b.run_id)).toEqual([second.run_id]);
  });
});

describe('session routes', () => {
  it('HTTP-03: the observability, run-cue-ledger, journal and composition-graph routes answer', async () => {
    const { app } = await agentApp([reply().text('hello')]);
    const run = await app.agent.run({ prompt: 'hi' });
    for (const route of ['observability', 'run-cue-ledger', 'journal', 'composition-graph']) {
      const binding = {
        method: 'GET' as const,
        path: `/v1/sessions/:id/${route}`,
        params: { id: 'session_id' },
      };
      const known = await viaHttp(app, binding, { session_id: run.session_id }, { token: 'tok' });
      expect(known.status, route).toBe(200);
      expect(known.body).toMatchObject({ session_id: run.session_id, session_known: true });
      const unknown = await viaHttp(app, binding, { session_id: 'ses_missing' }, { token: 'tok' });
      expect(unknown.status, route).toBe(200);
      expect(unknown.body).toMatchObject({
        session_known: false,
        warnings: ['session_unknown: no session "ses_missing"; see list_sessions'],
      });
    }
  });
});
