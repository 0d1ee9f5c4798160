/**
 * A chat-completions request once its run has started (`Prepared`), and how it ends: the ledger
 * row and the run ledger's `openai_compat.response` event (`finish`), the session subscription
 * and runtime slot released (`cleanup`), the run stopped when nobody reads the answer
 * (`cancelRun`).
 * @module
 */
import type { RunResult } from '../../../agent/types';
import type { App } from '../../../app';
import { toSvcError } from '../../../errors';
import type { SessionEvent } from '../../../events/bus';
import { finishInRun, finishRequest, finishRequestWithEvent } from './ledger';
import type { CompatModel } from './model';
import type { ChatRequest } from './request';
import { finishReasonOf } from './run-result';

export interface Prepared {
  request: ChatRequest;
  requestId: string;
  sessionId: string;
  runId: string;
  model: CompatModel;
  recorded: boolean;
  created: number;
  release: () => void;
  /** Events of the session published while the request started, before the run id was known. */
  early: SessionEvent[];
  unsubscribe: () => void;
  onEvent(listener: (event: SessionEvent) => void): void;
  /** The ledger row's end and its event were written by the run's finish (`finishInRunFinish`). */
  ended?: boolean;
  /** The run's finish took the row's end (`finishInRunFinish`): it may be in flight now. */
  ending?: boolean;
  /** Undoes `finishInRunFinish`'s registration, made by `prepare` once the run id is known. */
  finishing?: () => void;
}

/** How a request ended, as the ledger records it. */
export interface RequestOutcome {
  status: 'completed' | 'failed' | 'cancelled' | 'disconnected';
  finish_reason: string | null;
  http_status: number | null;
  error: string | null;
  usage?: Pick<RunResult['usage'], 'input_tokens' | 'output_tokens'>;
}

/** Cancel the request's run if it is still queued or running; whether the run exists. */
export async function cancelRun(
  app: App,
  runId: string,
  reason = 'the chat-completions client disconnected',
): Promise<boolean> {
  try {
    const run = await app.runs.get(runId);
    if (run && (run.status === 'queued' || run.status === 'running')) {
      await app.agent.cancelRun(runId, reason);
    }
    return run !== undefined;
  } catch (error) {
    app.log.warn('compat cancel failed', { run_id: runId, error: toSvcError(error).message });
    return false;
  }
}

/**
 * A start that failed after its run and the request's row were committed (PostgreSQL's lone
 * start, p-pgstart3): the run cancelled and the row ended `failed` with the error the request
 * answers, not left `running`.
 */
export async function abandonStart(
  app: App,
  start: { runId: string; requestId: string; recorded: boolean },
  error: unknown,
): Promise<void> {
  const reason = 'the chat-completions request failed at its start';
  if (!(await cancelRun(app, start.runId, reason)) || !start.recorded) return;
  const failure = toSvcError(error);
  await writeOutcome(app, start, {
    status: 'failed',
    finish_reason: null,
    http_status: failure.status,
    error: failure.message,
  });
}

export function cleanup(prepared: Prepared): void {
  prepared.unsubscribe();
  prepared.release();
}

export async function finish(app: App, prepared: Prepared, outcome: RequestOutcome): Promise<void> {
  if (!prepared.recorded) return;
  await writeOutcome(
    app,
    { requestId: prepared.requestId, runId: prepared.runId, stream: prepared.request.stream },
    outcome,
  );
}

/**
 * A streamed request's completed outcome written by its run's finish (`AgentService.finishWith`):
 * the same row and event `finish` writes at the answer's end; PostgreSQL: one round trip fewer
 * between the model's last byte and `[DONE]` (p-pgcompat6); SQLite: one transaction body fewer
 * (p-syncrepo). Only a
 * completed run (an unfinished one's row carries the message the answer builds from its result).
 * Answers the release (a client gone, a shutdown: their own outcome is written instead).
 */
export function finishInRunFinish(app: App, prepared: Prepared): () => void {
  // Registered by `prepare` with the run's id: on PostgreSQL the run may finish before `prepare`
  // returns (its start commits alone; a provider that answers fast), and a finish with nothing
  // registered leaves the row's end to a statement of its own after it (p-pgsingle).
  if (prepared.finishing) return prepared.finishing;
  if (!prepared.recorded || !app.compatRequests.finishInRunFinish) return () => {};
  const recorded = { requestId: prepared.requestId, runId: prepared.runId, stream: prepared.request.stream };
  return app.agent.finishWith(prepared.runId, (ended) => {
    if (ended.status !== 'completed') return undefined;
    const { patch, response } = outcomeWrites(recorded, {
      status: 'completed',
      finish_reason: finishReasonOf(ended),
      http_status: 200,
      error: null,
      usage: ended.usage,
    });
    const write = finishInRun(app, recorded.requestId, patch, response, () => {
      prepared.ended = true;
    });
    if (write) prepared.ending = true;
    return write;
  });
}

/**
 * A client gone while its run's finish carries the row's end (`ending`): whether that finish
 * ended the row (`completed`, its one `openai_compat.response`), waited for; the caller then
 * writes no outcome of its own, as on SQLite, where a client gone after `run.finished` writes none.
 */
export async function endedByRunFinish(app: App, prepared: Prepared): Promise<boolean> {
  if (!prepared.ending) return false;
  await app.agent.wait(prepared.runId).catch(() => undefined);
  return prepared.ended === true;
}

/** The request's row and run, and whether it streams (absent: not told, as for a failed start). */
type RecordedRequest = { requestId: string; runId: string; stream?: boolean };

/** The request row's end and its ledger event; a failure is logged, never thrown. */
async function writeOutcome(app: App, recorded: RecordedRequest, outcome: RequestOutcome): Promise<void> {
  // The row's end and its ledger event: one commit (a savepoint when the run's own finish is
  // committing around it: the stream answers from the run.finished event).
  try {
    const { patch, response } = outcomeWrites(recorded, outcome);
    // PostgreSQL: the row and the event in one statement, no transaction around it (ledger.ts).
    if (await finishRequestWithEvent(app, recorded.requestId, recorded.runId, patch, response)) return;
    await app.store.transactions.run(() => finishOutcome(app, recorded, patch, response));
  } catch (error) {
    app.log.warn('compat ledger write failed', { request_id: recorded.requestId, error });
  }
}

/** The row's end and the `openai_compat.response` payload of an outcome. */
function outcomeWrites(recorded: RecordedRequest, outcome: RequestOutcome) {
  const patch = {
    status: outcome.status,
    finish_reason: outcome.finish_reason,
    http_status: outcome.http_status,
    error: outcome.error,
    prompt_tokens: outcome.usage?.input_tokens ?? 0,
    completion_tokens: outcome.usage?.output_tokens ?? 0,
  };
  const response = {
    request_id: recorded.requestId,
    status: outcome.status,
    finish_reason: outcome.finish_reason,
    http_status: outcome.http_status,
    ...(recorded.stream === undefined ? {} : { stream: recorded.stream }),
    ...(outcome.error ? { error: outcome.error } : {}),
  };
  return { patch, response };
}

async function finishOutcome(
  app: App,
  recorded: RecordedRequest,
  patch: ReturnType<typeof outcomeWrites>['patch'],
  response: Record<string, unknown>,
): Promise<void> {
  // The request's row references its run (ON DELETE CASCADE): a row finished means the run is
  // there for its event (gone only when its session was deleted meanwhile), without reading it.
  if (await finishRequest(app, recorded.requestId, patch)) {
    await app.runs.append(recorded.runId, 'openai_compat.response', response);
  }
}
