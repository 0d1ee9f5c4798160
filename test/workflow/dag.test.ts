/**
 * execute_dag. Pins: TOOLS-55 (registered); through the real loop, independent tasks run as
 * overlapping child runs of the DAG's pipeline run (itself a child of the calling run, one
 * family), a dependent task starts after its dependencies and sees their answers; max_parallel 1
 * serializes; a cycle, an unknown dependency or a reference to a task that is not a dependency is
 * refused before anything runs; a failed task's dependents are skipped; cancelling the DAG's run
 * in the ledger cancels its running tasks; shutting down interrupts it.
 */
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadSqlite } from '../../src/store/sqlite-driver';
import { ancestorMap, dagProblems, findCycle } from '../../src/workflows/dag';
import { agentApp } from '../helpers/agent-harness';

// execute_dag mutates (it starts runs): a headless run needs it allowed.
const ALLOW = { extraConfig: { permissions: { allowed_tools: ['execute_dag'] } } };

import { type RecordedRequest, reply } from '../helpers/fake-provider';
import {
  afterTool,
  childRuns,
  lastToolResult,
  maxConcurrent,
  promptOf,
  router,
  toolResults,
} from './helpers';

const DIAMOND = [
  { id: 'a', prompt: 'Task A: list the files' },
  { id: 'b', prompt: 'Task B: read the readme' },
  { id: 'c', prompt: 'Task C: combine {{ tasks.a.output }}', depends_on: ['a', 'b'] },
];

function answer(dag: unknown) {
  return (request: RecordedRequest) => {
    const prompt = promptOf(request);
    if (prompt.startsWith('Task A')) return reply().text('A says 3 files').slow(5);
    if (prompt.startsWith('Task B')) return reply().text('B says hello').slow(5);
    if (prompt.startsWith('Task C')) return reply().text('C combined');
    if (afterTool(request)) return reply().text(`parent saw: ${lastToolResult(request).slice(0, 40)}`);
    return reply().toolCall('execute_dag', dag);
  };
}

describe('execute_dag', () => {
  it('TOOLS-55: runs independent tasks as overlapping child runs and a dependent one after them', async () => {
    const { app, provider, events } = await agentApp(
      router(5, answer({ tasks: DIAMOND, title: 'diamond' })),
      ALLOW,
    );
    expect(app.tools.get('execute_dag')?.tag).toBe('workflow');
    const parent = await app.agent.run({ prompt: 'run the dag' });
    expect(parent.status).toBe('completed');

    const [dagRun] = await childRuns(app, parent.run_id);
    expect(dagRun).toMatchObject({
      agent: 'dag',
      origin: 'workflow',
      status: 'completed',
      family_session_id: parent.session_id,
    });
    const tasks = await childRuns(app, dagRun.id);
    const byTask = Object.fromEntries(
      await Promise.all(
        tasks.map(
          async (run) =>
            [(await app.sessions.require(run.session_id)).metadata.dag_task as string, run] as const,
        ),
      ),
    );
    expect(Object.keys(byTask).sort()).toEqual(['a', 'b', 'c']);
    for (const run of tasks)
      expect(run).toMatchObject({
        origin: 'subagent',
        status: 'completed',
        family_session_id: parent.session_id,
      });

    // a and b overlapped; c started only after both finished.
    expect(maxConcurrent(events, [byTask.a.id, byTask.b.id])).toBe(2);
    const order = events
      .filter((e) => e.type === 'run.started' || e.type === 'run.finished')
      .map((e) => `${e.type}:${(e.payload as { run_id: string }).run_id}`);
    expect(order.indexOf(`run.started:${byTask.c.id}`)).toBeGreaterThan(
      order.indexOf(`run.finished:${byTask.a.id}`),
    );
    expect(order.indexOf(`run.started:${byTask.c.id}`)).toBeGreaterThan(
      order.indexOf(`run.finished:${byTask.b.id}`),
    );

    // c got a's answer in place and b's appended.
    const cPrompt = promptOf(provider.requests.find((r) => promptOf(r).startsWith('Task C'))!);
    expect(cPrompt).toBe(
      'Task C: combine A says 3 files\n\n---\nResults of the tasks this one depends on:\n\n### b\nB says hello',
    );

    const [result] = await toolResults(app, parent.session_id);
    expect(result.output).toContain('DAG completed');
    expect(result.output).toContain('## c: completed\nC combined');
    const row = (await app.workflows.runs.list({ kind: 'dag' }))[0];
    expect(row).toMatchObject({ name: 'diamond', status: 'completed', run_id: dagRun.id });
    expect((row.result.finished_order as string[]).at(-1)).toBe('c');
  });

  it('max_parallel 1 runs one task at a time', async () => {
    const { app, events } = await agentApp(router(5, answer({ tasks: DIAMOND, max_parallel: 1 })), ALLOW);
    const parent = await app.agent.run({ prompt: 'run the dag' });
    const [dagRun] = await childRuns(app, parent.run_id);
    const tasks = await childRuns(app, dagRun.id);
    expect(tasks).toHaveLength(3);
    expect(
      maxConcurrent(
        events,
        tasks.map((t) => t.id),
      ),
    ).toBe(1);
  });

  it('refuses a cycle before anything runs, naming it', async () => {
    const cyclic = {
      tasks: [
        { id: 'a', prompt: 'Task A', depends_on: ['c'] },
        { id: 'b', prompt: 'Task B', depends_on: ['a'] },
        { id: 'c', prompt: 'Task C', depends_on: ['b'] },
      ],
    };
    const { app } = await agentApp(router(2, answer(cyclic)), ALLOW);
    const parent = await app.agent.run({ prompt: 'run the dag' });
    const [result] = await toolResults(app, parent.session_id);
    expect(result).toMatchObject({
      is_error: true,
      output:
        'invalid_input: tasks: dependency cycle: a → c → b → a (each depends on the next); remove one of these depends_on entries',
    });
    expect(await childRuns(app, parent.run_id)).toEqual([]);
    expect(await app.workflows.runs.list({ kind: 'dag' })).toEqual([]);
  });

  it('names unknown, self and duplicate dependencies and references to non-dependencies by field', () => {
    expect(
      dagProblems([
        { id: 'a', depends_on: ['a'] },
        { id: 'b', depends_on: ['zzz'] },
        { id: 'a', depends_on: [] },
      ]),
    ).toEqual([
      { field: 'tasks[2].id', message: 'duplicate id "a" (also tasks[0])' },
      { field: 'tasks[0].depends_on[0]', message: '"a" depends on itself' },
      { field: 'tasks[1].depends_on[0]', message: 'unknown task "zzz"; ids: a, b' },
    ]);
    expect(
      findCycle([
        { id: 'x', depends_on: ['y'] },
        { id: 'y', depends_on: ['x'] },
      ]),
    ).toEqual(['x', 'y', 'x']);
    expect(
      findCycle([
        { id: 'x', depends_on: [] },
        { id: 'y', depends_on: ['x'] },
      ]),
    ).toBeUndefined();
  });

  it('finds cycles and ancestors without recursion: a 100,000-node chain neither overflows nor takes long', () => {
    const n = 100_000;
    const chain = Array.from({ length: n }, (_, i) => ({ id: `t${i}`, depends_on: i ? [`t${i - 1}`] : [] }));
    expect(findCycle(chain)).toBeUndefined();
    chain[0].depends_on = [`t${n - 1}`];
    const cycle = findCycle(chain)!;
    expect(cycle).toHaveLength(n + 1);
    expect([cycle[0], cycle[1], cycle.at(-2), cycle.at(-1)]).toEqual(['t0', `t${n - 1}`, 't1', 't0']);
    const diamond = ancestorMap([
      { id: 'd', depends_on: ['b', 'c'] },
      { id: 'b', depends_on: ['a'] },
      { id: 'c', depends_on: ['a'] },
      { id: 'a', depends_on: [] },
    ]);
    expect(Object.fromEntries([...diamond].map(([id, set]) => [id, [...set].sort()]))).toEqual({
      a: [],
      b: ['a'],
      c: ['a'],
      d: ['a', 'b', 'c'],
    });
  });

  it('refuses a template reference to a task that is not a dependency', async () => {
    const { app } = await agentApp([]);
    await expect(
      app.tools.require('execute_dag').run(app.toolContext({ surface: 'cli' }), {
        tasks: [
          { id: 'a', prompt: 'x', depends_on: [], agent: 'general' },
          { id: 'b', prompt: 'use {{ tasks.a.output }}', depends_on: [], agent: 'nobody' },
        ],
      }),
    ).rejects.toThrow(
      'tasks[1].agent: no agent kind "nobody"; see list_agent_kinds; tasks[1].prompt: {{ tasks.a.output }}: task "a" is not among the tasks this one depends on; add it to depends_on',
    );
  });

  it('skips the dependents of a failed task and still runs what does not depend on it', async () => {
    const { app } = await agentApp(
      router(4, (request) => {
        const prompt = promptOf(request);
        if (prompt.startsWith('Task A'))
          return reply().httpError(400, { error: { message: 'bad request', type: 'invalid' } });
        if (prompt.startsWith('Task B')) return reply().text('B fine');
        return reply().text('should not run');
      }),
      { allowExtra: true },
    );
    const result = await app.tools.require('execute_dag').run(app.toolContext({ surface: 'cli' }), {
      tasks: [
        { id: 'a', prompt: 'Task A', depends_on: [], agent: 'general' },
        { id: 'b', prompt: 'Task B', depends_on: [], agent: 'general' },
        { id: 'c', prompt: 'Task C', depends_on: ['a'], agent: 'general' },
      ],
    });
    expect(result.status).toBe('failed');
    expect(result.tasks.map((t: { id: string; status: string }) => [t.id, t.status])).toEqual([
      ['a', 'failed'],
      ['b', 'completed'],
      ['c', 'skipped'],
    ]);
    expect(result.tasks[2].error).toBe('dependency "a" failed');
    expect(result.tasks[2].run_id).toBeNull();
    // Called from outside a run: a new top-level session holds the DAG run.
    expect((await app.runs.require(result.run_id)).parent_run_id).toBeNull();
    expect((await app.sessions.require(result.session_id)).parent_id).toBeNull();
  });

  it('cancelling the DAG run in the ledger cancels its running tasks', async () => {
    const { app } = await agentApp(
      router(2, () => reply().text('late').hang(30_000)),
      { allowExtra: true },
    );
    const pending = app.tools.require('execute_dag').run(app.toolContext({ surface: 'cli' }), {
      tasks: [
        { id: 'a', prompt: 'Task A', depends_on: [], agent: 'general' },
        { id: 'b', prompt: 'Task B', depends_on: ['a'], agent: 'general' },
      ],
    });
    let dagRunId: string | undefined;
    for (let i = 0; i < 500 && !dagRunId; i++) {
      await new Promise((r) => setTimeout(r, 20));
      dagRunId = (await app.runs.list({ status: ['running'] })).find((r) => r.origin === 'workflow')?.id;
    }
    expect(dagRunId).toBeDefined();
    await app.agent.cancelRun(dagRunId!, 'stop it');
    const result = await pending;
    expect(result.status).toBe('cancelled');
    expect(result.tasks.map((t: { status: string }) => t.status)).toEqual(['cancelled', 'cancelled']);
    expect(await app.runs.require(dagRunId!)).toMatchObject({ status: 'cancelled' });
    const [taskRun] = await childRuns(app, dagRunId!);
    expect(taskRun.status).toBe('cancelled');
  });

  it('svc shutting down interrupts a running DAG', async () => {
    const { app } = await agentApp(
      router(1, () => reply().text('late').hang(30_000)),
      { allowExtra: true },
    );
    const pending = app.tools.require('execute_dag').run(app.toolContext({ surface: 'cli' }), {
      tasks: [
        { id: 'a', prompt: 'Task A', depends_on: [], agent: 'general' },
        { id: 'b', prompt: 'Task B', depends_on: ['a'], agent: 'general' },
      ],
    });
    for (let i = 0; i < 1000 && app.workflows.active() === 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    for (let i = 0; i < 1000 && (await app.runs.list({ status: ['running'] })).length < 2; i++)
      await new Promise((r) => setTimeout(r, 10));
    const dagRunId = (await app.runs.list({ status: ['running'] })).find((r) => r.origin === 'workflow')!.id;
    await app.close();
    const result = await pending;
    expect(result.status).toBe('interrupted');
    expect(result.tasks.map((t: { status: string }) => t.status)).toEqual(['cancelled', 'skipped']);
    // Durable: the ledger and the workflow row say so after the process is gone.
    const db = new (loadSqlite())(join(app.dataDir, 'svc.db'), { readonly: true });
    onTestFinished(() => {
      db.close();
    });
    const status = (id: string) =>
      (db.prepare('SELECT status FROM agent_runs WHERE id = ?').get(id) as { status: string }).status;
    expect(status(dagRunId)).toBe('interrupted');
    const task = db
      .prepare('SELECT id, status, reason FROM agent_runs WHERE parent_run_id = ?')
      .get(dagRunId) as { status: string; reason: string };
    expect(task).toMatchObject({ status: 'interrupted', reason: 'svc shut down while the run was active' });
    expect(db.prepare('SELECT status FROM workflow_runs WHERE run_id = ?').get(dagRunId)).toEqual({
      status: 'interrupted',
    });
    expect(result.run_id).toBe(dagRunId);
  });
});
