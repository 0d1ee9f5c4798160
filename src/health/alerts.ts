/**
 * `get_alerts_status`: the alerts active now, derived from the runtime's own signals over the last
 * `options.alerts.window_minutes` (thresholds in `options.alerts` and
 * `options.health_followons.token_pressure_threshold`):
 *
 * | kind                 | severity | active when                                                                 |
 * |----------------------|----------|-----------------------------------------------------------------------------|
 * | token_pressure       | warning  | a session's latest context usage is at/over the threshold, no compaction since |
 * | repeated_failures    | critical | a session's last `repeated_failures` finished runs all failed              |
 * | provider_errors      | critical | provider errors in the window ≥ `provider_errors`                          |
 * | tool_crashes         | warning  | tool crashes in the window ≥ `tool_crashes`                                |
 * | provider_recovery    | info     | a rate-limit fallback crossed a provider boundary in the window            |
 * | hook_failures        | warning  | pack hooks failed or timed out in the window ≥ `hook_failures`             |
 * | health_followon_capped | info   | a health follow-on activation was skipped by a cap in the window          |
 * @module
 */
import { failedHookRuns } from '../packs/hook-run-queries';
import { type HealthReadoutDeps, ledgerEvents, loggedEvents, runs, type Scope, scopeOf } from './evidence';
import type { HealthFollowons } from './followons';

export interface AlertsDeps extends HealthReadoutDeps {
  readonly health: Pick<HealthFollowons, 'activations'>;
}

export type AlertKind =
  | 'token_pressure'
  | 'repeated_failures'
  | 'provider_errors'
  | 'tool_crashes'
  | 'provider_recovery'
  | 'hook_failures'
  | 'health_followon_capped';
export type AlertSeverity = 'info' | 'warning' | 'critical';

export interface Alert {
  id: string;
  kind: AlertKind;
  severity: AlertSeverity;
  session_id: string | null;
  summary: string;
  /** The measured value (ratio, count) and the threshold it crossed. */
  value: number;
  threshold: number;
  since: number;
  last_at: number;
}

export interface AlertsStatus {
  session_id: string | null;
  window_minutes: number;
  since: number;
  thresholds: {
    token_pressure_ratio: number;
    repeated_failures: number;
    provider_errors: number;
    tool_crashes: number;
    hook_failures: number;
  };
  status: 'ok' | 'alerting';
  counts: { total: number } & Record<AlertSeverity, number>;
  active: Alert[];
}

const SEVERITY_ORDER: Record<AlertSeverity, number> = { critical: 0, warning: 1, info: 2 };

export async function alertsStatus(
  app: AlertsDeps,
  input: { session_id?: string; window_minutes?: number },
): Promise<AlertsStatus> {
  const config = app.config.options;
  const windowMinutes = input.window_minutes ?? config.alerts.window_minutes;
  const since = app.clock.now() - windowMinutes * 60_000;
  const scope = await scopeOf(app, { session_id: input.session_id, since_ms: since });
  const thresholds = {
    token_pressure_ratio: config.health_followons.token_pressure_threshold,
    repeated_failures: config.alerts.repeated_failures,
    provider_errors: config.alerts.provider_errors,
    tool_crashes: config.alerts.tool_crashes,
    hook_failures: config.alerts.hook_failures,
  };
  const active: Alert[] = [
    ...(await tokenPressure(app, scope, thresholds.token_pressure_ratio)),
    ...repeatedFailures(app, scope, thresholds.repeated_failures),
    ...incidentAlerts(app, scope, thresholds),
    ...(await providerRecovery(app, scope)),
    ...(await hookFailures(app, scope, thresholds.hook_failures)),
    ...(await cappedActivations(app, scope)),
  ].sort(
    (a, b) =>
      SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity] ||
      b.last_at - a.last_at ||
      a.id.localeCompare(b.id),
  );
  const count = (severity: AlertSeverity) => active.filter((a) => a.severity === severity).length;
  return {
    session_id: input.session_id ?? null,
    window_minutes: windowMinutes,
    since,
    thresholds,
    status: active.length ? 'alerting' : 'ok',
    counts: {
      total: active.length,
      critical: count('critical'),
      warning: count('warning'),
      info: count('info'),
    },
    active,
  };
}

async function tokenPressure(app: AlertsDeps, scope: Scope, threshold: number): Promise<Alert[]> {
  const alerts: Alert[] = [];
  const decided = new Set<string>();
  for (const event of await loggedEvents(app, scope, ['context.usage', 'compaction.finished'])) {
    if (decided.has(event.session_id)) continue;
    decided.add(event.session_id);
    const ratio = Number(event.payload.ratio);
    if (event.type !== 'context.usage' || !(ratio >= threshold)) continue;
    alerts.push({
      id: `token_pressure:${event.session_id}`,
      kind: 'token_pressure',
      severity: 'warning',
      session_id: event.session_id,
      summary: `context at ${Math.round(ratio * 100)}% of the model window (threshold ${Math.round(threshold * 100)}%), not compacted since`,
      value: ratio,
      threshold,
      since: event.created_at,
      last_at: event.created_at,
    });
  }
  return alerts;
}

function repeatedFailures(app: AlertsDeps, scope: Scope, threshold: number): Alert[] {
  const bySession = new Map<string, { status: string; at: number }[]>();
  for (const run of runs(app, scope, { statuses: ['completed', 'failed', 'cancelled', 'interrupted'] })) {
    const list = bySession.get(run.session_id) ?? [];
    list.push({ status: run.status, at: run.finished_at ?? run.created_at });
    bySession.set(run.session_id, list);
  }
  const alerts: Alert[] = [];
  for (const [sessionId, list] of bySession) {
    let streak = 0;
    while (streak < list.length && list[streak].status === 'failed') streak++;
    if (streak < threshold) continue;
    alerts.push({
      id: `repeated_failures:${sessionId}`,
      kind: 'repeated_failures',
      severity: 'critical',
      session_id: sessionId,
      summary: `the last ${streak} runs of the session failed`,
      value: streak,
      threshold,
      since: list[streak - 1].at,
      last_at: list[0].at,
    });
  }
  return alerts;
}

function incidentAlerts(
  app: AlertsDeps,
  scope: Scope,
  thresholds: { provider_errors: number; tool_crashes: number },
): Alert[] {
  const alerts: Alert[] = [];
  const providerErrors = ledgerEvents(app, scope, ['error'], {
    payloadEquals: { source: 'provider' },
  });
  if (providerErrors.length >= thresholds.provider_errors) {
    alerts.push({
      id: 'provider_errors',
      kind: 'provider_errors',
      severity: 'critical',
      session_id: scope.sessions ? (scope.sessions[0] ?? null) : null,
      summary: `${providerErrors.length} provider errors in the window`,
      value: providerErrors.length,
      threshold: thresholds.provider_errors,
      since: providerErrors.at(-1)!.created_at,
      last_at: providerErrors[0].created_at,
    });
  }
  const crashes = ledgerEvents(app, scope, ['tool.finished'], {
    payloadEquals: { crash: 1 },
  });
  if (crashes.length >= thresholds.tool_crashes) {
    const tools = [...new Set(crashes.map((c) => String(c.payload.tool)))].sort();
    alerts.push({
      id: 'tool_crashes',
      kind: 'tool_crashes',
      severity: 'warning',
      session_id: scope.sessions ? (scope.sessions[0] ?? null) : null,
      summary: `${crashes.length} tool crash${crashes.length === 1 ? '' : 'es'} in the window (${tools.join(', ')})`,
      value: crashes.length,
      threshold: thresholds.tool_crashes,
      since: crashes.at(-1)!.created_at,
      last_at: crashes[0].created_at,
    });
  }
  return alerts;
}

async function providerRecovery(app: AlertsDeps, scope: Scope): Promise<Alert[]> {
  const events = await loggedEvents(app, scope, ['provider_recovery.changed']);
  if (events.length === 0) return [];
  const last = events[0].payload;
  return [
    {
      id: 'provider_recovery',
      kind: 'provider_recovery',
      severity: 'info',
      session_id: scope.sessions ? (scope.sessions[0] ?? null) : null,
      summary: `rate-limit recovery switched providers ${events.length} time(s); last ${String(last.from)} → ${String(last.to)}`,
      value: events.length,
      threshold: 1,
      since: events.at(-1)!.created_at,
      last_at: events[0].created_at,
    },
  ];
}

async function hookFailures(app: AlertsDeps, scope: Scope, threshold: number): Promise<Alert[]> {
  const sessions = scope.sessions;
  const rows = await failedHookRuns(app.db, { since: scope.since, sessionIds: sessions });
  if (rows.length < threshold) return [];
  const packs = [...new Set(rows.map((r) => r.pack_name))].sort();
  return [
    {
      id: 'hook_failures',
      kind: 'hook_failures',
      severity: 'warning',
      session_id: sessions ? (sessions[0] ?? null) : null,
      summary: `${rows.length} pack hook run(s) failed or timed out (${packs.join(', ')}); last: hook ${rows[0].hook_index} on ${rows[0].event} (${rows[0].status})`,
      value: rows.length,
      threshold,
      since: rows.at(-1)!.started_at,
      last_at: rows[0].started_at,
    },
  ];
}

async function cappedActivations(app: AlertsDeps, scope: Scope): Promise<Alert[]> {
  const capped = (await app.health.activations({ since: scope.since, limit: 1000 })).filter(
    (a) => (!scope.sessions || scope.sessions.includes(a.session_id)) && a.reason?.endsWith('_cap'),
  );
  if (capped.length === 0) return [];
  return [
    {
      id: 'health_followon_capped',
      kind: 'health_followon_capped',
      severity: 'info',
      session_id: scope.sessions ? (scope.sessions[0] ?? null) : null,
      summary: `${capped.length} health follow-on activation(s) skipped by a cap (${[...new Set(capped.map((a) => a.reason))].sort().join(', ')})`,
      value: capped.length,
      threshold: 1,
      since: capped.at(-1)!.created_at,
      last_at: capped[0].created_at,
    },
  ];
}
