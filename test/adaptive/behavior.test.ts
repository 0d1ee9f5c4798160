/**
 * The genome changes what the agent does (issue 8: "a readout over state that affects nothing is
 * not done"). Pins, each through the real loop and the fake provider:
 * - plan_gate: a loop stop reshapes to plan_then_execute, and the next run is in the planning
 *   phase with every mutating tool withheld from the model;
 * - fan_out: agent calls of one step run their sub-agents in parallel, at most
 *   max_parallel_agents at once; without fan_out they run one at a time;
 * - executor_reviewer: a reviewer sub-agent checks each completed run and its findings reach the
 *   executor's next prompt;
 * - compaction_threshold: a token-pressure reshape lowers the session's threshold, and the next
 *   run compacts where the config threshold would not have;
 * - fleet_regulation_status and get_spawn_status report what happened.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { invokeTool } from '../../src/tools/core/call-tool';
import { defineTool } from '../../src/tools/core/define-tool';
import { echoTool } from '../helpers/agent-harness';
import { type RecordedRequest, reply } from '../helpers/fake-provider';
import { adaptiveApp, FAILURE_STATUS, requestFor, snapshotOf, systemOf, toolNamesOf } from './helpers';

/** A read-only tool that waits until `parties` callers are inside at once (or fails after timeoutMs). */
function rendezvous(parties: number, timeoutMs: number) {
  let inside = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return defineTool({
    name: 'rendezvous',
    family: 'test',
    tag: 'primitive',
    description: 'Wait for the other sub-agents.',
    input: z.strictObject({}),
    mutates: false,
    run: async () => {
      inside++;
      if (inside >= parties) open();
      let timer: NodeJS.Timeout | undefined;
      const alone = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('alone at the rendezvous')), timeoutMs);
      });
      try {
        await Promise.race([opened, alone]);
      } finally {
        clearTimeout(timer);
      }
      return 'together';
    },
  });
}

/** A read-only tool that records how many callers are inside at once. */
function probe() {
  const state = { inside: 0, peak: 0 };
  const tool = defineTool({
    name: 'probe',
    family: 'test',
    tag: 'primitive',
    description: 'Take a while.',
    input: z.strictObject({}),
    mutates: false,
    run: async () => {
      state.inside++;
      state.peak = Math.max(state.peak, state.inside);
      await new Promise((resolve) => setTimeout(resolve, 150));
      state.inside--;
      return 'probed';
    },
  });
  return { tool, state };
}

const isChild = (request: RecordedRequest) =>
  systemOf(request).includes('You are a sub-agent working on one task');
const lastRole = (request: RecordedRequest) => (request.body.messages as { role: string }[]).at(-1)?.role;

/** The coordinator calls agent `parts` times in one step; each sub-agent calls `childTool` once. */
function fanOutResponder(parts: number, childTool: string) {
  return (request: RecordedRequest) => {
    if (isChild(request)) {
      return lastRole(request) === 'tool' ? reply().text('part done') : reply().toolCall(childTool, {});
    }
    if (lastRole(request) === 'tool') return reply().text('all parts done');
    const r = reply();
    for (let i = 0; i < parts; i++) r.toolCall('agent', { prompt: `part ${i + 1}`, agent: 'general' });
    return r;
  };
}

describe('plan_gate', () => {
  it('a loop stop reshapes to plan_then_execute: the next run plans, with mutating tools withheld', async () => {
    const { app, provider } = await adaptiveApp(
      [
        reply().toolCall('echo', { text: 'same' }),
        reply().toolCall('echo', { text: 'same' }),
        reply().toolCall('echo', { text: 'same' }),
        reply().toolCall('echo', { text: 'same' }),
        reply().toolCall('set_plan_artifact', { markdown: '1. Change src/a.ts\n2. Run the tests' }),
        reply().text('Here is the plan; approve it to execute.'),
        reply().text('Executed the plan.'),
      ],
      {},
      { extraTools: [echoTool] },
    );
    const first = await app.agent.run({ prompt: 'Keep echoing' });
    expect(first.status).toBe('failed');
    expect(first.reason).toContain('loop detected');
    expect(toolNamesOf(provider.requests[0])).toEqual(expect.arrayContaining(['write', 'edit', 'bash']));
    const snapshot = await snapshotOf(app, first.session_id);
    expect(snapshot).toMatchObject({
      effective_genome: { choreography_preset: 'plan_then_execute', plan_gate: true },
      last_reshape_reason: 'loop_detected: 1 loop stop(s) in 1 run(s); plan first (plan_then_execute)',
    });
    expect((await app.sessions.get(first.session_id))?.metadata.workflow_phase).toBe('planning');

    const second = await app.agent.run({ prompt: 'Now do it', sessionId: first.session_id });
    expect(second.status).toBe('completed');
    const request = requestFor(provider, 'Now do it');
    const tools = toolNamesOf(request);
    for (const mutating of ['write', 'edit', 'multiedit', 'bash']) expect(tools).not.toContain(mutating);
    expect(tools).toEqual(expect.arrayContaining(['view', 'grep', 'set_plan_artifact']));
    expect(systemOf(request)).toContain('Plan first');
    // Approving the plan ends the gate for this genome: the next run executes with every tool.
    await invokeTool(app, 'approve_plan', { session_id: first.session_id }, { surface: 'cli' });
    expect((await app.sessions.get(first.session_id))?.metadata.workflow_phase).toBe('execute');
    await app.agent.run({ prompt: 'Execute it', sessionId: first.session_id });
    expect(toolNamesOf(requestFor(provider, 'Execute it'))).toEqual(
      expect.arrayContaining(['write', 'bash']),
    );
    expect((await app.sessions.get(first.session_id))?.metadata.workflow_phase).toBe('execute');
  });
});

describe('fan_out', () => {
  it('runs the sub-agents of one step in parallel', async () => {
    const { app, provider } = await adaptiveApp(
      Array(6).fill(fanOutResponder(2, 'rendezvous')),
      {},
      {
        extraTools: [rendezvous(2, 10_000)],
      },
    );
    const session = await app.agent.createSession({ metadata: { adaptive_preset: 'fan_out' } });
    const run = await app.agent.run({ prompt: 'Do both parts', sessionId: session.id, yolo: true });
    expect(run).toMatchObject({ status: 'completed', text: 'all parts done' });
    const childResults = provider.requests
      .filter((r) => isChild(r) && lastRole(r) === 'tool')
      .map((r) => (r.body.messages as { content: string }[]).at(-1)?.content);
    // Both sub-agents were inside the rendezvous at the same time.
    expect(childResults).toEqual(['together', 'together']);
    const spawn = (await invokeTool(
      app,
      'get_spawn_status',
      { session_id: session.id },
      { surface: 'agent' },
    )) as any;
    expect(spawn).toMatchObject({
      session_id: session.id,
      parallelism_limit: 4,
      limit_source: 'genome',
      choreography_preset: 'fan_out',
      parallel_calls: true,
      active_count: 0,
      totals: { children: 2, completed: 2, failed: 0 },
    });
    expect(spawn.recent_child_runs).toHaveLength(2);
    expect(spawn.recent_child_runs[0]).toMatchObject({
      parent_run_id: run.run_id,
      role: 'subagent',
      status: 'completed',
    });
  });

  it('without fan_out the sub-agents of one step run one at a time', async () => {
    const { app, provider } = await adaptiveApp(
      Array(6).fill(fanOutResponder(2, 'rendezvous')),
      {},
      {
        extraTools: [rendezvous(2, 300)],
      },
    );
    const session = await app.agent.createSession({ metadata: { adaptive_preset: 'solo' } });
    const run = await app.agent.run({ prompt: 'Do both parts', sessionId: session.id, yolo: true });
    expect(run.status).toBe('completed');
    const childResults = provider.requests
      .filter((r) => isChild(r) && lastRole(r) === 'tool')
      .map((r) => (r.body.messages as { content: string }[]).at(-1)?.content);
    expect(childResults[0]).toContain('alone at the rendezvous');
  });

  it('runs at most max_parallel_agents sub-agents at once', async () => {
    const { tool, state } = probe();
    const { app } = await adaptiveApp(
      Array(8).fill(fanOutResponder(3, 'probe')),
      { max_parallel_agents: 2 },
      { extraTools: [tool] },
    );
    const session = await app.agent.createSession({ metadata: { adaptive_preset: 'fan_out' } });
    const run = await app.agent.run({ prompt: 'Do three parts', sessionId: session.id, yolo: true });
    expect(run.status).toBe('completed');
    expect(state.peak).toBe(2);
    expect((await snapshotOf(app, session.id)).effective_genome.max_parallel_agents).toBe(2);
  });
});

describe('executor_reviewer', () => {
  it('a reviewer sub-agent checks the completed run and its findings reach the next prompt', async () => {
    const FINDING = 'FINDING-missing-null-check';
    const { app, provider } = await adaptiveApp([
      reply().text('Implemented the change.'),
      reply().text(`${FINDING} in src/a.ts:3\nVERDICT: changes_requested`),
      reply().text('Fixed it.'),
      reply().text('All good.\nVERDICT: approve'),
    ]);
    const session = await app.agent.createSession({ metadata: { adaptive_preset: 'executor_reviewer' } });
    const first = await app.agent.run({ prompt: 'Change the thing', sessionId: session.id });
    await app.adaptive!.idle();
    const reviewRequest = provider.requests[1];
    const reviewerPrompt = JSON.stringify(reviewRequest.body.messages.at(-1).content);
    expect(reviewerPrompt).toContain('You are the reviewer of an executor agent');
    expect(reviewerPrompt).toContain('Change the thing');
    expect(reviewerPrompt).toContain('Implemented the change.');
    // The reviewer is read-only: no mutating tools.
    expect(toolNamesOf(reviewRequest)).not.toContain('write');
    expect((await app.runs.events(first.run_id, { types: ['adaptive.review'] }))[0].payload).toMatchObject({
      status: 'changes_requested',
    });

    await app.agent.run({ prompt: 'Go on', sessionId: session.id });
    const next = systemOf(requestFor(provider, 'Go on'));
    expect(next).toContain('# Reviewer pass on your previous run');
    expect(next).toContain('Verdict: changes requested.');
    expect(next).toContain(FINDING);
    await app.adaptive!.idle();
    const spawn = (await invokeTool(
      app,
      'get_spawn_status',
      { session_id: session.id },
      { surface: 'agent' },
    )) as any;
    expect(spawn.reviewer_passes).toEqual({
      total: 2,
      running: 0,
      approved: 1,
      changes_requested: 1,
      failed: 0,
    });
    expect(spawn.recent_child_runs.map((r: any) => r.role)).toEqual(['reviewer', 'reviewer']);
    // The adaptive payload never holds the findings (model output).
    expect(JSON.stringify(await snapshotOf(app, session.id))).not.toContain(FINDING);
  });
});

describe('compaction_threshold', () => {
  it('token pressure lowers the session threshold and the next run compacts before its first step', async () => {
    const { app, events } = await adaptiveApp(
      [
        reply().text('a long answer').usage(750, 10),
        reply().text('Summary of the conversation so far.'),
        reply().text('continued'),
      ],
      { monitor: { token_pressure: 0.7, pressure_compaction_threshold: 0.5 } },
      { modelInfo: { context_window: 1000 }, options: { compaction_threshold: 0.95 } },
    );
    const first = await app.agent.run({ prompt: 'Say a lot' });
    const snapshot = await snapshotOf(app, first.session_id);
    expect(snapshot.effective_genome.compaction_threshold).toBe(0.5);
    expect(snapshot.last_reshape_reason).toBe(
      'token_pressure: the context reached 76% of the window (threshold 70%); compact at 50%',
    );
    // The config threshold (0.95) would not compact at 76%; the genome's (0.5) does.
    await app.agent.run({ prompt: 'Continue', sessionId: first.session_id });
    const compactions = events.filter(
      (e) => e.type === 'compaction.started' && e.session_id === first.session_id,
    );
    expect(compactions).toHaveLength(1);
    expect(compactions[0].payload).toMatchObject({ reason: 'auto' });
  });
});

describe('fleet_regulation_status', () => {
  it('counts genomes per preset, reshapes, evaluations and the monitor settings across sessions', async () => {
    const fail = () => reply().httpError(FAILURE_STATUS);
    const { app } = await adaptiveApp([
      reply().text('ok'),
      reply().text('ok'),
      fail(),
      fail(),
      reply().text('VERDICT: approve'),
    ]);
    const a = await app.agent.createSession({ metadata: { adaptive_preset: 'fan_out' } });
    await app.agent.run({ prompt: 'Say hi', sessionId: a.id });
    const b = await app.agent.run({ prompt: 'Say hi' });
    await app.agent.run({ prompt: 'Try', sessionId: b.session_id });
    await app.agent.run({ prompt: 'Try again', sessionId: b.session_id });
    const status = (await invokeTool(app, 'fleet_regulation_status', {}, { surface: 'agent' })) as any;
    expect(status).toEqual({
      schema_version: 1,
      enabled: true,
      implemented: true,
      classifier_mode: 'heuristic',
      monitor: { enabled: true, cadence: 1, window_runs: 4, regulatory_history_max_events: 32 },
      caps: {
        max_parallel_agents: 4,
        regulatory_history_per_response: 32,
        evaluation_retention_per_session: 256,
      },
      sessions: { total: 2, with_genome: 2, monitor_only: 0, cleared: 0, unreadable_genome: 0 },
      by_preset: { solo: 0, plan_then_execute: 0, executor_reviewer: 1, fan_out: 1 },
      by_topology: { single: 0, pipeline: 1, hub_and_spoke: 1 },
      by_classification_source: { override: 1, pack: 0, config: 0, heuristic: 1 },
      pending_reshapes: 0,
      pending: [],
      apply_errors: 0,
      reshapes_applied: 1,
      evaluations: { recorded: 4, skipped: 0 },
      efficacy: { improved: 0, unchanged: 0, regressed: 0, insufficient_evidence: 1 },
    });
  });
});
