/**
 * Compaction driven by the agent service: during a run (state, events, ledger rows; a failed
 * summary does not fail the run) and on demand for an idle session (summarize_session).
 * @module
 */
import { SvcError, toSvcError } from '../errors';
import { compactHistory } from './compaction';
import { type AgentCore, busyElsewhere } from './session-runtime';
import type { AgentService, CompactionResult } from './types';

/** Compact the session's history at a step boundary of its run. */
export async function compactDuringRun(
  core: AgentCore,
  sessionId: string,
  runId: string,
  signal: AbortSignal,
  options: { keepFromMessageId?: string; reason?: 'auto' | 'manual' | 'health_followon' },
) {
  const a = core.host;
  core.setState(sessionId, 'compacting', runId);
  core.publish(sessionId, 'compaction.started', {
    session_id: sessionId,
    run_id: runId,
    reason: options.reason ?? 'auto',
  });
  await a.runs.append(runId, 'phase', { phase: 'compaction' });
  try {
    const outcome = await compactHistory(a, {
      sessionId,
      runId,
      signal,
      keepFromMessageId: options.keepFromMessageId,
    });
    core.publish(sessionId, 'compaction.finished', {
      session_id: sessionId,
      summary_message_id: outcome.summary_message_id,
      tokens_before: outcome.tokens_before,
      tokens_after: outcome.tokens_after,
    });
    await a.runs.append(runId, 'compaction.finished', { ...outcome });
  } catch (error) {
    if (signal.aborted) throw error;
    // A failed summary must not fail the run: it goes on with the full history.
    const e = toSvcError(error);
    a.log.warn('auto-compaction failed', { session_id: sessionId, error: e.message });
    await a.runs.append(runId, 'compaction.failed', { code: e.code, message: a.redactor.string(e.message) });
  } finally {
    if (core.runtime(sessionId).state === 'compacting') core.setState(sessionId, 'running', runId);
  }
}

/** Summarize the older turns of an idle session (summarize_session). */
export async function summarizeSession(
  core: AgentCore,
  sessionId: string,
  options: Parameters<AgentService['summarize']>[1] = {},
): Promise<CompactionResult> {
  const a = core.host;
  await a.sessions.require(sessionId);
  const rt = core.runtime(sessionId);
  if (rt.state !== 'idle' || (await busyElsewhere(a, sessionId))) {
    throw new SvcError(
      'conflict',
      `session ${sessionId} has an active run; wait for it or cancel it before summarizing`,
    );
  }
  core.setState(sessionId, 'compacting', null);
  core.publish(sessionId, 'compaction.started', {
    session_id: sessionId,
    reason: options.reason ?? 'manual',
  });
  try {
    const outcome = await compactHistory(a, { sessionId, signal: options.signal });
    core.publish(sessionId, 'compaction.finished', {
      session_id: sessionId,
      summary_message_id: outcome.summary_message_id,
      tokens_before: outcome.tokens_before,
      tokens_after: outcome.tokens_after,
    });
    return {
      session_id: sessionId,
      summary_message_id: outcome.summary_message_id,
      messages_summarized: outcome.messages_summarized,
      tokens_before: outcome.tokens_before,
      tokens_after: outcome.tokens_after,
    };
  } finally {
    core.setState(sessionId, 'idle', null);
    core.notifyIdle(sessionId);
  }
}
