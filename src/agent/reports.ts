/**
 * Read models for `svc session diagnose|status`, `svc stats` and `svc logs`: computed from the
 * database, the ledger and the log file, never from canned data.
 * @module
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError, toSvcError } from '../errors';
import { rotatedLogFiles } from '../log';
import { resolveSession } from '../sessions/resolve-session';
import type { SessionStore } from '../sessions/session-store';
import { sessionView, workflowPhase } from '../sessions/session-views';
import type { AgentHost } from './deps';
import { historyMessages } from './history';
import type { AgentService } from './types';

/** What the reports read: the agent's host and the agent's own read models. */
export type ReportHost = Omit<AgentHost, 'sessions'> & {
  readonly sessions: SessionStore;
  readonly agent: Pick<AgentService, 'kinds' | 'state' | 'currentSession'>;
};

export interface Check {
  name: string;
  status: 'ok' | 'warn' | 'error';
  detail: string;
}

/**
 * Diagnose a session: the one named, else the calling run's, else the current one, else the most
 * recent one.
 */
export async function diagnoseSession(app: ReportHost, sessionId?: string, contextSessionId?: string) {
  const ledger = app.runs.available();
  const checks: Check[] = [
    ledger.ok
      ? { name: 'run_ledger', status: 'ok', detail: `durable run store at ${ledger.path}` }
      : { name: 'run_ledger', status: 'error', detail: ledger.reason },
  ];
  if (!ledger.ok) return { session_id: null, ok: false, session: null, checks };
  const { session } = await resolveSession(
    app,
    { session_id: sessionId },
    { onMissing: 'most-recent', context: contextSessionId },
  );
  if (!session) {
    checks.push({
      name: 'session',
      status: 'warn',
      detail: 'no sessions yet; start one with svc run "<prompt>"',
    });
    checks.push(await modelCheck(app, null, 'build'));
    return { session_id: null, ok: !checks.some((c) => c.status === 'error'), session: null, checks };
  }
  const state = await app.agent.state(session.id);
  checks.push({
    name: 'state',
    status: 'ok',
    detail: state.busy_elsewhere
      ? `running in another process (run ${state.busy_elsewhere.run_id}, pid ${state.busy_elsewhere.pid ?? '?'})`
      : state.run_id
        ? `${state.state} (run ${state.run_id})`
        : state.state,
  });
  const runs = await app.runs.list({ session_id: session.id, limit: 200 });
  const last = runs[0];
  const interrupted = runs.filter((r) => r.status === 'interrupted');
  const failed = runs.filter((r) => r.status === 'failed');
  checks.push(
    !last
      ? { name: 'last_run', status: 'ok', detail: 'no runs yet' }
      : {
          name: 'last_run',
          status: last.status === 'failed' || last.status === 'interrupted' ? 'warn' : 'ok',
          detail: `${last.id} ${last.status}${last.reason ? ` (${last.reason})` : ''}${last.error && last.error !== last.reason ? `: ${last.error}` : ''}`,
        },
  );
  if (interrupted.length) {
    checks.push({
      name: 'interrupted_runs',
      status: 'warn',
      detail: `${interrupted.length} run(s) were interrupted (the process exited mid-run); their messages were kept: ${interrupted
        .slice(0, 5)
        .map((r) => r.id)
        .join(', ')}`,
    });
    const reaped = await reapedProcesses(app, interrupted);
    if (reaped) checks.push(reaped);
  }
  const messages = await app.sessions.messages(session.id);
  const calls = new Set<string>();
  const results = new Set<string>();
  for (const m of messages) {
    for (const p of m.parts) {
      if (p.type === 'tool-call') calls.add(p.tool_call_id);
      if (p.type === 'tool-result') results.add(p.tool_call_id);
    }
  }
  const dangling = [...calls].filter((id) => !results.has(id));
  const activeRun = state.run_id ?? state.busy_elsewhere?.run_id;
  const unfinished = messages.filter((m) => m.finished_at === null && m.run_id !== activeRun);
  checks.push(
    dangling.length || unfinished.length
      ? {
          name: 'history',
          status: 'warn',
          detail: `${dangling.length} tool call(s) without a result and ${unfinished.length} unfinished message(s), left by an interrupted run; they are repaired when the history is sent to the model`,
        }
      : { name: 'history', status: 'ok', detail: `${messages.length} messages, consistent` },
  );
  const queue = await app.runs.queued(session.id);
  checks.push(
    queue.length && state.state === 'idle' && !state.busy_elsewhere
      ? {
          name: 'queue',
          status: 'warn',
          detail: `${queue.length} queued prompt(s) wait while the session is idle (the last run did not complete); the next send starts them`,
        }
      : { name: 'queue', status: 'ok', detail: `${queue.length} queued` },
  );
  checks.push(await modelCheck(app, session.model, session.agent));
  const pending = app.permissions.pending(session.id);
  if (pending.length) {
    checks.push({
      name: 'permissions',
      status: 'warn',
      detail: `${pending.length} permission request(s) wait for an answer: ${pending.map((p) => p.title).join('; ')}`,
    });
  }
  const phase = workflowPhase(session);
  if (phase === 'planning' && !session.metadata.plan) {
    checks.push({
      name: 'workflow',
      status: 'warn',
      detail: 'planning phase without a plan: mutating tools are withheld',
    });
  } else if (phase !== 'none') {
    checks.push({ name: 'workflow', status: 'ok', detail: `phase ${phase}` });
  }
  const history = await historyMessages(app.sessions, session);
  return {
    session_id: session.id,
    ok: !checks.some((c) => c.status === 'error'),
    session: await sessionView(app, session),
    runs: {
      total: runs.length,
      failed: failed.length,
      interrupted: interrupted.length,
      last_run_id: last?.id ?? null,
    },
    history: {
      messages: messages.length,
      since_summary: history.length,
      compactions: typeof session.metadata.compactions === 'number' ? session.metadata.compactions : 0,
      dangling_tool_calls: dangling.length,
    },
    checks,
  };
}

async function modelCheck(app: ReportHost, sessionModel: string | null, agent: string): Promise<Check> {
  try {
    const kind = app.agent.kinds().find((k) => k.id === agent);
    const model = await app.models.resolve({ sessionModel, agentModel: kind?.model ?? undefined });
    const window = model.info.context_window;
    return {
      name: 'model',
      status: 'ok',
      detail: `${model.selector} (${model.source})${window ? `, context window ${window}` : ''}`,
    };
  } catch (error) {
    return { name: 'model', status: 'error', detail: app.redactor.string(toSvcError(error).message) };
  }
}

/** Usage statistics of this data directory. */
export async function usageStats(app: ReportHost, options: { days: number }) {
  const { sessions, byRole, models } = await app.observe.queries.usage.sessionUsage();
  const runs = await app.runs.queries.usageStats({ since: app.clock.now() - options.days * 86_400_000 });
  const { by_status: byStatus, by_origin: byOrigin, totals: runTotals, tools, days } = runs;
  return {
    window_days: options.days,
    sessions: { total: sessions.total, top_level: sessions.top, subagent: sessions.total - sessions.top },
    messages: {
      total: byRole.reduce((n, r) => n + r.n, 0),
      by_role: Object.fromEntries(byRole.map((r) => [r.role, r.n])),
    },
    runs: {
      total: byStatus.reduce((n, r) => n + r.n, 0),
      by_status: Object.fromEntries(byStatus.map((r) => [r.status, r.n])),
      by_origin: Object.fromEntries(byOrigin.map((r) => [r.origin, r.n])),
      average_steps: Math.round(runTotals.steps * 100) / 100,
    },
    tokens: { input: sessions.tokens_in, output: sessions.tokens_out },
    cost: round6(sessions.cost),
    models: models.map((m) => ({ ...m, cost: round6(m.cost) })),
    tools,
    days: days.map((d) => ({ ...d, cost: round6(d.cost) })),
  };
}

const round6 = (n: number) => Math.round(n * 1e6) / 1e6;

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;
const TAIL_BYTES = 1024 * 1024;

/** The tail of `<dataDir>/logs/svc.log`: counts by level and the most recent entries. */
export function logsReport(app: ReportHost, options: { limit: number; level: (typeof LEVELS)[number] }) {
  const path = join(app.dataDir, 'logs', 'svc.log');
  const rotated = rotatedLogFiles(path);
  if (!existsSync(path))
    return { path, exists: false, size_bytes: 0, rotated_files: rotated, counts: {}, entries: [] };
  const size = statSync(path).size;
  const start = Math.max(0, size - TAIL_BYTES);
  const buffer = Buffer.alloc(size - start);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buffer, 0, buffer.length, start);
  } finally {
    closeSync(fd);
  }
  const lines = buffer.toString('utf8').split('\n');
  if (start > 0) lines.shift(); // a partial first line
  const counts: Record<string, number> = {};
  const min = LEVELS.indexOf(options.level);
  const entries: Record<string, unknown>[] = [];
  for (const line of lines) {
    if (!line.trim()) continue;
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue;
    }
    const level = String(record.level ?? 'info');
    counts[level] = (counts[level] ?? 0) + 1;
    if (LEVELS.indexOf(level as (typeof LEVELS)[number]) < min) continue;
    const { time, message, level: _level, ...fields } = record;
    entries.push({ time, level, message, fields: app.redactor.value(fields) });
  }
  return {
    path,
    exists: true,
    size_bytes: size,
    rotated_files: rotated,
    scanned_from_byte: start,
    counts,
    entries: entries.slice(-options.limit).reverse(),
  };
}

export function requireDb(app: ReportHost): void {
  const status = app.runs.available();
  if (!status.ok) throw new SvcError('unavailable', status.reason);
}

/** issue 15: processes an interrupted run left running, which svc killed when it started again. */
async function reapedProcesses(app: ReportHost, runs: { id: string }[]): Promise<Check | undefined> {
  const reaped = await Promise.all(
    runs
      .slice(0, 50)
      .map(async (run) => ({ run, events: await app.runs.events(run.id, { types: ['process_reaped'] }) })),
  );
  const killed = reaped.flatMap(({ run, events }) =>
    events
      .filter((e) => Array.isArray(e.payload.killed) && e.payload.killed.length > 0)
      .map(
        (e) =>
          `pid ${String(e.payload.pid)} (${String(e.payload.kind ?? 'process')}: ${String(e.payload.command ?? '?')}) of ${run.id}`,
      ),
  );
  if (killed.length === 0) return undefined;
  return {
    name: 'orphan_processes',
    status: 'warn',
    detail: `${killed.length} process(es) an interrupted run left running were killed when svc started again: ${killed.slice(0, 5).join('; ')}`,
  };
}
