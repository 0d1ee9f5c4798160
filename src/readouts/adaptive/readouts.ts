/**
 * Read models around adaptive orchestration, computed from stored state only (so every surface
 * and every process answers the same):
 *
 * - `fleet_regulation_status`: the regulation state of every session of the workspace (genomes
 *   per preset, topology and classification source, queued reshapes, apply failures, efficacy,
 *   evaluations) and the monitor's cadence and caps;
 * - `get_spawn_status`: sub-agent spawning of a session family (or the workspace): the
 *   parallelism limit from the genome, running children and recent child runs from the run
 *   ledger, reviewer passes;
 * - `eval_shadow_summary`: how often the shadow genome's regulator agreed with the effective one
 *   on the same signals;
 * - the `svc config show-adaptive-orchestration` report (config posture, classifier mode, monitor
 *   summary, readout surfaces), which never classifies, evaluates or calls a provider.
 * @module
 */
import { decodeGenome, PRESETS, TOPOLOGIES } from '../../adaptive/genome';
import type { AdaptiveService } from '../../adaptive/service';
import { type AdaptiveSnapshot, efficacyVerdict, HISTORY_RESPONSE_CAP } from '../../adaptive/snapshot';
import { type AdaptiveRow, EVALUATION_RETENTION } from '../../adaptive/store';
import type { Config } from '../../config/schema';
import { SvcError } from '../../errors';
import type { RunLedger } from '../../runs/run-ledger';
import type { SessionStore } from '../../sessions/session-store';

/** What the adaptive readouts read: the layer (absent in a runtime built without it), the config. */
export interface AdaptiveReadoutDeps {
  readonly config: Config;
  readonly adaptive: Pick<AdaptiveService, 'dbPresent' | 'store' | 'genome' | 'spawnSlots'> | undefined;
}

export interface SpawnStatusDeps extends AdaptiveReadoutDeps {
  readonly sessions: Pick<SessionStore, 'get' | 'root'>;
  readonly runs: Pick<RunLedger, 'queries'>;
}

export interface AdaptiveCliReportDeps extends AdaptiveReadoutDeps {
  /** The registry's gate results (is the native tool registered, and why not). */
  readonly tools: { gates(): { tool: { name: string }; registered: boolean; reason?: string }[] };
}

export const READOUT_SCHEMA_VERSION = 1;
export const ADAPTIVE_NATIVE_TOOL = 'get_adaptive_orchestration';
export const ADAPTIVE_MCP_TOOL = 'svc_get_adaptive_orchestration';
export const ADAPTIVE_EVENTS = [
  'adaptive_orchestration.changed',
  'adaptive_orchestration.genome',
  'adaptive_orchestration.monitor_evaluation',
  'adaptive_orchestration.reshape',
] as const;

const iso = (ms: number | null | undefined) =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();

async function rows(adaptive: AdaptiveReadoutDeps['adaptive']): Promise<AdaptiveRow[]> {
  if (!adaptive?.dbPresent()) return [];
  return await adaptive.store.all();
}

function countBy<K extends string>(keys: readonly K[], values: string[]): Record<K, number> {
  const out = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  for (const v of values) if ((keys as readonly string[]).includes(v)) out[v as K]++;
  return out;
}

function monitorConfig(app: Pick<AdaptiveReadoutDeps, 'config'>) {
  const m = app.config.options.adaptive_orchestration.monitor;
  return {
    enabled: m.enabled,
    cadence: m.cadence,
    window_runs: m.window_runs,
    regulatory_history_max_events: m.regulatory_history_max_events,
  };
}

export async function fleetRegulationStatus(app: AdaptiveReadoutDeps) {
  const settings = app.config.options.adaptive_orchestration;
  const all = await rows(app.adaptive);
  const decoded = all.map((row) => ({ row, decoded: decodeGenome(row.genome) }));
  const withGenome = decoded.flatMap(({ row, decoded }) =>
    decoded?.ok ? [{ row, genome: decoded.genome }] : [],
  );
  const pending = all.filter((r) => r.apply_status === 'pending' && r.proposal);
  const counts = app.adaptive?.dbPresent()
    ? await app.adaptive.store.counts()
    : { recorded: 0, skipped: 0, reshapes: 0 };
  const verdicts = all.map(efficacyVerdict).filter((v): v is NonNullable<typeof v> => v !== undefined);
  return {
    schema_version: READOUT_SCHEMA_VERSION,
    enabled: settings.enabled,
    implemented: app.adaptive !== undefined,
    classifier_mode: settings.classifier,
    monitor: monitorConfig(app),
    caps: {
      max_parallel_agents: settings.max_parallel_agents,
      regulatory_history_per_response: HISTORY_RESPONSE_CAP,
      evaluation_retention_per_session: Math.max(
        settings.monitor.regulatory_history_max_events,
        EVALUATION_RETENTION,
      ),
    },
    sessions: {
      total: all.length,
      with_genome: withGenome.length,
      monitor_only: all.filter((r) => r.genome === null && r.last_action === 'monitor_evaluation').length,
      cleared: all.filter((r) => r.genome === null && r.last_action === 'cleared').length,
      unreadable_genome: decoded.filter((d) => d.decoded && !d.decoded.ok).length,
    },
    by_preset: countBy(
      PRESETS,
      withGenome.map((g) => g.genome.choreography_preset),
    ),
    by_topology: countBy(
      TOPOLOGIES,
      withGenome.map((g) => g.genome.topology),
    ),
    by_classification_source: countBy(
      ['override', 'pack', 'config', 'heuristic'] as const,
      withGenome.map((g) => g.row.classification_source),
    ),
    pending_reshapes: pending.length,
    pending: pending.slice(0, 20).map((r) => ({
      session_id: r.session_id,
      since: iso(r.pending_since),
      reason: r.pending_reason,
      target_preset: r.proposal!.genome.choreography_preset,
    })),
    apply_errors: all.filter((r) => r.apply_error !== '').length,
    reshapes_applied: counts.reshapes,
    evaluations: { recorded: counts.recorded, skipped: counts.skipped },
    efficacy: countBy(['improved', 'unchanged', 'regressed', 'insufficient_evidence'] as const, verdicts),
  };
}

export async function spawnStatus(app: SpawnStatusDeps, input: { session_id?: string; limit: number }) {
  let root: string | undefined;
  if (input.session_id) {
    if (!(await app.sessions.get(input.session_id))) {
      throw new SvcError('not_found', `session_id: no session "${input.session_id}"; see svc session list`);
    }
    root = await app.sessions.root(input.session_id);
  }
  const genome = root ? await app.adaptive?.genome(root) : undefined;
  const reviews = new Map<string, string>();
  const queries = app.runs.queries;
  const running = await queries.childRuns({ state: 'running', familySessionId: root });
  const recent = await queries.childRuns({ state: 'ended', familySessionId: root, limit: input.limit });
  const totals = await queries.childStatusCounts(root);
  const reviewRows = app.adaptive?.dbPresent() ? await app.adaptive.store.reviewOutcomes(root) : [];
  for (const r of reviewRows) if (r.child_run_id) reviews.set(r.child_run_id, r.status);
  const role = (runId: string) => (reviews.has(runId) ? 'reviewer' : 'subagent');
  const total = (status: string) => totals.find((t) => t.status === status)?.n ?? 0;
  const slots = app.adaptive?.spawnSlots();
  return {
    session_id: root ?? null,
    parallelism_limit: genome?.max_parallel_agents ?? 1,
    limit_source: genome ? ('genome' as const) : ('default' as const),
    choreography_preset: genome?.choreography_preset ?? null,
    parallel_calls: (genome?.max_parallel_agents ?? 1) > 1,
    active_children: running.map((r) => ({
      run_id: r.id,
      session_id: r.session_id,
      parent_run_id: r.parent_run_id,
      agent: r.agent,
      role: role(r.id),
      started_at: iso(r.started_at),
    })),
    active_count: running.length,
    waiting_for_slot: root
      ? (slots?.get(root)?.waiting ?? 0)
      : [...(slots?.values() ?? [])].reduce((n, s) => n + s.waiting, 0),
    recent_child_runs: recent.map((r) => ({
      run_id: r.id,
      session_id: r.session_id,
      parent_run_id: r.parent_run_id,
      agent: r.agent,
      role: role(r.id),
      status: r.status,
      reason: r.reason,
      started_at: iso(r.started_at),
      finished_at: iso(r.finished_at),
    })),
    totals: {
      children: totals.reduce((n, t) => n + t.n, 0),
      running: total('running'),
      completed: total('completed'),
      failed: total('failed'),
      cancelled: total('cancelled'),
      interrupted: total('interrupted'),
    },
    reviewer_passes: {
      total: reviewRows.length,
      running: reviewRows.filter((r) => r.status === 'running').length,
      approved: reviewRows.filter((r) => r.status === 'approved').length,
      changes_requested: reviewRows.filter((r) => r.status === 'changes_requested').length,
      failed: reviewRows.filter((r) => r.status === 'failed').length,
    },
  };
}

export async function evalShadowSummary(
  app: AdaptiveReadoutDeps & Pick<SpawnStatusDeps, 'sessions'>,
  input: { session_id?: string; limit: number },
) {
  const settings = app.config.options.adaptive_orchestration;
  if (input.session_id && !(await app.sessions.get(input.session_id))) {
    throw new SvcError('not_found', `session_id: no session "${input.session_id}"; see svc session list`);
  }
  const scored = app.adaptive?.dbPresent() ? await app.adaptive.store.scored(input.session_id, 100_000) : [];
  const agreed = scored.filter((s) => s.shadow?.agreed).length;
  const pairs = new Map<
    string,
    { shadow_preset: string; effective_preset: string; scored: number; agreed: number }
  >();
  for (const s of scored) {
    const key = `${s.effective_preset}|${s.shadow!.preset}`;
    const entry = pairs.get(key) ?? {
      effective_preset: s.effective_preset,
      shadow_preset: s.shadow!.preset,
      scored: 0,
      agreed: 0,
    };
    entry.scored++;
    if (s.shadow!.agreed) entry.agreed++;
    pairs.set(key, entry);
  }
  const fed = (await rows(app.adaptive)).filter(
    (r) =>
      (!input.session_id || r.session_id === input.session_id) &&
      r.hint_sources.split(',').includes('eval_shadow'),
  );
  return {
    schema_version: READOUT_SCHEMA_VERSION,
    session_id: input.session_id ?? null,
    enabled: settings.enabled && settings.eval_shadow.enabled,
    min_evaluations: settings.eval_shadow.min_evaluations,
    evaluations_scored: scored.length,
    agreements: agreed,
    disagreements: scored.length - agreed,
    agreement_rate: scored.length ? Math.round((agreed / scored.length) * 10_000) / 10_000 : null,
    by_preset_pair: [...pairs.values()].sort((a, b) =>
      `${a.effective_preset}|${a.shadow_preset}`.localeCompare(`${b.effective_preset}|${b.shadow_preset}`),
    ),
    hint_feed: { sessions_fed: fed.length },
    recent: scored.slice(0, input.limit).map((s) => ({
      session_id: s.session_id,
      at: iso(s.at),
      signal_id: s.evaluation.signal_id,
      effective_preset: s.effective_preset,
      shadow_preset: s.shadow!.preset,
      effective_decision: s.shadow!.effective_decision,
      shadow_decision: s.shadow!.decision,
      agreed: s.shadow!.agreed,
    })),
  };
}

/** `svc config show-adaptive-orchestration --json`: the report around the snapshot. */
export async function cliReport(
  app: AdaptiveCliReportDeps,
  snapshot: AdaptiveSnapshot,
  input: { session_id?: string },
) {
  const settings = app.config.options.adaptive_orchestration;
  const all = await rows(app.adaptive);
  const counts = app.adaptive?.dbPresent()
    ? await app.adaptive.store.counts()
    : { recorded: 0, skipped: 0, reshapes: 0 };
  const lastAt = app.adaptive?.dbPresent() ? await app.adaptive.store.lastEvaluationAt() : null;
  const gate = app.tools.gates().find((g) => g.tool.name === ADAPTIVE_NATIVE_TOOL);
  return {
    config: {
      enabled: settings.enabled,
      classifier: settings.classifier,
      default_preset: settings.default_preset ?? null,
      max_parallel_agents: settings.max_parallel_agents,
      reviewer_agent: settings.reviewer_agent,
      monitor: { ...settings.monitor },
      eval_shadow: { ...settings.eval_shadow },
    },
    classifier_mode: settings.classifier,
    monitor: {
      ...monitorConfig(app),
      sessions_with_genome: all.filter((r) => r.genome !== null).length,
      monitor_only_sessions: all.filter((r) => r.genome === null && r.last_action === 'monitor_evaluation')
        .length,
      evaluations_recorded: counts.recorded,
      evaluations_skipped: counts.skipped,
      reshapes_applied: counts.reshapes,
      pending_reshapes: all.filter((r) => r.apply_status === 'pending').length,
      last_evaluation_at: iso(lastAt),
    },
    readout_surfaces: {
      native_tool: {
        name: ADAPTIVE_NATIVE_TOOL,
        registered: gate?.registered ?? false,
        ...(gate && !gate.registered && gate.reason ? { reason: gate.reason } : {}),
      },
      mcp_tool: {
        name: ADAPTIVE_MCP_TOOL,
        exposed: app.config.services.mcp.exposed_tools?.includes(ADAPTIVE_MCP_TOOL) ?? false,
      },
      cli: 'svc config show-adaptive-orchestration',
      sse: { route: '/v1/sessions/{id}/events', events: [...ADAPTIVE_EVENTS], include_snapshot: true },
      related_tools: ['fleet_regulation_status', 'get_spawn_status', 'eval_shadow_summary'],
    },
    // A copy: the redactor reads a second reference to one object as a cycle.
    posture: { ...snapshot.posture },
    ...(input.session_id ? { snapshot } : {}),
  };
}
