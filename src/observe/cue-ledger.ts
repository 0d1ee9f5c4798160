/**
 * `run_cue_ledger` (GET /v1/sessions/{id}/run-cue-ledger): for every run of a session family, the
 * cue that started it and the cues that steered it while it ran, from the run ledger and the
 * session event log. No prompt text, no tool inputs or outputs: cue kinds, tools, decisions.
 *
 * Start cues come from `agent_runs.origin`: a surface (cli, http, tui, mcp, api, agent) is a user
 * prompt, unless the prompt waited in the session queue behind another run (then `queue`);
 * `subagent` → sub_agent, `fork` → fork, `schedule`/`scheduler` → schedule, `compat`/
 * `openai_compat` → compat, `autopilot` → autopilot, `queue` → queue; anything else → other.
 * @module
 */
import type { Redactor } from '../redact';
import type { AgentRun, RunEvent } from '../runs/run-ledger';
import { num, readoutHeader, resolveSessionScope, type SessionReadoutDeps, str } from './session-scope';

export const DEFAULT_CUE_RUNS_LIMIT = 50;
export const MAX_CUE_RUNS_LIMIT = 500;

export type StartCueKind =
  | 'user_prompt'
  | 'queue'
  | 'schedule'
  | 'sub_agent'
  | 'fork'
  | 'compat'
  | 'autopilot'
  | 'other';

export type CueKind =
  | 'cancel_request'
  | 'permission_ask'
  | 'permission_decision'
  | 'permission_auto_allow'
  | 'permission_unattended'
  | 'loop_stop'
  | 'compaction_start'
  | 'compaction'
  | 'compaction_failed'
  | 'provider_recovery'
  | 'error'
  | 'interrupted';

const SURFACE_ORIGINS = new Set(['cli', 'http', 'tui', 'mcp', 'api', 'agent', 'browser']);

export function startKindOf(origin: string): StartCueKind {
  if (SURFACE_ORIGINS.has(origin)) return 'user_prompt';
  switch (origin) {
    case 'queue':
      return 'queue';
    case 'subagent':
    case 'sub_agent':
      return 'sub_agent';
    case 'fork':
      return 'fork';
    case 'schedule':
    case 'scheduler':
      return 'schedule';
    case 'compat':
    case 'openai_compat':
    case 'openai-compat':
      return 'compat';
    case 'autopilot':
      return 'autopilot';
    default:
      return 'other';
  }
}

export interface Cue {
  kind: CueKind;
  at: number;
  /** run_ledger (agent_run_events) or session_events. */
  source: 'run_ledger' | 'session_events';
  detail: Record<string, unknown>;
}

const LEDGER_CUES = [
  'run.queued',
  'run.created',
  'run.started',
  'run.finished',
  'run.cancel_requested',
  'run.interrupted',
  'permission.requested',
  'permission.resolved',
  'permission.allowed',
  'permission.unattended',
  'loop.detected',
  'compaction.finished',
  'compaction.failed',
  'error',
];

const SESSION_CUES = ['state.changed', 'provider_recovery.changed', 'compaction.started'];

export async function buildRunCueLedger(
  app: SessionReadoutDeps,
  input: { session_id?: string; limit: number },
  contextSessionId?: string,
) {
  const scope = await resolveSessionScope(app, input.session_id, contextSessionId);
  const header = { ...readoutHeader(app, scope), filters_applied: { limit: input.limit } };
  if (!scope.session)
    return {
      ...header,
      family_session_id: null,
      total_runs: 0,
      runs: [],
      counts: emptyCounts(),
      warnings: scope.warnings,
    };

  const queries = app.runs.queries;
  const root = await app.sessions.root(scope.session.id);
  const total = await queries.count({ family_session_id: root });
  // The newest `limit` runs, shown oldest first.
  const runs = (await queries.ofFamily(root, { order: 'desc', limit: input.limit })).reverse();
  const ids = runs.map((r) => r.id);
  const ledger = ids.length ? await queries.findEvents({ runIds: ids, types: LEDGER_CUES }) : [];
  const sessionIds = [...new Set(runs.map((r) => r.session_id))];
  const logged = sessionIds.length
    ? await app.observe.queries.events.find({ sessionIds, types: SESSION_CUES })
    : [];

  const cues = new Map<string, Cue[]>(ids.map((id) => [id, []]));
  const add = (runId: string, cue: Cue) => cues.get(runId)?.push(cue);
  const marks = ledgerCues(app, ledger, add);
  for (const row of logged) {
    const p = row.payload;
    const runId = str(p.run_id);
    if (!runId || !cues.has(runId)) continue;
    const cue = (kind: CueKind, detail: Record<string, unknown>) =>
      add(runId, { kind, at: row.created_at, source: 'session_events', detail });
    if (row.type === 'state.changed' && p.state === 'cancelling') cue('cancel_request', { via: 'operator' });
    else if (row.type === 'compaction.started') cue('compaction_start', { reason: str(p.reason) });
    else if (row.type === 'provider_recovery.changed')
      cue('provider_recovery', {
        from: str(p.from),
        to: str(p.to),
        reason: reasonText(app, p.reason),
        attempt: num(p.attempt),
      });
  }

  const counts = emptyCounts();
  const view = runs.map((run) => {
    const behind = queuedBehind(run, runs, marks);
    const originKind = startKindOf(run.origin);
    const kind: StartCueKind = originKind === 'user_prompt' && behind ? 'queue' : originKind;
    const runCues = (cues.get(run.id) ?? []).sort((a, b) => a.at - b.at);
    counts.by_start_kind[kind] = (counts.by_start_kind[kind] ?? 0) + 1;
    for (const cue of runCues) counts.by_cue_kind[cue.kind] = (counts.by_cue_kind[cue.kind] ?? 0) + 1;
    return {
      run_id: run.id,
      session_id: run.session_id,
      parent_run_id: run.parent_run_id,
      agent: run.agent,
      status: run.status,
      created_at: run.created_at,
      started_at: run.started_at,
      finished_at: run.finished_at,
      start_cue: {
        kind,
        origin: run.origin,
        queued_behind_run_id: behind?.id ?? null,
        parent_run_id: run.parent_run_id,
      },
      cues: runCues,
      end: {
        status: run.status,
        reason: reasonText(app, run.reason),
        steps: run.steps,
      },
    };
  });
  return {
    ...header,
    family_session_id: root,
    total_runs: total,
    truncated: total > runs.length,
    runs: view,
    counts,
    warnings: scope.warnings,
  };
}

/** Ledger ids of a run's lifecycle marks. */
type Marks = Map<string, { queued?: number; started?: number; finished?: number }>;

/**
 * The cues of the run ledger's events, and each run's lifecycle marks: queue waits are decided on
 * the ledger's order, which holds even when two marks share a millisecond.
 */
function ledgerCues(
  app: { readonly redactor: Redactor },
  ledger: readonly RunEvent[],
  add: (runId: string, cue: Cue) => void,
): Marks {
  const marks: Marks = new Map();
  for (const row of ledger) {
    const p = row.payload;
    const mark = marks.get(row.run_id) ?? {};
    marks.set(row.run_id, mark);
    const cue = (kind: CueKind, detail: Record<string, unknown>) =>
      add(row.run_id, { kind, at: row.created_at, source: 'run_ledger', detail });
    switch (row.type) {
      case 'run.queued':
      case 'run.created':
        mark.queued ??= row.id;
        break;
      case 'run.started':
        mark.started ??= row.id;
        break;
      case 'run.finished':
        mark.finished ??= row.id;
        break;
      case 'run.cancel_requested':
        cue('cancel_request', { via: 'run_ledger', reason: reasonText(app, p.reason) });
        break;
      case 'run.interrupted':
        cue('interrupted', { reason: reasonText(app, p.reason) });
        break;
      case 'permission.requested':
        cue('permission_ask', { tool: str(p.tool), request_id: str(p.request_id) });
        break;
      case 'permission.resolved':
        cue('permission_decision', {
          tool: str(p.tool),
          request_id: str(p.request_id),
          decision: str(p.decision),
          by: str(p.by),
        });
        break;
      case 'permission.allowed':
        cue('permission_auto_allow', { tool: str(p.tool), via: str(p.via) });
        break;
      case 'permission.unattended':
        cue('permission_unattended', { tool: str(p.tool) });
        break;
      case 'loop.detected':
        cue('loop_stop', { tool: str(p.tool), repeats: num(p.repeats) });
        break;
      case 'compaction.finished':
        cue('compaction', { tokens_before: num(p.tokens_before), tokens_after: num(p.tokens_after) });
        break;
      case 'compaction.failed':
        cue('compaction_failed', { code: str(p.code) });
        break;
      case 'error':
        cue('error', { source: str(p.source), code: str(p.code) });
        break;
      default:
        break;
    }
  }
  return marks;
}

/** The run of the same session that was running when this one was queued, if any. */
function queuedBehind(run: AgentRun, runs: readonly AgentRun[], marks: Marks): AgentRun | undefined {
  const queued = marks.get(run.id)?.queued;
  if (queued === undefined) return undefined;
  return runs.find((other) => {
    if (other.id === run.id || other.session_id !== run.session_id) return false;
    const o = marks.get(other.id);
    return (
      o?.started !== undefined && o.started < queued && (o.finished === undefined || o.finished > queued)
    );
  });
}

function emptyCounts() {
  return { by_start_kind: {} as Record<string, number>, by_cue_kind: {} as Record<string, number> };
}

/** Reasons are svc's own words (never prompt text), still redacted and kept short. */
function reasonText(app: { readonly redactor: Redactor }, value: unknown): string | null {
  if (typeof value !== 'string' || !value) return null;
  const text = app.redactor.string(value);
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}
