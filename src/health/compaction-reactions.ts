/**
 * `get_compaction_reactions`: what happened after each compaction (auto, manual, health
 * follow-on). From the session event log (`compaction.started`/`compaction.finished`) and the run
 * ledger (`compaction.failed`, the steps and errors that followed):
 *
 * - a compaction inside a run: did the run take more steps after it, how did it end, and which
 *   errors (tool errors, provider or run errors) came after it in that run;
 * - a compaction between runs (summarize_session, the token_pressure.summarize rule): the same
 *   for the session's next run, once there is one.
 * @module
 */
import {
  clip,
  type HealthReadoutDeps,
  type LedgerEvent,
  type LoggedEvent,
  ledgerEvents,
  loggedEvents,
  type RunRow,
  runById,
  scopeOf,
} from './evidence';

export interface CompactionReaction {
  at: number;
  session_id: string;
  summary_message_id: string;
  /** auto, manual or health_followon (from compaction.started). */
  reason: string;
  /** The run it happened in; null between runs. */
  run_id: string | null;
  tokens_before: number;
  tokens_after: number;
  tokens_saved: number;
  /** The run the reaction is read from: the same run, or the session's next one. */
  observed_run_id: string | null;
  observed_run_status: string | null;
  /** Model steps the observed run took after the compaction (null: no run observed yet). */
  steps_after: number | null;
  /** The run went on after the compaction and completed. Null while unknown. */
  continued_successfully: boolean | null;
  subsequent_errors: number;
  errors: { at: number; kind: 'tool_error' | 'provider_error' | 'run_error'; summary: string }[];
}

export interface CompactionReactionsStatus {
  session_id: string | null;
  since_hours: number;
  counts: {
    compactions: number;
    auto: number;
    manual: number;
    health_followon: number;
    continued_successfully: number;
    followed_by_errors: number;
    failed: number;
  };
  reactions: CompactionReaction[];
  /** Compactions that failed (the run went on with the full history). */
  failures: { at: number; session_id: string; run_id: string; code: string; message: string }[];
}

const ERROR_LIMIT = 3;

export async function compactionReactions(
  app: HealthReadoutDeps,
  input: { session_id?: string; since_hours: number; limit: number },
): Promise<CompactionReactionsStatus> {
  const since = app.clock.now() - input.since_hours * 3_600_000;
  const scope = await scopeOf(app, { session_id: input.session_id, since_ms: since });
  const logged = await loggedEvents(app, scope, ['compaction.started', 'compaction.finished']);
  const finished = logged.filter((e) => e.type === 'compaction.finished');
  const reactions: Awaited<ReturnType<typeof reactionTo>>[] = [];
  for (const event of finished) reactions.push(await reactionTo(app, event, logged));
  const failures = (await ledgerEvents(app, scope, ['compaction.failed'])).map((event) => ({
    at: event.created_at,
    session_id: event.session_id,
    run_id: event.run_id,
    code: String(event.payload.code ?? 'unknown'),
    message: app.redactor.string(clip(event.payload.message)),
  }));
  const byReason = (reason: string) => reactions.filter((r) => r.reason === reason).length;
  return {
    session_id: input.session_id ?? null,
    since_hours: input.since_hours,
    counts: {
      compactions: reactions.length,
      auto: byReason('auto'),
      manual: byReason('manual'),
      health_followon: byReason('health_followon'),
      continued_successfully: reactions.filter((r) => r.continued_successfully === true).length,
      followed_by_errors: reactions.filter((r) => r.subsequent_errors > 0).length,
      failed: failures.length,
    },
    reactions: reactions.slice(0, input.limit),
    failures: failures.slice(0, input.limit),
  };
}

async function reactionTo(
  app: HealthReadoutDeps,
  finished: LoggedEvent,
  logged: LoggedEvent[],
): Promise<CompactionReaction> {
  const started = logged.find(
    (e) => e.type === 'compaction.started' && e.session_id === finished.session_id && e.id < finished.id,
  );
  const runId = typeof started?.payload.run_id === 'string' ? started.payload.run_id : null;
  const before = Number(finished.payload.tokens_before ?? 0);
  const after = Number(finished.payload.tokens_after ?? 0);
  const observed = runId ? await runById(app, runId) : await nextRun(app, finished);
  let stepsAfter: number | null = null;
  let errors: CompactionReaction['errors'] = [];
  if (observed) {
    // In the same run: what came after the ledger's own compaction.finished; else the whole run.
    const marker = runId
      ? (await ledgerEvents(app, { since: 0 }, ['compaction.finished'], { runId })).find(
          (e) => e.payload.summary_message_id === finished.payload.summary_message_id,
        )
      : undefined;
    const afterMarker = (e: LedgerEvent) => !marker || e.seq > marker.seq;
    const followed = (
      await ledgerEvents(app, { since: 0 }, ['step.finished', 'tool.finished', 'error'], {
        runId: observed.id,
      })
    ).filter(afterMarker);
    stepsAfter = followed.filter((e) => e.type === 'step.finished').length;
    errors = followed
      .filter((e) => e.type === 'error' || (e.type === 'tool.finished' && e.payload.is_error === true))
      .map((e) => ({
        at: e.created_at,
        kind:
          e.type === 'tool.finished'
            ? ('tool_error' as const)
            : e.payload.source === 'provider'
              ? ('provider_error' as const)
              : ('run_error' as const),
        summary: app.redactor.string(clip(e.payload.error ?? e.payload.message)),
      }));
  }
  const ended = observed && !['running', 'queued'].includes(observed.status);
  return {
    at: finished.created_at,
    session_id: finished.session_id,
    summary_message_id: String(finished.payload.summary_message_id ?? ''),
    reason: String(started?.payload.reason ?? 'unknown'),
    run_id: runId,
    tokens_before: before,
    tokens_after: after,
    tokens_saved: Math.max(0, before - after),
    observed_run_id: observed?.id ?? null,
    observed_run_status: observed?.status ?? null,
    steps_after: stepsAfter,
    continued_successfully: ended ? observed.status === 'completed' && (stepsAfter ?? 0) > 0 : null,
    subsequent_errors: errors.length,
    errors: errors.slice(0, ERROR_LIMIT),
  };
}

/** The session's first run started after a compaction between runs (event log order). */
async function nextRun(app: HealthReadoutDeps, finished: LoggedEvent): Promise<RunRow | undefined> {
  const started = (
    await loggedEvents(app, { since: 0, sessions: [finished.session_id] }, ['run.started'], {
      afterId: finished.id,
    })
  ).at(-1);
  const runId = started?.payload.run_id;
  return typeof runId === 'string' ? await runById(app, runId) : undefined;
}
