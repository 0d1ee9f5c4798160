/**
 * `session_observability` (GET /v1/sessions/{id}/observability): one session's operational
 * picture, computed from the run ledger (`agent_runs`, `agent_run_events`), the session event log
 * (`session_events`), file history and the session queue. Metadata only: no prompt text, no
 * tool inputs or outputs.
 * @module
 */
import type { App } from '../app';
import { RUN_STATUSES, type RunStatus } from '../runs/run-ledger';
import {
  type Distribution,
  distribution,
  familyIds,
  num,
  payloadOf,
  placeholders,
  ratio,
  readoutHeader,
  resolveSessionScope,
  round,
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

interface RunRow {
  id: string;
  parent_run_id: string | null;
  status: RunStatus;
  agent: string;
  model: string | null;
  origin: string;
  steps: number;
  input_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  cached_input_tokens: number;
  cost: number;
  reason: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

interface EventRow {
  run_id: string;
  type: string;
  payload: string;
  created_at: number;
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

export function runSummary(app: App, run: RunRow): RunSummary {
  return {
    run_id: run.id,
    parent_run_id: run.parent_run_id,
    status: run.status,
    agent: run.agent,
    model: run.model,
    origin: run.origin,
    steps: run.steps,
    input_tokens: run.input_tokens,
    output_tokens: run.output_tokens,
    cost: run.cost,
    reason: run.reason === null ? null : app.redactor.string(run.reason),
    created_at: run.created_at,
    started_at: run.started_at,
    finished_at: run.finished_at,
    duration_ms:
      run.started_at !== null && run.finished_at !== null ? run.finished_at - run.started_at : null,
  };
}

export function buildSessionObservability(
  app: App,
  input: { session_id?: string; recent_runs_limit: number },
  contextSessionId?: string,
) {
  const scope = resolveSessionScope(app, input.session_id, contextSessionId);
  const header = {
    ...readoutHeader(app, scope),
    filters_applied: { recent_runs_limit: input.recent_runs_limit },
  };
  const session = scope.session;
  if (!session) return { ...header, family_session_id: null, warnings: scope.warnings };

  const db = app.db;
  const runs = db
    .prepare('SELECT * FROM agent_runs WHERE session_id = ? ORDER BY created_at DESC, rowid DESC')
    .all(session.id) as RunRow[];
  const byStatus = Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])) as Record<RunStatus, number>;
  const byOrigin: Record<string, number> = {};
  const tokens = { input: 0, output: 0, reasoning: 0, cached_input: 0, total: 0 };
  let cost = 0;
  for (const run of runs) {
    byStatus[run.status]++;
    byOrigin[run.origin] = (byOrigin[run.origin] ?? 0) + 1;
    tokens.input += run.input_tokens;
    tokens.output += run.output_tokens;
    tokens.reasoning += run.reasoning_tokens;
    tokens.cached_input += run.cached_input_tokens;
    cost += run.cost;
  }
  tokens.total = tokens.input + tokens.output;

  const events = db
    .prepare(
      `SELECT run_id, type, payload, created_at FROM agent_run_events
         WHERE session_id = ? AND type IN (${placeholders(EVENT_TYPES.length)}) ORDER BY id`,
    )
    .all(session.id, ...EVENT_TYPES) as EventRow[];

  // Tool calls: counts, errors and durations per tool (from tool.finished).
  const tools = new Map<string, { calls: number; errors: number; durations: number[] }>();
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
  let loopStops = 0;
  let compactionFailures = 0;
  let cancelRequests = 0;
  const errorsBySource: Record<string, number> = {};
  for (const event of events) {
    const p = payloadOf(event.payload);
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
        loopStops++;
        break;
      case 'compaction.failed':
        compactionFailures++;
        break;
      case 'run.cancel_requested':
        cancelRequests++;
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

  const sessionEvents = (type: string) =>
    db
      .prepare('SELECT payload, created_at FROM session_events WHERE session_id = ? AND type = ? ORDER BY id')
      .all(session.id, type) as { payload: string; created_at: number }[];
  const compactionStarts = sessionEvents('compaction.started');
  const compactionEnds = sessionEvents('compaction.finished');
  const startedBy: Record<string, number> = {};
  for (const row of compactionStarts) {
    const reason = str(payloadOf(row.payload).reason) ?? 'unknown';
    startedBy[reason] = (startedBy[reason] ?? 0) + 1;
  }
  const lastCompaction = compactionEnds.at(-1);
  const lastCompactionPayload = payloadOf(lastCompaction?.payload);
  const usageRow = db
    .prepare(
      "SELECT payload, created_at FROM session_events WHERE session_id = ? AND type = 'context.usage' ORDER BY id DESC LIMIT 1",
    )
    .get(session.id) as { payload: string; created_at: number } | undefined;
  const usage = payloadOf(usageRow?.payload);
  // A model of unknown window reports ratio 0: that is "unknown", not "empty".
  const window = num(usage.context_window);
  const recoveries = (
    db
      .prepare(
        "SELECT count(*) AS n FROM session_events WHERE session_id = ? AND type = 'provider_recovery.changed'",
      )
      .get(session.id) as { n: number }
  ).n;

  const files = db
    .prepare(
      'SELECT change, count(*) AS n, count(DISTINCT path) AS paths FROM file_history WHERE session_id = ? GROUP BY change',
    )
    .all(session.id) as { change: string; n: number; paths: number }[];
  const distinctPaths = (
    db.prepare('SELECT count(DISTINCT path) AS n FROM file_history WHERE session_id = ?').get(session.id) as {
      n: number;
    }
  ).n;
  const recentPaths = (
    db
      .prepare(
        'SELECT path, max(id) AS last FROM file_history WHERE session_id = ? GROUP BY path ORDER BY last DESC LIMIT 10',
      )
      .all(session.id) as { path: string }[]
  ).map((r) => r.path);

  const family = familyIds(app, session);
  // Sub-agent work below this session: its descendants (not its parent or siblings).
  const descendants = app.sessions.family(session.id).filter((s) => s.id !== session.id);
  const otherIds = descendants.map((s) => s.id);
  const familyRuns = otherIds.length
    ? (db
        .prepare(
          `SELECT status, count(*) AS n FROM agent_runs WHERE session_id IN (${placeholders(otherIds.length)}) GROUP BY status`,
        )
        .all(...otherIds) as { status: string; n: number }[])
    : [];

  const state = app.agent.state(session.id);
  const warnings = [...scope.warnings];
  const lastRatio = window ? num(usage.ratio) : null;
  if (lastRatio !== null && lastRatio >= app.config.options.compaction_threshold)
    warnings.push(
      `context_pressure: the last step used ${Math.round(lastRatio * 100)}% of the context window (compaction threshold ${Math.round(app.config.options.compaction_threshold * 100)}%)`,
    );
  if (permissions.unanswered > 0)
    warnings.push(`permissions_unanswered: ${permissions.unanswered} permission request(s) have no answer`);

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
      by_status: byStatus,
      by_origin: byOrigin,
      recent: runs.slice(0, input.recent_runs_limit).map((run) => runSummary(app, run)),
      recent_truncated: runs.length > input.recent_runs_limit,
    },
    tokens,
    cost: round(cost, 6),
    tool_calls: {
      total: totalCalls,
      errors: totalErrors,
      error_rate: ratio(totalErrors, totalCalls),
      duration_ms: durationSummary(distribution(allDurations)),
      by_tool: byTool,
    },
    steps: {
      total: runs.reduce((sum, run) => sum + run.steps, 0),
      latency_ms: durationSummary(distribution(stepLatencies)),
    },
    compactions: {
      count: compactionEnds.length,
      started_by: startedBy,
      failed: compactionFailures,
      last: lastCompaction
        ? {
            at: lastCompaction.created_at,
            tokens_before: num(lastCompactionPayload.tokens_before),
            tokens_after: num(lastCompactionPayload.tokens_after),
          }
        : null,
    },
    context: usageRow
      ? {
          last_usage_ratio: lastRatio,
          last_input_tokens: num(usage.input_tokens),
          context_window: window || null,
          run_id: str(usage.run_id),
          at: usageRow.created_at,
        }
      : { last_usage_ratio: null, last_input_tokens: null, context_window: null, run_id: null, at: null },
    permissions,
    interventions: {
      loop_stops: loopStops,
      cancel_requests: cancelRequests,
      provider_recoveries: recoveries,
      errors_by_source: errorsBySource,
    },
    file_changes: {
      total: files.reduce((sum, f) => sum + f.n, 0),
      distinct_paths: distinctPaths,
      by_change: Object.fromEntries(
        ['create', 'modify', 'delete'].map((c) => [c, files.find((f) => f.change === c)?.n ?? 0]),
      ),
      recent_paths: recentPaths.map((p) => app.redactor.string(p)),
    },
    family: {
      child_sessions: descendants.length,
      sub_agent_runs: familyRuns.reduce((sum, r) => sum + r.n, 0),
      sub_agent_runs_by_status: Object.fromEntries(familyRuns.map((r) => [r.status, r.n])),
    },
    warnings,
  };
}

/** Durations without the sample-size noise of p99 on small samples. */
function durationSummary(d: Distribution) {
  return { count: d.count, p50: d.p50, p90: d.p90, p95: d.p95, p99: d.p99, max: d.max, avg: d.avg };
}
