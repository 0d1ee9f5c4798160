/**
 * Parity readouts I: the multiplayer coordination dashboard and operator cognition, each one tool
 * definition served over HTTP, CLI --json, the agent and MCP.
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import { buildCognitionReadout } from '../readouts/cognition/readout';
import {
  buildDashboard,
  DASHBOARD_ROUTE,
  DEFAULT_RECENT_RUNS_LIMIT,
  MAX_RECENT_RUNS_LIMIT,
  parityGetterUnavailable,
} from '../readouts/multiplayer/dashboard';
import { buildMultiplayerExport } from '../readouts/multiplayer/export';
import { sessionIdInput } from '../sessions/session-input';
import { defineTool } from './core/define-tool';

export const dashboardInput = () =>
  z.strictObject({
    session_id: z
      .string()
      .optional()
      .describe(
        'Session to scope the operator_runtime section to. Omit (or empty) for reference traces and conformance only.',
      ),
    recent_runs_limit: z
      .number({ error: 'invalid recent_runs_limit' })
      .int({ error: 'invalid recent_runs_limit' })
      .min(0, { error: 'invalid recent_runs_limit' })
      .max(MAX_RECENT_RUNS_LIMIT, { error: `invalid recent_runs_limit: at most ${MAX_RECENT_RUNS_LIMIT}` })
      .default(DEFAULT_RECENT_RUNS_LIMIT)
      .describe(
        `Most session-family runs listed in operator_runtime.recent_runs (default ${DEFAULT_RECENT_RUNS_LIMIT}).`,
      ),
  });

type Dashboard = Awaited<ReturnType<typeof buildDashboard>>;

function renderDashboard(d: Dashboard | ReturnType<typeof parityGetterUnavailable>): string {
  if ('error_code' in d) return `${d.error_code}: ${d.message}`;
  const lines = [
    `multiplayer coordination dashboard (${d.schema_version})`,
    `recent_runs_limit ${d.filters_applied.recent_runs_limit}${d.filters_applied.session_id ? `   session ${d.filters_applied.session_id}` : ''}`,
    '',
    'REFERENCE TRACE                 KIND                 STEPS  ACTORS  FIXTURE',
    ...d.reference_traces.map(
      (t) =>
        `${t.trace_id.padEnd(31)} ${t.scenario_kind.padEnd(20)} ${String(t.step_count).padStart(5)}  ${String(t.actor_count).padStart(6)}  ${t.fixture_file}`,
    ),
    '',
    `conformance   ${d.conformance_profile.profile_id}: corpus ${d.conformance_profile.corpus_valid ? 'valid' : 'INVALID'}`,
    `live export   ${d.live_export.cli_command} (${d.live_export.maturity_label})`,
  ];
  if (d.operator_runtime) {
    lines.push(
      '',
      `operator runtime (${d.operator_runtime.profile}, session ${d.operator_runtime.session_id})`,
    );
    for (const [name, check] of Object.entries(d.operator_runtime.checks))
      lines.push(`  ${name.padEnd(20)} ${check.status.padEnd(8)} ${check.summary}`);
    lines.push(`  recent runs: ${d.operator_runtime.recent_runs.length}`);
  }
  if (d.warnings.length) lines.push('', 'warnings:', ...d.warnings.map((w) => `  ${w}`));
  lines.push('', d.mutation_boundary);
  return lines.join('\n');
}

export const getMultiplayerCoordinationDashboard = defineTool({
  name: 'get_multiplayer_coordination_dashboard',
  family: 'readouts',
  tag: 'primitive',
  description:
    'Read-only multiplayer coordination dashboard: the reference trace corpus, live-export metadata, conformance, and for a session the operator runtime evidence (identity, authority, workspace claims, run ledger, handoff, interruptibility). It does not authorize coordination or take claims.',
  input: dashboardInput,
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: DASHBOARD_ROUTE, errors: 'text' },
    mcp: 'svc_get_multiplayer_coordination_dashboard',
    cli: { command: 'stigmergy multiplayer dashboard', text: renderDashboard },
  },
  examples: [{}, { recent_runs_limit: 2 }, { session_id: 'ses_unknown' }],
  async run(ctx, input): Promise<Dashboard | ReturnType<typeof parityGetterUnavailable>> {
    const { app } = ctx;
    // spec, Errors: inside a server process whose HTTP server has not started, the agent tool has
    // no parity getter yet; a detached process (svc run, TUI) builds the read model directly.
    if (ctx.surface === 'agent' && app.runtime.server && !app.runtime.surfaces.has('http')) {
      return parityGetterUnavailable();
    }
    return buildDashboard(app, input);
  },
});

export const cognitionInput = () =>
  z.strictObject({
    zone: z
      .string()
      .optional()
      .describe(
        'Exact signal zone (token_pressure, loop_detection, …). Empty or omitted gives the global readout.',
      ),
  });

type Cognition = Awaited<ReturnType<typeof buildCognitionReadout>>;

function renderCognition(c: Cognition): string {
  const lines = [
    `operator cognition (${c.schema_version}) ${c.scope === 'zone' ? `zone ${c.zone}` : 'global'}`,
    `calibration window: last ${c.calibration_window.days} days or ${c.calibration_window.max_recommendations} recommendations; ${c.calibration_window.recommendations_in_window} in window`,
    '',
    'ZONE                RECS  FOLLOWED  DISMISSED  EXPIRED  PENDING  FOLLOW-THROUGH',
    ...c.patterns.map(
      (p) =>
        `${p.zone.padEnd(18)} ${String(p.recommendations).padStart(5)} ${String(p.followed).padStart(9)} ${String(p.dismissed).padStart(10)} ${String(p.expired).padStart(8)} ${String(p.pending).padStart(8)}  ${p.follow_through_rate === null ? '-' : `${Math.round(p.follow_through_rate * 100)}%`}`,
    ),
  ];
  if (c.warnings.length) lines.push('', 'warnings:', ...c.warnings.map((w) => `  ${w}`));
  lines.push('', c.evidence_boundary);
  return lines.join('\n');
}

export const operatorCognitionReadout = defineTool({
  name: 'operator_cognition_readout',
  family: 'readouts',
  tag: 'primitive',
  description:
    'Read-only summary of recommendation follow-through per signal zone over the calibration window: how many recommendations the runtime made and how many were followed, dismissed or expired. It never grades the operator.',
  input: cognitionInput,
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/operator-cognition' },
    mcp: 'svc_operator_cognition_readout',
    mcpGate: (app) =>
      app.config.options.stigmergy.read_tools
        ? true
        : 'stigmergy read tools are off (options.stigmergy.read_tools)',
    cli: { command: 'stigmergy cognition', text: renderCognition },
  },
  examples: [{}, { zone: 'token_pressure' }, { zone: '' }],
  run: async (ctx, input) => buildCognitionReadout(ctx.app, ctx.app.recommendations, input.zone || undefined),
});

export const recommendationsInput = () =>
  z.strictObject({
    action: z
      .enum(['list', 'dismiss'])
      .default('list')
      .describe('list pending recommendations, or dismiss one.'),
    session_id: z.string().optional().describe('list: only this session.'),
    recommendation_id: z.string().optional().describe('dismiss: the recommendation.'),
  });

export const recommendations = defineTool({
  name: 'recommendations',
  family: 'readouts',
  tag: 'primitive',
  description:
    'Recommendations the runtime made to the operator that are still pending, and dismissing one (recorded as dismissed in the outcome ledger).',
  input: recommendationsInput,
  mutates: false,
  surfaces: { cli: { command: 'stigmergy recommendations', fixed: { action: 'list' } } },
  async run(ctx, input) {
    const ledger = ctx.app.recommendations;
    if (input.action === 'dismiss') {
      if (!input.recommendation_id)
        throw new SvcError('invalid_input', 'recommendation_id: required for dismiss');
      const rec = await ledger.get(input.recommendation_id);
      if (!rec)
        throw new SvcError('not_found', `recommendation_id: no recommendation "${input.recommendation_id}"`);
      const closed = await ledger.close(rec.id, 'dismissed', { dismissed_via: ctx.surface });
      return {
        action: 'dismiss',
        recommendation_id: rec.id,
        dismissed: closed,
        outcome: (await ledger.get(rec.id))?.outcome,
      };
    }
    const pending = (await ledger.pending({ session_id: input.session_id })).map(
      ({ payload_digest: _d, ...r }) => r,
    );
    return { action: 'list', count: pending.length, recommendations: pending };
  },
});

export const multiplayerExportInput = () =>
  z.strictObject({
    session_id: sessionIdInput(
      'none',
      "Export only this session's family. Omit for every session of the workspace.",
    ),
    since_unix: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('Only evidence recorded at or after this UTC Unix time.'),
    max_steps: z.number().int().min(1).max(100_000).default(5000).describe('Most steps kept (the latest).'),
    strict: z
      .boolean()
      .default(false)
      .describe('Fail (CLI exit 1) and say why when the evidence is incomplete.'),
  });

type Export = Awaited<ReturnType<typeof buildMultiplayerExport>>;

function renderExport(e: Export): string {
  const lines = [
    `multiplayer trace export (${e.schema_version}): ${e.trace.trace_id}, ${e.trace.scenario_kind}`,
    `actors ${e.trace.actors.length}  steps ${e.trace.steps.length}  runs ${e.evidence.runs}  edits ${e.evidence.file_edits}  claims ${e.evidence.claims}  markers ${e.evidence.markers}  handoffs ${e.evidence.handoffs}`,
    '',
    ...e.trace.steps
      .slice(-40)
      .map(
        (s) =>
          `${String(s.seq).padStart(5)} +${String(s.at_ms).padStart(8)}ms  ${s.actor.padEnd(28)} ${s.action.padEnd(16)} ${s.paths.join(', ')}${s.to ? ` -> ${s.to}` : ''}`,
      ),
  ];
  if (e.trace.steps.length > 40)
    lines.splice(3, 0, `  … ${e.trace.steps.length - 40} earlier steps (use --json for all)`);
  if (e.warnings.length) lines.push('', 'warnings:', ...e.warnings.map((w) => `  ${w}`));
  if (e.strict && e.strict_failures.length)
    lines.push('', 'strict check failed:', ...e.strict_failures.map((f) => `  ${f}`));
  lines.push('', e.redaction);
  return lines.join('\n');
}

export const getMultiplayerTraceExport = defineTool({
  name: 'get_multiplayer_trace_export',
  family: 'readouts',
  tag: 'primitive',
  description:
    'The real coordination trace of this workspace (sessions and runs as actors; run starts/ends, file edits with paths, claims, markers and handoffs as steps), in the reference-corpus shape, redacted: paths only, never prompts or outputs.',
  input: multiplayerExportInput,
  mutates: false,
  surfaces: {
    mcp: 'svc_get_multiplayer_trace_export',
    cli: {
      command: 'stigmergy multiplayer export',
      text: renderExport,
      exitCode: (r: Export) => (r.strict && r.strict_failures.length > 0 ? 1 : 0),
    },
  },
  run: async (ctx, input) => await buildMultiplayerExport(ctx.app, input),
});
