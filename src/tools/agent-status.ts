/**
 * Status readouts of the agent core: `session_diagnose` (`svc session diagnose`, `svc session
 * status`), `stats_report` (`svc stats`), `list_projects` (`svc projects`), `logs_report`
 * (`svc logs`).
 * @module
 */
import { z } from 'zod';
import { readProjects } from '../agent/project-registry';
import { diagnoseSession, logsReport, requireDb, usageStats } from '../agent/reports';
import { sessionIdInput } from '../sessions/session-input';
import type { StatsReport } from '../telemetry/cost-ledger';
import { renderText } from '../util/render-text';
import { defineTool } from './core/define-tool';
import type { ToolHost } from './core/types';

type Diagnosis = Awaited<ReturnType<typeof diagnoseSession>>;

const renderDiagnosis = (r: Diagnosis) =>
  [
    r.session_id
      ? `session ${r.session_id}${r.session?.title ? ` "${r.session.title}"` : ''}: ${r.ok ? 'ok' : 'problems found'}`
      : `no session: ${r.ok ? 'ok' : 'problems found'}`,
    ...r.checks.map(
      (c) =>
        `  ${c.status === 'ok' ? '✓' : c.status === 'warn' ? '!' : '✗'} ${c.name.padEnd(16)} ${c.detail}`,
    ),
  ].join('\n');

export const sessionDiagnose = defineTool({
  name: 'session_diagnose',
  family: 'status',
  tag: 'primitive',
  description:
    'Diagnose a session (default: the current, else the most recent): its state, last run, interrupted runs, history consistency, queue, model resolution, pending permissions and workflow phase, each as ok/warn/error with a detail.',
  input: () => z.strictObject({ session_id: sessionIdInput('most-recent') }),
  mutates: false,
  surfaces: {
    mcp: 'svc_session_diagnose',
    cli: [
      {
        command: 'session diagnose',
        text: renderDiagnosis,
        description: 'Diagnose a session (use --format=json for JSON).',
      },
      {
        command: 'session status',
        text: renderDiagnosis,
        description: 'Show the state of the current session.',
      },
    ],
  },
  run: async (ctx, input) => diagnoseSession(ctx.app, input.session_id, ctx.sessionId),
});

export const statsReport = defineTool({
  name: 'stats_report',
  family: 'status',
  tag: 'primitive',
  description:
    'Usage statistics of this workspace: sessions, messages, runs by status and origin, tokens, cost, per-model and per-tool counts, and runs per day. With `by`: the cost ledger of every model call svc made (agent and sub-agent steps, compat turns, compaction, summaries) grouped by purpose, model or UTC day.',
  input: () =>
    z.strictObject({
      days: z.number().int().min(1).max(3650).default(30).describe('Days covered by the per-day breakdown.'),
      by: z
        .enum(['purpose', 'model', 'day'])
        .optional()
        .describe('Group the cost ledger (every model call, hidden ones included) by purpose, model or day.'),
      session_id: sessionIdInput(
        'none',
        "Also report this session's spend (every model call made for it) in `spend.session`.",
      ),
    }),
  mutates: false,
  surfaces: {
    mcp: 'svc_stats_report',
    http: { method: 'GET', path: '/v1/stats' },
    cli: {
      command: 'stats',
      text: (result: unknown, input: { by?: string }) =>
        input.by ? renderLedgerStats(result as StatsReport) : renderText(result),
    },
  },
  run: async (ctx, input) => {
    requireDb(ctx.app);
    const spend = await spendOf(ctx.app, input.session_id);
    if (input.by) return { ...(await ctx.app.telemetry.ledger.stats(input.by, input.days)), spend };
    return {
      ...(await usageStats(ctx.app, { days: input.days })),
      cost_ledger: await ctx.app.telemetry.ledger.stats('purpose', input.days),
      spend,
    };
  },
});

/**
 * The spend the TUI's status line shows: a session's and today's (UTC) totals from the cost
 * ledger, hidden calls included, and the `[budget]` limits they count against.
 */
async function spendOf(
  app: Pick<ToolHost, 'telemetry' | 'config' | 'sessions'>,
  sessionId: string | undefined,
) {
  // An unknown id is a not_found naming it, not a zero spend.
  if (sessionId) await app.sessions.require(sessionId);
  const spend = await app.telemetry.ledger.spend(sessionId);
  const budget = app.config.budget;
  return {
    ...spend,
    budget: { session_usd: budget.session_usd ?? null, daily_usd: budget.daily_usd ?? null },
  };
}

export const listProjects = defineTool({
  name: 'list_projects',
  family: 'status',
  tag: 'primitive',
  description:
    'The project registry: every workspace svc has run an agent in (from the user data dir), most recent first.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: {
    mcp: 'svc_list_projects',
    cli: {
      command: 'projects',
      text: (r: ReturnType<typeof readProjects>) =>
        r.projects.length === 0
          ? `no projects yet (registry: ${r.path ?? 'unavailable'})`
          : r.projects
              .map((p) => `${p.path}  ${p.runs} run(s)  last ${new Date(p.last_run_at).toISOString()}`)
              .join('\n'),
    },
  },
  run: async (ctx) => {
    const registry = readProjects(ctx.app);
    return { ...registry, count: registry.projects.length };
  },
});

export const logsReportTool = defineTool({
  name: 'logs_report',
  family: 'status',
  tag: 'primitive',
  description:
    "svc's own log (JSON lines in the data dir, redacted): counts by level and the most recent entries.",
  input: () =>
    z.strictObject({
      limit: z.number().int().min(1).max(1000).default(20).describe('Most entries to return (newest first).'),
      level: z.enum(['debug', 'info', 'warn', 'error']).default('warn').describe('Lowest level to include.'),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_logs_report', cli: { command: 'logs' } },
  run: async (ctx, input) => logsReport(ctx.app, input),
});

export const agentStatusTools = [sessionDiagnose, statsReport, listProjects, logsReportTool];

function renderLedgerStats(report: StatsReport): string {
  const usd = (n: number) => `$${n.toFixed(4)}`;
  const rows = report.rows.map((r) => [
    r.key,
    String(r.calls),
    String(r.errors),
    String(r.input_tokens),
    String(r.output_tokens),
    usd(r.cost),
  ]);
  const t = report.totals;
  rows.push([
    'total',
    String(t.calls),
    String(t.errors),
    String(t.input_tokens),
    String(t.output_tokens),
    usd(t.cost),
  ]);
  const head = [report.by, 'calls', 'errors', 'tokens in', 'tokens out', 'cost'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [
    `model calls since ${report.since} (${report.window_days} days), by ${report.by}`,
    line(head),
    ...rows.map(line),
  ].join('\n');
}
