/**
 * The non-streaming answer: wait for the run, record how it ended, and answer one
 * `chat.completion` envelope (or a flat error when the run did not complete).
 * @module
 */
import type { Context } from 'hono';
import { textOf } from '../../../agent/history';
import type { RunResult } from '../../../agent/types';
import type { App } from '../../../app';
import { SvcError } from '../../../errors';
import { cancelRun, cleanup, endedByRunFinish, finish, finishInRunFinish, type Prepared } from './prepared';
import { finishReasonOf, runFailure, usageOf } from './run-result';

export async function jsonAnswer(
  c: Context,
  app: App,
  prepared: Prepared,
  headers: Record<string, string>,
): Promise<Response> {
  prepared.onEvent(() => {});
  // A completed run's ledger row ends in its finish (PostgreSQL: its statement; SQLite: its transaction).
  const release = finishInRunFinish(app, prepared);
  let result: RunResult;
  try {
    result = await app.agent.wait(prepared.runId, { signal: c.req.raw.signal });
  } catch (error) {
    release();
    if (await endedByRunFinish(app, prepared)) {
      cleanup(prepared);
      throw error;
    }
    await cancelRun(app, prepared.runId);
    await finish(app, prepared, {
      status: 'disconnected',
      finish_reason: null,
      http_status: null,
      error: 'client disconnected',
    });
    cleanup(prepared);
    throw error;
  }
  release();
  cleanup(prepared);
  if (result.status !== 'completed') {
    const failure = runFailure(result);
    await finish(app, prepared, {
      status: result.status === 'cancelled' || result.status === 'interrupted' ? 'cancelled' : 'failed',
      finish_reason: null,
      http_status: failure.status,
      error: failure.message,
      usage: result.usage,
    });
    throw new SvcError(failure.status === 502 ? 'unavailable' : 'internal', failure.message, {
      status: failure.status,
    });
  }
  const finishReason = finishReasonOf(result);
  // Written by the run's finish already: nothing left before the answer.
  if (!prepared.ended)
    await finish(app, prepared, {
      status: 'completed',
      finish_reason: finishReason,
      http_status: 200,
      error: null,
      usage: result.usage,
    });
  const body = {
    id: prepared.requestId,
    object: 'chat.completion',
    created: prepared.created,
    model: prepared.model.resolved.selector,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: await answerText(app, prepared), refusal: null },
        logprobs: null,
        finish_reason: finishReason,
      },
    ],
    usage: usageOf(result),
  };
  return c.json(app.redactor.value(body), 200, headers);
}

/** Every assistant text of the run, in order (what the stream sent, joined the same way). */
async function answerText(app: App, prepared: Prepared): Promise<string> {
  return (await app.sessions.messages(prepared.sessionId))
    .filter((m) => m.run_id === prepared.runId && m.role === 'assistant')
    .map((m) => textOf(m.parts))
    .filter(Boolean)
    .join('\n\n');
}
