/**
 * `session_observability` (GET /v1/sessions/{id}/observability): one session's operational
 * picture, computed from the run ledger (`agent_runs`, `agent_run_events`), the session event log
 * (`session_events`), file history and the session queue. Metadata only: no prompt text, no
 * tool inputs or outputs.
 * @module
 */
import type { EventLogQueries } from '../events/log-queries';
import type { Redactor } from '../redact';
import { type AgentRun, RUN_STATUSES, type RunEvent, type RunStatus } from '../runs/run-ledger';
import type { Session } from '../sessions/session-store';
import {
  type Distribution,
  distribution,
  familyIds,
  num,
  ratio,
  readoutHeader,
  resolveSessionScope,
  round,
  type SessionReadoutDeps,
  str,
} from './session-scope';

export const DEFAULT_RECENT_RUNS_LIMIT = 5;
export const MAX_RECENT_RUNS_LIMIT = 100;

export interface RunSummary {
  run_id: string;
  parent_run_id: string | null;
  status: RunStatus;
  agent: string;
  model: string | null;
  origin: string;
  steps: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
  reason: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  duration_ms: number | null;
}

const EVENT_TYPES = [
  'tool.finished',
  'phase',
  'step.finished',
  'permission.requested',
  'permission.resolved',
  'permission.allowed',
  'permission.unattended',
  'loop.detected',
  'compaction.failed',
  'error',
  'run.cancel_requested',
];

export function runSummary(app: { readonly redactor: Redactor }, run: AgentRun): RunSummary {
  return {
    run_id: run.id,
    parent_run_id: run.parent_run_id,
    status: run.status,
    agent: run.agent,
    model: run.model,
    origin: run.origin,
    steps: run.steps,
    input_tokens: run.usage.input_tokens,
    output_tokens: run.usage.output_tokens,
    cost: run.cost,
    reason: run.reason === null ? null : app.redactor.string(run.reason),
    created_at: run.created_at,
    started_at: run.started_at,
    finished_at: run.finished_at,
    duration_ms:
      run.started_at !== null && run.finished_at !== null ? run.finished_at - run.started_at : null,
  };
}

export async function buildSessionObservability(
  app: SessionReadoutDeps,
  input: { session_id?: string; recent_runs_limit: number },
  contextSessionId?: string,
) {
  const scope = await resolveSessionScope(app, input.session_id, contextSessionId);
  const header = {
    ...readoutHeader(app, scope),
    filters_applied: { recent_runs_limit: input.recent_runs_limit },
  };
  const session = scope.session;
  if (!session) return { ...header, family_session_id: null, warnings: scope.warnings };

  const runs = await app.runs.queries.ofSession(session.id);
  const totals = runTotals(runs);
  const activity = runActivity(
    await app.runs.queries.findEvents({ types: EVENT_TYPES, sessionId: session.id }),
  );
  const compactions = await compactionsOf(
    app.observe.queries.events,
    session.id,
    activity.compactionFailures,
  );
  const context = await contextUsageOf(app.observe.queries.events, session.id);
  const family = await familyIds(app, session);
  // Sub-agent work below this session: its descendants (not its parent or siblings).
  const descendants = (await app.sessions.family(session.id)).filter((s) => s.id !== session.id);
  const familyRuns = await app.runs.queries.statusCountsOf(descendants.map((s) => s.id));

  const state = await app.agent.state(session.id);
  const warnings = [...scope.warnings];
  const threshold = app.config.options.compaction_threshold;
  if (context.ratio !== null && context.ratio >= threshold)
    warnings.push(
      `context_pressure: the last step used ${Math.round(context.ratio * 100)}% of the context window (compaction threshold ${Math.round(threshold * 100)}%)`,
    );
  if (activity.permissions.unanswered > 0)
    warnings.push(
      `permissions_unanswered: ${activity.permissions.unanswered} permission request(s) have no answer`,
    );

  return {
    ...header,
    family_session_id: family.root,
    state: {
      state: state.state,
      active_run_id: state.run_id ?? state.busy_elsewhere?.run_id ?? null,
      busy_elsewhere: state.busy_elsewhere !== null,
      workflow_phase:
        typeof session.metadata.workflow_phase === 'string' ? session.metadata.workflow_phase : 'none',
    },
    queue_length: state.queue_length,
    runs: {
      total: runs.length,
      by_status: totals.byStatus,
      by_origin: totals.byOrigin,
      recent: runs.slice(0, input.recent_runs_limit).map((run) => runSummary(app, run)),
      recent_truncated: runs.length > input.recent_runs_limit,
    },
    tokens: totals.tokens,
    cost: round(totals.cost, 6),
    tool_calls: toolCallsOf(activity.tools),
    steps: {
      total: runs.reduce((sum, run) => sum + run.steps, 0),
      latency_ms: durationSummary(distribution(activity.stepLatencies)),
    },
    compactions,
    context: context.view,
    permissions: activity.permissions,
    interventions: {
      loop_stops: activity.loopStops,
      cancel_requests: activity.cancelRequests,
      provider_recoveries: await app.observe.queries.events.count({
        sessionId: session.id,
        type: 'provider_recovery.changed',
      }),
      errors_by_source: activity.errorsBySource,
    },
    file_changes: await fileChangesOf(app, session),
    family: {
      child_sessions: descendants.length,
      sub_agent_runs: familyRuns.reduce((sum, r) => sum + r.n, 0),
      sub_agent_runs_by_status: Object.fromEntries(familyRuns.map((r) => [r.status, r.n])),
    },
    warnings,
  };
}

function runTotals(runs: readonly AgentRun[]) {
  const byStatus = Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])) as Record<RunStatus, number>;
  const byOrigin: Record<string, number> = {};
  const tokens = { input: 0, output: 0, reasoning: 0, cached_input: 0, total: 0 };
  let cost = 0;
  for (const run of runs) {
    byStatus[run.status]++;
    byOrigin[run.origin] = (byOrigin[run.origin] ?? 0) + 1;
    tokens.input += run.usage.input_tokens;
    tokens.output += run.usage.output_tokens;
    tokens.reasoning += run.usage.reasoning_tokens;
    tokens.cached_input += run.usage.cached_input_tokens;
    cost += run.cost;
  }
  tokens.total = tokens.input + tokens.output;
  return { byStatus, byOrigin, tokens, cost };
}

type ToolStats = Map<string, { calls: number; errors: number; durations: number[] }>;

/** Tool calls, step latencies, permissions and interventions from the run ledger's events. */
function runActivity(events: readonly RunEvent[]) {
  // Tool calls: counts, errors and durations per tool (from tool.finished).
  const tools: ToolStats = new Map();
  // Steps: latency from the model phase of a step to its step.finished.
  const stepStarts = new Map<string, number>();
  const stepLatencies: number[] = [];
  const permissions = {
    asked: 0,
    approved: 0,
    denied: 0,
    auto_allowed: 0,
    auto_allowed_by: {} as Record<string, number>,
    unattended_denials: 0,
    unanswered: 0,
  };
  const asked = new Set<string>();
  const counts = { loopStops: 0, compactionFailures: 0, cancelRequests: 0 };
  const errorsBySource: Record<string, number> = {};
  for (const event of events) {
    const p = event.payload;
    switch (event.type) {
      case 'tool.finished': {
        const name = str(p.tool) ?? 'unknown';
        let entry = tools.get(name);
        if (!entry) {
          entry = { calls: 0, errors: 0, durations: [] };
          tools.set(name, entry);
        }
        entry.calls++;
        if (p.is_error === true) entry.errors++;
        const ms = num(p.duration_ms);
        if (ms !== null) entry.durations.push(ms);
        break;
      }
      case 'phase':
        if (p.phase === 'model' && num(p.step) !== null)
          stepStarts.set(`${event.run_id}:${p.step}`, event.created_at);
        break;
      case 'step.finished': {
        const started = stepStarts.get(`${event.run_id}:${p.step}`);
        if (started !== undefined) stepLatencies.push(event.created_at - started);
        break;
      }
      case 'permission.requested':
        permissions.asked++;
        if (str(p.request_id)) asked.add(p.request_id as string);
        break;
      case 'permission.resolved':
        if (p.decision === 'deny') permissions.denied++;
        else permissions.approved++;
        if (str(p.request_id)) asked.delete(p.request_id as string);
        break;
      case 'permission.allowed': {
        permissions.auto_allowed++;
        const via = str(p.via) ?? 'unknown';
        permissions.auto_allowed_by[via] = (permissions.auto_allowed_by[via] ?? 0) + 1;
        break;
      }
      case 'permission.unattended':
        permissions.unattended_denials++;
        break;
      case 'loop.detected':
        counts.loopStops++;
        break;
      case 'compaction.failed':
        counts.compactionFailures++;
        break;
      case 'run.cancel_requested':
        counts.cancelRequests++;
        break;
      case 'error': {
        const source = str(p.source) ?? 'unknown';
        errorsBySource[source] = (errorsBySource[source] ?? 0) + 1;
        break;
      }
      default:
        break;
    }
  }
  permissions.unanswered = asked.size;
  return { tools, stepLatencies, permissions, errorsBySource, ...counts };
}

function toolCallsOf(tools: ToolStats) {
  const allDurations: number[] = [];
  let totalCalls = 0;
  let totalErrors = 0;
  const byTool = [...tools.entries()]
    .map(([tool, t]) => {
      totalCalls += t.calls;
      totalErrors += t.errors;
      allDurations.push(...t.durations);
      return {
        tool,
        calls: t.calls,
        errors: t.errors,
        error_rate: ratio(t.errors, t.calls),
        duration_ms: durationSummary(distribution(t.durations)),
      };
    })
    .sort((a, b) => b.calls - a.calls || a.tool.localeCompare(b.tool));
  return {
    total: totalCalls,
    errors: totalErrors,
    error_rate: ratio(totalErrors, totalCalls),
    duration_ms: durationSummary(distribution(allDurations)),
    by_tool: byTool,
  };
}

async function compactionsOf(events: EventLogQueries, sessionId: string, failed: number) {
  const logged = async (type: string) => await events.find({ sessionId, types: [type] });
  const starts = await logged('compaction.started');
  const ends = await logged('compaction.finished');
  const startedBy: Record<string, number> = {};
  for (const row of starts) {
    const reason = str(row.payload.reason) ?? 'unknown';
    startedBy[reason] = (startedBy[reason] ?? 0) + 1;
  }
  const last = ends.at(-1);
  return {
    count: ends.length,
    started_by: startedBy,
    failed,
    last: last
      ? {
          at: last.created_at,
          tokens_before: num(last.payload.tokens_before),
          tokens_after: num(last.payload.tokens_after),
        }
      : null,
  };
}

/** The last `context.usage` of the session; `ratio` is null when the window is unknown. */
async function contextUsageOf(events: EventLogQueries, sessionId: string) {
  const last = (await events.find({ sessionId, types: ['context.usage'], order: 'desc', limit: 1 }))[0];
  const usage = last?.payload ?? {};
  // A model of unknown window reports ratio 0: that is "unknown", not "empty".
  const window = num(usage.context_window);
  const lastRatio = window ? num(usage.ratio) : null;
  return {
    ratio: lastRatio,
    view: last
      ? {
          last_usage_ratio: lastRatio,
          last_input_tokens: num(usage.input_tokens),
          context_window: window || null,
          run_id: str(usage.run_id),
          at: last.created_at,
        }
      : { last_usage_ratio: null, last_input_tokens: null, context_window: null, run_id: null, at: null },
  };
}

async function fileChangesOf(app: Pick<SessionReadoutDeps, 'ws' | 'redactor'>, session: Session) {
  const files = await app.ws.history.queries.sessionFileChanges(session.id);
  return {
    total: files.by_change.reduce((sum, f) => sum + f.n, 0),
    distinct_paths: files.distinct_paths,
    by_change: Object.fromEntries(
      ['create', 'modify', 'delete'].map((c) => [c, files.by_change.find((f) => f.change === c)?.n ?? 0]),
    ),
    recent_paths: files.recent_paths.map((p) => app.redactor.string(p)),
  };
}

/** Durations without the sample-size noise of p99 on small samples. */
function durationSummary(d: Distribution) {
  return { count: d.count, p50: d.p50, p90: d.p90, p95: d.p95, p99: d.p99, max: d.max, avg: d.avg };
}
