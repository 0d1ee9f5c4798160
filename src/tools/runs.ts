/**
 * Runs family (the durable run ledger): list, get, events, phases, cancel (update_agent_run and
 * cancel_session_run), fork, delete; and the ledger readouts `inspect_run_trace`,
 * `run_ledger_status` and `list_recent_run_ledger_events`.
 * spec, Runs: `list_agent_runs` takes optional `session_id` and `family_session_id`; the latter
 * returns parent and child rows and wins when both are set. Without the run store, list and get
 * return errors.
 * @module
 */
import { z } from 'zod';
import { runView } from '../agent/views';
import { forkRun } from '../engine/fork';
import { SvcError } from '../errors';
import { RUN_STATUSES } from '../runs/run-ledger';
import { buildTrace, phaseSpans } from '../runs/run-trace';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import { workflowPhase } from '../sessions/session-views';
import { agentScope } from './agent-caller';
import { defineTool } from './core/define-tool';
import type { ToolHost } from './core/types';
import { route, SESSION_ROUTES } from './session-routes';

const runIdField = () => z.string().min(1).describe('Run id (run_…), from list_agent_runs.');

/** Reading the ledger needs the store; fail with the store's own reason when it is not there. */
function ledgerOf(app: ToolHost) {
  const available = app.runs.available();
  if (!available.ok) throw new SvcError('unavailable', available.reason);
  return app.runs;
}

export const listAgentRuns = defineTool({
  name: 'list_agent_runs',
  family: 'runs',
  tag: 'primitive',
  description:
    'Agent runs from the durable ledger, newest first. session_id: that session only; family_session_id: the root session and every sub-agent session under it (parent and child rows); when both are set, family_session_id wins.',
  input: () =>
    z.strictObject({
      session_id: sessionIdInput('none', 'Only runs of this session.'),
      family_session_id: z
        .string()
        .min(1)
        .optional()
        .describe('Runs of this session family (parent and child rows). Wins over session_id.'),
      status: z.array(z.enum(RUN_STATUSES)).optional().describe('Only runs with these statuses.'),
      limit: z.number().int().min(1).max(500).default(50).describe('Most runs to return.'),
      offset: z.number().int().min(0).default(0).describe('Runs to skip (paging).'),
    }),
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/agent-runs' },
    mcp: 'svc_list_agent_runs',
    cli: {
      command: 'runs list',
      text: (r: { runs: ReturnType<typeof runView>[] }) =>
        r.runs.length === 0
          ? 'no runs'
          : r.runs
              .map(
                (run) =>
                  `${run.id}  ${run.status.padEnd(11)} ${run.agent.padEnd(8)} ${run.session_id}  ${run.steps} steps  ${run.prompt_preview}`,
              )
              .join('\n'),
    },
  },
  run: async (ctx, input) => {
    const ledger = ledgerOf(ctx.app);
    const filter = {
      session_id: input.family_session_id ? undefined : input.session_id,
      family_session_id: input.family_session_id,
      status: input.status,
    };
    const runs = await ledger.list({ ...filter, limit: input.limit, offset: input.offset });
    return {
      filter: {
        applied: input.family_session_id ? 'family_session_id' : input.session_id ? 'session_id' : 'none',
        session_id: filter.session_id ?? null,
        family_session_id: filter.family_session_id ?? null,
        status: input.status ?? null,
      },
      runs: runs.map(runView),
      count: runs.length,
      total: await ledger.count(filter),
    };
  },
});

export const getAgentRun = defineTool({
  name: 'get_agent_run',
  family: 'runs',
  tag: 'primitive',
  description:
    'One run from the ledger: its row, its child (sub-agent) runs, its event count and its final answer.',
  input: () => z.strictObject({ run_id: runIdField() }),
  mutates: false,
  surfaces: {
    mcp: 'svc_get_agent_run',
    cli: { command: 'runs get', args: ['run_id'] },
    http: { method: 'GET', path: '/v1/agent-runs/:run_id', params: { run_id: 'run_id' } },
  },
  // The parity state has one completed run (test/parity.test.ts).
  examples: [{ run_id: 'run_0001' }],
  run: async (ctx, input) => {
    const ledger = ledgerOf(ctx.app);
    const run = await ledger.require(input.run_id);
    return {
      run: runView(run),
      children: (await ledger.list({ parent_run_id: run.id, limit: 500 })).map(runView),
      event_count: await ledger.eventCount(run.id),
      result_text: (await ctx.app.agent.result(run.id)).text,
    };
  },
});

export const getAgentRunEvents = defineTool({
  name: 'get_agent_run_events',
  family: 'runs',
  tag: 'primitive',
  description:
    'Ledger events of a run in order: phases, steps, tool calls, permission decisions, errors, and events tools append (local_shell_started, background_job_started, sandbox_exec_started).',
  input: () =>
    z.strictObject({
      run_id: runIdField(),
      after_seq: z
        .number()
        .int()
        .min(0)
        .default(0)
        .describe('Only events after this sequence number (paging).'),
      limit: z.number().int().min(1).max(5000).default(500).describe('Most events to return.'),
      type: z.array(z.string().min(1)).optional().describe('Only events of these types.'),
    }),
  mutates: false,
  surfaces: {
    mcp: 'svc_get_agent_run_events',
    http: { method: 'GET', path: '/v1/agent-runs/:run_id/events', params: { run_id: 'run_id' } },
  },
  // The parity state has one completed run (test/parity.test.ts).
  examples: [{ run_id: 'run_0001' }],
  run: async (ctx, input) => {
    const ledger = ledgerOf(ctx.app);
    await ledger.require(input.run_id);
    const events = await ledger.events(input.run_id, {
      afterSeq: input.after_seq,
      limit: input.limit,
      types: input.type,
    });
    return {
      run_id: input.run_id,
      events: events.map((e) => ({ seq: e.seq, type: e.type, payload: e.payload, created_at: e.created_at })),
      count: events.length,
      total: await ledger.eventCount(input.run_id),
      next_after_seq: events.length ? events[events.length - 1].seq : input.after_seq,
    };
  },
});

export const getSessionPhases = defineTool({
  name: 'get_session_phases',
  family: 'runs',
  tag: 'primitive',
  description:
    "A session's phases: its staged-workflow phase and history, and for each of its runs the phase spans (prompt, model steps, compaction) with timings.",
  input: () =>
    z.strictObject({
      session_id: sessionIdInput('current', 'Session id. Omit for your own or the current session.'),
      limit: z.number().int().min(1).max(200).default(20).describe('Most recent runs to include.'),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_get_session_phases' },
  examples: [{ session_id: 'ses_0001' }],
  run: async (ctx, input) => {
    const { app } = ctx;
    const ledger = ledgerOf(app);
    const session = (await resolveSession(app, input, { onMissing: 'current', context: ctx.sessionId }))
      .session;
    const runs = await ledger.list({ session_id: session.id, limit: input.limit });
    return {
      session_id: session.id,
      workflow_phase: workflowPhase(session),
      workflow_history: Array.isArray(session.metadata.workflow_history)
        ? session.metadata.workflow_history
        : [],
      runs: await Promise.all(
        runs.map(async (run) => ({
          run_id: run.id,
          status: run.status,
          agent: run.agent,
          phases: phaseSpans(await ledger.events(run.id, { types: ['phase'] }), run),
        })),
      ),
    };
  },
});

export const updateAgentRun = defineTool({
  name: 'update_agent_run',
  family: 'runs',
  tag: 'primitive',
  description:
    'Act on a run. The only action is cancel, for an active run: a queued run leaves the queue, a running one stops (in another process within about a second).',
  input: () =>
    z.strictObject({
      run_id: runIdField(),
      action: z.string().min(1).describe('What to do; the only supported action is "cancel".'),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_update_agent_run', cli: { command: 'runs update', args: ['run_id', 'action'] } },
  // An action, not a read: nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    if (input.action !== 'cancel') {
      throw new SvcError(
        'invalid_input',
        `action: "${input.action}" is not supported; the only action is "cancel" (for queued or running runs)`,
      );
    }
    const ledger = ledgerOf(app);
    const before = await ledger.require(input.run_id);
    if (ctx.runId === before.id) {
      throw new SvcError('invalid_input', 'run_id: a run cannot cancel itself; finish your answer instead');
    }
    await agentScope(ctx, before.session_id, 'cancel the runs of');
    const after = await app.agent.cancelRun(before.id, `cancelled with update_agent_run (${ctx.surface})`);
    return {
      run_id: before.id,
      action: 'cancel',
      previous_status: before.status,
      status: after.status,
      outcome:
        before.status === 'queued'
          ? 'dequeued'
          : after.status === 'running'
            ? 'cancel_requested'
            : 'cancelled',
    };
  },
});

export const cancelSessionRun = defineTool({
  name: 'cancel_session_run',
  family: 'runs',
  tag: 'primitive',
  description:
    "Cancel a session's active run (the current session, or the one named), and with clear_queue its queued prompts too.",
  input: () =>
    z.strictObject({
      session_id: sessionIdInput('client-current'),
      clear_queue: z.boolean().default(false).describe('Also drop the queued prompts.'),
    }),
  mutates: false,
  surfaces: {
    mcp: 'svc_cancel_session_run',
    cli: { command: 'session cancel' },
    http: { ...route(SESSION_ROUTES.cancel), params: { id: 'session_id' } },
  },
  // An action, not a read: nothing for the parity walker to compare.
  parity: false,
  run: async (ctx, input) => {
    const { app } = ctx;
    const session = (await resolveSession(app, input, { onMissing: 'client-current' })).session;
    if (ctx.sessionId === session.id && ctx.runId) {
      throw new SvcError(
        'invalid_input',
        'session_id: a run cannot cancel itself; finish your answer instead',
      );
    }
    await agentScope(ctx, session.id, 'cancel the runs of');
    const outcome = await app.agent.cancel(session.id, {
      clearQueue: input.clear_queue,
      reason: `cancelled with cancel_session_run (${ctx.surface})`,
    });
    return { session_id: session.id, ...outcome };
  },
});

export const forkAgentRun = defineTool({
  name: 'fork_agent_run',
  family: 'runs',
  tag: 'primitive',
  description:
    "Fork a run: a new session holding a copy of the run's session history up to the end of that run, to continue from there on another path.",
  input: () =>
    z.strictObject({
      run_id: runIdField(),
      title: z.string().max(200).optional().describe('Title of the new session. Default: "fork of <title>".'),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_fork_agent_run' },
  // Calls change state (sessions, runs, plans): nothing for the parity walker to compare.
  parity: false,
  // The engine's fork (src/engine/fork.ts) without a step: up to the end of the run.
  run: async (ctx, input) => {
    const source = await ctx.app.runs.get(input.run_id);
    if (source) await agentScope(ctx, source.session_id, 'fork the runs of');
    return await forkRun({ runs: ledgerOf(ctx.app), sessions: ctx.app.sessions }, input.run_id, {
      title: input.title,
    });
  },
});

export const deleteAgentRun = defineTool({
  name: 'delete_agent_run',
  family: 'runs',
  tag: 'primitive',
  description:
    'Delete a run from the ledger with its events and its sub-agent runs (the session messages stay). Refused for an active run: cancel it first.',
  input: () => z.strictObject({ run_id: runIdField() }),
  mutates: true,
  surfaces: { mcp: 'svc_delete_agent_run', cli: { command: 'runs delete', args: ['run_id'] } },
  run: async (ctx, input) => {
    const ledger = ledgerOf(ctx.app);
    const run = await ledger.require(input.run_id);
    if (run.status === 'queued' || run.status === 'running') {
      throw new SvcError(
        'conflict',
        `run ${run.id} is ${run.status}; cancel it first (update_agent_run action cancel)`,
      );
    }
    const deleted = await ledger.delete(run.id);
    return { deleted, count: deleted.length };
  },
});

export const inspectRunTrace = defineTool({
  name: 'inspect_run_trace',
  family: 'status',
  tag: 'primitive',
  description:
    "A run's trace from the ledger: phases, model steps with their tool calls and timings, permission decisions, errors, events tools appended, and child runs.",
  input: () => z.strictObject({ run_id: runIdField() }),
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/agent-runs/:run_id/trace', params: { run_id: 'run_id' } },
    mcp: 'svc_inspect_run_trace',
  },
  // The parity state has one completed run (test/parity.test.ts).
  examples: [{ run_id: 'run_0001' }],
  run: async (ctx, input) => {
    const ledger = ledgerOf(ctx.app);
    const run = await ledger.require(input.run_id);
    const trace = await buildTrace(ledger, run);
    return { run: runView(run), ...trace, children: trace.children.map(runView) };
  },
});

export const runLedgerStatus = defineTool({
  name: 'run_ledger_status',
  family: 'status',
  tag: 'primitive',
  description:
    'Posture of the durable run ledger: whether the store is available (and why not), run counts by status, active and queued runs, runs recovered as interrupted at start, and the compat ledger setting.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/run-ledger/posture' },
    mcp: 'svc_run_ledger_status',
    cli: { command: 'config show-run-ledger' },
  },
  run: async (ctx) => {
    const { app } = ctx;
    const compat = app.config.options.openai_compat;
    const compatLedger = { configured: compat !== undefined, enabled: compat?.ledger ?? false };
    const available = app.runs.available();
    if (!available.ok) {
      return {
        store: { kind: 'sqlite', available: false, path: null, reason: available.reason },
        durable: false,
        compat_ledger: compatLedger,
      };
    }
    const ledger = app.runs;
    const byStatus = Object.fromEntries(
      await Promise.all(RUN_STATUSES.map(async (s) => [s, await ledger.count({ status: [s] })] as const)),
    );
    const active = await ledger.list({ status: ['running'], limit: 100 });
    return {
      store: { kind: 'sqlite', available: true, path: available.path, reason: null },
      durable: true,
      runs: { total: await ledger.count(), by_status: byStatus },
      events_total: await ledger.eventCount(),
      active: active.map((r) => ({
        run_id: r.id,
        session_id: r.session_id,
        pid: r.pid,
        owned_here: r.runner === ledger.owner.runner,
        started_at: r.started_at,
      })),
      queued_total: byStatus.queued,
      recovered_at_start: (await ledger.recovered()).map((r) => ({
        run_id: r.id,
        session_id: r.session_id,
        reason: r.reason,
      })),
      compat_ledger: compatLedger,
    };
  },
});

export const listRecentRunLedgerEvents = defineTool({
  name: 'list_recent_run_ledger_events',
  family: 'status',
  tag: 'primitive',
  description:
    'The most recent run ledger events across runs (newest first), optionally of one session or type.',
  input: () =>
    z.strictObject({
      limit: z.number().int().min(1).max(1000).default(50).describe('Most events to return.'),
      session_id: sessionIdInput('none', 'Only events of this session.'),
      type: z
        .string()
        .min(1)
        .optional()
        .describe('Only events of this type (e.g. tool.finished, local_shell_started).'),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_list_recent_run_ledger_events' },
  run: async (ctx, input) => {
    const events = await ledgerOf(ctx.app).recentEvents({
      limit: input.limit,
      sessionId: input.session_id,
      type: input.type,
    });
    return {
      events: events.map((e) => ({
        run_id: e.run_id,
        session_id: e.session_id,
        seq: e.seq,
        type: e.type,
        payload: e.payload,
        created_at: e.created_at,
      })),
      count: events.length,
    };
  },
});

export const runTools = [
  listAgentRuns,
  getAgentRun,
  getAgentRunEvents,
  getSessionPhases,
  updateAgentRun,
  cancelSessionRun,
  forkAgentRun,
  deleteAgentRun,
  inspectRunTrace,
  runLedgerStatus,
  listRecentRunLedgerEvents,
];
