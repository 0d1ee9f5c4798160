/**
 * Adaptive orchestration tools. `get_adaptive_orchestration` (family `readouts`) is registered
 * only when `options.adaptive_orchestration.enabled` is true and the runtime has the adaptive
 * layer (ADAPT-31); it carries the pull-only MCP tool `svc_get_adaptive_orchestration` and the
 * headless CLI `svc config show-adaptive-orchestration`, which runs with the gate off and never
 * classifies, evaluates or calls a provider. Every surface returns the same snapshot, equal to
 * the `adaptive_orchestration.genome` event payload. `fleet_regulation_status`,
 * `get_spawn_status` and `eval_shadow_summary` (family `status`) are always registered.
 * @module
 */
import { z } from 'zod';
import { buildSnapshot } from '../adaptive/snapshot';
import { SvcError } from '../errors';
import {
  cliReport,
  evalShadowSummary,
  fleetRegulationStatus,
  spawnStatus,
} from '../readouts/adaptive/readouts';
import { resolveSession } from '../sessions/resolve-session';
import { sessionIdInput } from '../sessions/session-input';
import { type AnyTool, defineTool, type GateEnv } from './core/define-tool';

function adaptiveGate({ app }: GateEnv): true | string {
  if (app.config.options.adaptive_orchestration.enabled !== true) {
    return 'options.adaptive_orchestration.enabled is false';
  }
  return app.adaptive ? true : 'no adaptive orchestration layer in this runtime';
}

type Report = Awaited<ReturnType<typeof cliReport>>;

export const getAdaptiveOrchestration = defineTool({
  name: 'get_adaptive_orchestration',
  family: 'readouts',
  tag: 'primitive',
  description:
    "Read the session's adaptive orchestration: its effective genome (choreography preset, topology, parallelism, plan and review gates, compaction threshold), how it was classified, the monitor's last evaluation, a reshape queued or applied and why, and the posture. Metadata only. Read-only.",
  input: () => z.strictObject({ session_id: sessionIdInput('context') }),
  mutates: false,
  gate: adaptiveGate,
  surfaces: {
    mcp: 'svc_get_adaptive_orchestration',
    // The web UI's adaptive view (closed gate: 404 with the reason, like the operating-mode routes).
    http: { method: 'GET', path: '/v1/adaptive-orchestration' },
    cli: {
      command: 'config show-adaptive-orchestration',
      description:
        'adaptive orchestration: config posture, classifier mode, monitor summary and readout surfaces (read-only; never runs a classifier, a monitor or a provider)',
      ungated: true,
      envelope: async (snapshot, { app, input }) => await cliReport(app, snapshot, input),
      text: renderReport,
    },
  },
  examples: [{ session_id: 'ses_0001' }],
  async run(ctx, input) {
    const { app } = ctx;
    const posture = ctx.surface === 'cli';
    if (!app.adaptive) {
      if (!posture) throw new SvcError('unavailable', 'this runtime has no adaptive orchestration layer');
      return buildSnapshot({
        sessionId: input.session_id ?? '',
        implemented: false,
        configured: app.config.options.adaptive_orchestration.enabled,
        historyMax: 0,
        history: [],
      });
    }
    // The CLI posture describes the named session only; a call defaults to its own session.
    const { session_id } = await resolveSession(app, input, {
      onMissing: posture ? 'none' : 'context-or-none',
      context: ctx.sessionId,
      onUnknown: 'unchecked',
    });
    return await app.adaptive.snapshot(session_id ?? undefined, { posture });
  },
});

export const fleetRegulationStatusTool = defineTool({
  name: 'fleet_regulation_status',
  family: 'status',
  tag: 'primitive',
  description:
    'Adaptive regulation across every session of the workspace: genomes per choreography preset, topology and classification source, reshapes queued or failed, efficacy verdicts, evaluations, and the monitor cadence and caps. Read-only.',
  input: () => z.strictObject({}),
  mutates: false,
  surfaces: { mcp: 'svc_fleet_regulation_status', cli: { command: 'config show-fleet-regulation' } },
  run: async (ctx) => await fleetRegulationStatus(ctx.app),
});

export const getSpawnStatus = defineTool({
  name: 'get_spawn_status',
  family: 'status',
  tag: 'primitive',
  description:
    "Sub-agent spawning of a session family (or the whole workspace): the parallelism limit from the session's genome, running child runs, recent child runs from the run ledger, and reviewer passes. Read-only.",
  input: () =>
    z.strictObject({
      session_id: sessionIdInput('none', 'Session (any member of its family). Omit for the whole workspace.'),
      limit: z.number().int().min(1).max(50).default(10).describe('Recent child runs to list.'),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_get_spawn_status', cli: { command: 'config show-spawn-status' } },
  examples: [{}, { session_id: 'ses_0001' }],
  run: async (ctx, input) => await spawnStatus(ctx.app, input),
});

export const evalShadowSummaryTool = defineTool({
  name: 'eval_shadow_summary',
  family: 'status',
  tag: 'primitive',
  description:
    "Eval shadow: at every monitor evaluation an alternative (shadow) genome is scored on the same signals; this sums up how often its decision agreed with the effective genome's, per preset pair, with the latest scores. Read-only.",
  input: () =>
    z.strictObject({
      session_id: sessionIdInput('none', 'One session. Omit for the whole workspace.'),
      limit: z.number().int().min(1).max(50).default(10).describe('Latest scored evaluations to list.'),
    }),
  mutates: false,
  surfaces: { mcp: 'svc_eval_shadow_summary', cli: { command: 'config show-eval-shadow' } },
  examples: [{}, { session_id: 'ses_0001' }],
  run: async (ctx, input) => await evalShadowSummary(ctx.app, input),
});

export const adaptiveTools: AnyTool[] = [
  getAdaptiveOrchestration,
  fleetRegulationStatusTool,
  getSpawnStatus,
  evalShadowSummaryTool,
] as AnyTool[];

function renderReport(report: Report): string {
  const c = report.config;
  const m = report.monitor;
  const p = report.posture;
  const lines = [
    `adaptive orchestration: ${c.enabled ? 'enabled' : 'disabled'} (options.adaptive_orchestration.enabled = ${c.enabled})`,
    `classifier: ${report.classifier_mode}${c.default_preset ? ` (default preset ${c.default_preset})` : ''}`,
    `monitor: ${m.enabled ? `every ${m.cadence} ended run(s), window ${m.window_runs}` : 'off'}; history ${m.regulatory_history_max_events > 0 ? `${m.regulatory_history_max_events} events` : 'off'}`,
    `  sessions with a genome: ${m.sessions_with_genome}; monitor only: ${m.monitor_only_sessions}; pending reshapes: ${m.pending_reshapes}`,
    `  evaluations: ${m.evaluations_recorded} recorded, ${m.evaluations_skipped} skipped; reshapes applied: ${m.reshapes_applied}${m.last_evaluation_at ? `; last at ${m.last_evaluation_at}` : ''}`,
    'readout surfaces:',
    `  tool ${report.readout_surfaces.native_tool.name}: ${report.readout_surfaces.native_tool.registered ? 'registered' : 'not registered'}`,
    `  mcp ${report.readout_surfaces.mcp_tool.name}: ${report.readout_surfaces.mcp_tool.exposed ? 'exposed' : 'not listed in services.mcp.exposed_tools'}`,
    `  sse ${report.readout_surfaces.sse.route}: ${report.readout_surfaces.sse.events.join(', ')}`,
    'posture:',
    `  state: ${p.state}`,
    `  reason: ${p.reason}`,
  ];
  if (p.efficacy_verdict) lines.push(`  efficacy: ${p.efficacy_verdict}`);
  const s = 'snapshot' in report ? report.snapshot : undefined;
  if (s) {
    lines.push(`session ${s.session_id}: action ${s.action}`);
    if (s.effective_genome) {
      const g = s.effective_genome;
      lines.push(
        `  genome: ${g.choreography_preset} / ${g.topology}; parallel ${g.max_parallel_agents}; plan gate ${g.plan_gate}; review gate ${g.review_gate}; compaction at ${g.compaction_threshold}`,
        `  classified by: ${s.classification_source}; apply: ${s.runtime_apply_status}${s.runtime_apply_error ? ` (error: ${s.runtime_apply_error})` : ''}`,
      );
      if (s.last_reshape_reason) lines.push(`  last reshape: ${s.last_reshape_reason}`);
    }
    if (s.last_monitor_evaluation) {
      const e = s.last_monitor_evaluation;
      lines.push(
        `  last evaluation: ${e.decision}${e.skip_reason ? ` (${e.skip_reason})` : ''}: ${e.reason}`,
      );
    }
  }
  return lines.join('\n');
}
