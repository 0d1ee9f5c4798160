/**
 * The multiplayer coordination dashboard readout (`svc.multiplayer_coordination_dashboard.v1`).
 * Read-only: it does not authorize coordination, acquire claims or block writes; it reads the
 * reference corpus and, for a session, the runtime evidence of this process and database.
 * @module
 */
import type { Config } from '../../config/schema';
import { SvcError } from '../../errors';
import type { SessionStore } from '../../sessions/session-store';
import type { Clock } from '../../util/ids';
import { loadCorpus } from './corpus';
import { buildOperatorRuntime, type OperatorRuntimeDeps } from './operator-runtime';

/** What the dashboard reads: the corpus location, the clock, and the operator runtime's probes. */
export interface DashboardDeps extends OperatorRuntimeDeps {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly config: Config;
  readonly clock: Clock;
  readonly sessions: OperatorRuntimeDeps['sessions'] & Pick<SessionStore, 'get'>;
}

export const DASHBOARD_SCHEMA_VERSION = 'svc.multiplayer_coordination_dashboard.v1';
export const DASHBOARD_ROUTE = '/v1/multiplayer-coordination-dashboard';
export const MUTATION_BOUNDARY = 'read-only dashboard; it does not authorize coordination or mutation';
export const COORDINATION_POSTURE_NOTE =
  'reference traces supply product scenarios; conformance supplies the trust contract';
export const LIVE_EXPORT_NOTES =
  'runtime export is code-backed and redacted; it is not a live SaaS dashboard';
export const DEFAULT_RECENT_RUNS_LIMIT = 5;
export const MAX_RECENT_RUNS_LIMIT = 100;

export interface DashboardInput {
  session_id?: string;
  recent_runs_limit?: number;
}

export function corpusDir(app: Pick<DashboardDeps, 'env' | 'config'>): string | undefined {
  return app.env.SVC_MULTIPLAYER_CORPUS_DIR || app.config.options.stigmergy.corpus_dir || undefined;
}

export async function buildDashboard(app: DashboardDeps, input: DashboardInput) {
  const limit = input.recent_runs_limit ?? DEFAULT_RECENT_RUNS_LIMIT;
  const sessionId = input.session_id?.trim() ? input.session_id.trim() : undefined;
  const corpus = loadCorpus(corpusDir(app));
  const warnings: string[] = [];
  if (!corpus.valid) {
    warnings.push(
      `corpus_invalid: ${corpus.problems.slice(0, 5).join('; ')}${corpus.problems.length > 5 ? ` (+${corpus.problems.length - 5} more)` : ''}`,
    );
  }

  const reference_traces = corpus.fixtures.flatMap((f) => {
    const raw = (f.trace ?? f.raw) as Record<string, unknown> | undefined;
    if (!raw || typeof raw.trace_id !== 'string') return [];
    const steps = Array.isArray(raw.steps) ? raw.steps : [];
    const actors = Array.isArray(raw.actors) ? raw.actors : [];
    return [
      {
        fixture_file: f.file,
        trace_id: raw.trace_id,
        scenario_kind: raw.scenario_kind as string,
        ...(typeof raw.title === 'string' ? { title: raw.title } : {}),
        step_count: steps.length,
        actor_count: actors.length,
        maturity_label: 'reference_corpus',
      },
    ];
  });

  let operator_runtime: Awaited<ReturnType<typeof buildOperatorRuntime>> | undefined;
  if (sessionId) {
    let sessionKnown: boolean | undefined;
    try {
      sessionKnown = (await app.sessions.get(sessionId)) !== undefined;
    } catch (error) {
      // spec, Errors: session service unavailable → 200 with a warning and no operator_runtime.
      warnings.push(`session_service_unavailable: ${SvcError.is(error) ? error.message : String(error)}`);
    }
    if (sessionKnown === false) {
      warnings.push('operator_runtime_unavailable: session_unknown');
    } else if (sessionKnown) {
      try {
        operator_runtime = await buildOperatorRuntime(app, sessionId, limit);
      } catch (error) {
        warnings.push(`operator_runtime_unavailable: ${SvcError.is(error) ? error.message : String(error)}`);
      }
    }
  }

  return {
    schema_version: DASHBOARD_SCHEMA_VERSION,
    generated_at_unix: Math.floor(app.clock.now() / 1000),
    filters_applied: {
      recent_runs_limit: limit,
      ...(sessionId !== undefined ? { session_id: sessionId } : {}),
    },
    reference_traces,
    live_export: {
      available: true,
      cli_command: 'svc stigmergy multiplayer export',
      maturity_label: 'code_backed',
      notes: LIVE_EXPORT_NOTES,
    },
    conformance_profile: {
      profile_id: 'multiplayer_reference_trace_corpus',
      maturity_label: 'reference_corpus',
      corpus_valid: corpus.valid,
    },
    ...(operator_runtime ? { operator_runtime } : {}),
    mutation_boundary: MUTATION_BOUNDARY,
    coordination_posture_note: COORDINATION_POSTURE_NOTE,
    warnings,
  };
}

/** The error object of the agent tool when the parity getter is not wired (spec, Errors). */
export function parityGetterUnavailable() {
  return {
    error_code: 'parity_getter_unavailable',
    message:
      'the multiplayer coordination dashboard parity getter is not wired yet (the HTTP server of this process has not started); retry once it is up, or use the suggested tools',
    suggested_tools: ['operator_cognition_readout', 'get_task_aggregate'],
    http_route: DASHBOARD_ROUTE,
  };
}
