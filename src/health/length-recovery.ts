/**
 * `get_length_recovery_status`: length recovery in the agent loop (src/agent/run-loop.ts). When a
 * step ends because the model hit its output token limit (finish reason `length`), the run
 * continues the turn with a continuation note, up to `options.length_recovery.max_attempts`
 * times, appending a `length_recovery` ledger event each time. Per run:
 *
 * - `recovered`: it continued and the run did not end on the limit;
 * - `exhausted`: the attempts ran out (or the step limit came first) and the run ended on it;
 * - `not_attempted`: it ended on the limit with recovery off (or max_attempts 0);
 * - `in_progress`: the run is still going.
 * @module
 */
import { type HealthReadoutDeps, ledgerEvents, runById, scopeOf } from './evidence';

export type LengthRecoveryOutcome = 'recovered' | 'exhausted' | 'not_attempted' | 'in_progress';

export interface LengthRecoveryRun {
  run_id: string;
  session_id: string;
  /** Steps that ended on the output limit. */
  length_finishes: number;
  attempts: number;
  outcome: LengthRecoveryOutcome;
  run_status: string;
  last_at: number;
}

export interface LengthRecoveryStatus {
  session_id: string | null;
  since_hours: number;
  config: { enabled: boolean; max_attempts: number };
  counts: {
    length_finishes: number;
    attempts: number;
    runs: number;
  } & Record<LengthRecoveryOutcome, number>;
  recent: LengthRecoveryRun[];
}

export async function lengthRecoveryStatus(
  app: HealthReadoutDeps,
  input: { session_id?: string; since_hours: number; limit: number },
): Promise<LengthRecoveryStatus> {
  const since = app.clock.now() - input.since_hours * 3_600_000;
  const scope = await scopeOf(app, { session_id: input.session_id, since_ms: since });
  const events = [
    ...(await ledgerEvents(app, scope, ['step.finished'], {
      payloadEquals: { finish_reason: 'length' },
    })),
    ...(await ledgerEvents(app, scope, ['length_recovery'])),
  ];
  const byRun = new Map<string, { session_id: string; finishes: number; attempts: number; last: number }>();
  for (const event of events) {
    const entry = byRun.get(event.run_id) ?? {
      session_id: event.session_id,
      finishes: 0,
      attempts: 0,
      last: 0,
    };
    if (event.type === 'length_recovery') entry.attempts++;
    else entry.finishes++;
    entry.last = Math.max(entry.last, event.created_at);
    byRun.set(event.run_id, entry);
  }
  const rows: LengthRecoveryRun[] = [];
  for (const [runId, entry] of byRun) {
    const run = await runById(app, runId);
    const status = run?.status ?? 'unknown';
    const endedOnLimit = run?.reason?.startsWith('length') ?? false;
    const outcome: LengthRecoveryOutcome =
      status === 'running' || status === 'queued'
        ? 'in_progress'
        : entry.attempts === 0
          ? 'not_attempted'
          : endedOnLimit
            ? 'exhausted'
            : 'recovered';
    rows.push({
      run_id: runId,
      session_id: entry.session_id,
      length_finishes: entry.finishes,
      attempts: entry.attempts,
      outcome,
      run_status: status,
      last_at: entry.last,
    });
  }
  rows.sort((a, b) => b.last_at - a.last_at || b.run_id.localeCompare(a.run_id));
  const count = (outcome: LengthRecoveryOutcome) => rows.filter((r) => r.outcome === outcome).length;
  const recovery = app.config.options.length_recovery;
  return {
    session_id: input.session_id ?? null,
    since_hours: input.since_hours,
    config: { enabled: recovery.enabled, max_attempts: recovery.max_attempts },
    counts: {
      length_finishes: rows.reduce((n, r) => n + r.length_finishes, 0),
      attempts: rows.reduce((n, r) => n + r.attempts, 0),
      runs: rows.length,
      recovered: count('recovered'),
      exhausted: count('exhausted'),
      not_attempted: count('not_attempted'),
      in_progress: count('in_progress'),
    },
    recent: rows.slice(0, input.limit),
  };
}
