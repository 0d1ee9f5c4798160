/**
 * `get_runtime_incident_status`: what went wrong at runtime, from the run ledger and the session
 * event log. Kinds:
 *
 * | kind              | evidence                                                             |
 * |-------------------|----------------------------------------------------------------------|
 * | provider_error    | ledger `error` with source provider (the model call failed)           |
 * | model_unavailable | ledger `error` with source model_resolution (no usable model)         |
 * | tool_crash        | ledger `tool.finished` with `crash` (the tool threw a non-SvcError)    |
 * | failed_run        | a run that ended `failed`                                            |
 * | interrupted_run   | a run that ended `interrupted` (svc stopped or crashed under it)      |
 *
 * `provider_recoveries` counts `provider_recovery.changed` from the event log (a rate-limit
 * fallback crossed a provider boundary: not an incident by itself, shown beside them).
 * @module
 */
import { clip, type HealthReadoutDeps, ledgerEvents, loggedEvents, runs, scopeOf } from './evidence';

export type IncidentKind =
  | 'provider_error'
  | 'model_unavailable'
  | 'tool_crash'
  | 'failed_run'
  | 'interrupted_run';

export interface Incident {
  kind: IncidentKind;
  at: number;
  session_id: string;
  run_id: string;
  /** The tool, for tool crashes. */
  tool?: string;
  summary: string;
}

export interface IncidentStatus {
  session_id: string | null;
  since_hours: number;
  since: number;
  status: 'ok' | 'incidents';
  counts: Record<IncidentKind, number> & { provider_recoveries: number };
  total: number;
  last_incident_at: number | null;
  recent: Incident[];
}

export async function runtimeIncidentStatus(
  app: HealthReadoutDeps,
  input: { session_id?: string; since_hours: number; limit: number },
): Promise<IncidentStatus> {
  const since = app.clock.now() - input.since_hours * 3_600_000;
  const scope = await scopeOf(app, { session_id: input.session_id, since_ms: since });
  const incidents: Incident[] = [];
  for (const event of await ledgerEvents(app, scope, ['error'])) {
    const source = String(event.payload.source ?? 'run');
    if (source !== 'provider' && source !== 'model_resolution') continue;
    incidents.push({
      kind: source === 'provider' ? 'provider_error' : 'model_unavailable',
      at: event.created_at,
      session_id: event.session_id,
      run_id: event.run_id,
      summary: clip(event.payload.message),
    });
  }
  for (const event of await ledgerEvents(app, scope, ['tool.finished'], {
    payloadEquals: { crash: 1 },
  })) {
    incidents.push({
      kind: 'tool_crash',
      at: event.created_at,
      session_id: event.session_id,
      run_id: event.run_id,
      tool: String(event.payload.tool ?? ''),
      summary: clip(event.payload.error),
    });
  }
  for (const run of await runs(app, scope, { statuses: ['failed', 'interrupted'] })) {
    incidents.push({
      kind: run.status === 'failed' ? 'failed_run' : 'interrupted_run',
      at: run.finished_at ?? run.started_at ?? run.created_at,
      session_id: run.session_id,
      run_id: run.id,
      summary: clip(run.error ?? run.reason ?? run.status),
    });
  }
  incidents.sort((a, b) => b.at - a.at || a.kind.localeCompare(b.kind) || a.run_id.localeCompare(b.run_id));
  const count = (kind: IncidentKind) => incidents.filter((i) => i.kind === kind).length;
  return {
    session_id: input.session_id ?? null,
    since_hours: input.since_hours,
    since,
    status: incidents.length ? 'incidents' : 'ok',
    counts: {
      provider_error: count('provider_error'),
      model_unavailable: count('model_unavailable'),
      tool_crash: count('tool_crash'),
      failed_run: count('failed_run'),
      interrupted_run: count('interrupted_run'),
      provider_recoveries: (await loggedEvents(app, scope, ['provider_recovery.changed'])).length,
    },
    total: incidents.length,
    last_incident_at: incidents[0]?.at ?? null,
    recent: incidents.slice(0, input.limit).map((i) => ({ ...i, summary: app.redactor.string(i.summary) })),
  };
}
