/**
 * The streaming answer (`stream: true`): `chat.completion.chunk` SSE from the run's text deltas,
 * a final chunk with the finish reason (and usage when asked), then `data: [DONE]`. A run that
 * fails mid-stream sends `data: {"error":{…}}` first; a client that goes away cancels the run.
 * @module
 */
import type { Context } from 'hono';
import type { ResultWithoutText } from '../../../agent/types';
import type { App } from '../../../app';
import { toSvcError } from '../../../errors';
import type { SessionEvent } from '../../../events/bus';
import type { SseStream, StreamTracker } from '../sse';
import { openRouteSseStream } from '../sse-node';
import { cancelRun, cleanup, endedByRunFinish, finish, finishInRunFinish, type Prepared } from './prepared';
import { finishReasonOf, runFailure, usageOf } from './run-result';

export function streamAnswer(
  c: Context,
  app: App,
  prepared: Prepared,
  headers: Record<string, string>,
  streams: StreamTracker,
): Response {
  const { request, runId } = prepared;
  let finished = false;
  // A completed run's ledger row ends in its finish (PostgreSQL: its statement; SQLite: its transaction):
  // before run.finished reaches this stream, so before `[DONE]` (ENGINE-COMPAT-5) as before.
  const release = finishInRunFinish(app, prepared);
  // The head after the model request, `[DONE]` in `run.finished`'s delivery (p-single, p-pgsingle);
  // SQLite's start batch commits a turn later: head first, a readable answer read before (p-headfirst).
  const later = true;
  app.store?.transactions.yieldBatch?.();
  const { stream, response } = openRouteSseStream(
    c,
    {
      signal: c.req.raw.signal,
      heartbeatMs: app.config.services.http.sse_heartbeat_seconds * 1000,
      tracker: streams,
      headWithFirst: later,
      onShutdown: (s) => {
        if (finished) return;
        finished = true;
        release();
        open();
        // The ledger row ends here too: the App closes right after, and nothing else would finish it.
        void finish(app, prepared, {
          status: 'cancelled',
          finish_reason: null,
          http_status: 200,
          error: 'server shutting down; the run was interrupted',
        });
        sendError(s, 'server shutting down; the run was interrupted');
      },
    },
    headers,
  );
  const { base, chunk, textChunk, open } = chunkWriters(stream, prepared, later);
  let lastMessage: string | undefined;
  let wroteText = false;
  let flushed = false;
  stream.onClose(async () => {
    release();
    cleanup(prepared);
    if (finished) return;
    // The client went away before the answer ended: stop the run, nobody reads it.
    finished = true;
    // Unless its finish, already sent, ends the row: one outcome a request (p-pgcompat6).
    if (await endedByRunFinish(app, prepared)) return;
    await cancelRun(app, runId);
    await finish(app, prepared, {
      status: 'disconnected',
      finish_reason: null,
      http_status: 200,
      error: 'client disconnected',
    });
  });
  const failed = (error: unknown) => {
    app.log.warn('compat stream answer failed', { error });
    open();
    sendError(stream, app.redactor.string(toSvcError(error).message));
  };
  // Every event of the session passes here (a dozen or more a request): all but the run's end are
  // handled synchronously, with no promise (and no async hook) per event.
  const onEvent = (event: SessionEvent): void => {
    if (finished) return;
    const payload = event.payload as { run_id?: string };
    if (payload.run_id !== runId) return;
    if (event.type === 'message.delta') {
      const delta = event.payload as { message_id: string; part: string; delta: string };
      if (delta.part !== 'text' || !delta.delta) return;
      open();
      const separator = wroteText && lastMessage !== delta.message_id ? '\n\n' : '';
      lastMessage = delta.message_id;
      wroteText = true;
      textChunk(app.redactor.string(separator + delta.delta));
      // The first text leaves in the tick the provider's text came in, not after the rest of
      // that read (the step's end, the run's finish), with the deltas of that read queued behind
      // it (they waited for the assistant message): one socket write for the read's text.
      if (!flushed) {
        flushed = true;
        queueMicrotask(stream.flush);
      }
      return;
    }
    if (event.type !== 'run.finished') return;
    finished = true;
    open();
    // A completed run whose finish ended the row here: `[DONE]` in this delivery, from the event's
    // own status, reason and usage (the row's, written by the same finish), not after a result
    // read's promises and the rest of the finish (its log record, the session's idle state).
    const ended = event.payload as Pick<ResultWithoutText, 'status' | 'reason' | 'usage'>;
    if (later && prepared.ended && ended.status === 'completed') answerDone(ended);
    else answerEnd().catch(failed);
  };
  /** A completed run's last chunk (and usage), `[DONE]`: its row ended by the run's finish. */
  const answerDone = (result: Pick<ResultWithoutText, 'reason' | 'usage'>) => {
    // The refused-call check's events, kept for a result read that no longer comes: dropped.
    app.runs.takeAppended?.(runId, 'tool.finished');
    chunk({}, finishReasonOf(result));
    if (request.include_usage) stream.send({ data: JSON.stringify(usageChunk(base, usageOf(result))) });
    stream.close({ data: '[DONE]' });
  };
  /** The run ended: its last chunks (or its error), the ledger row's end, `[DONE]`. */
  const answerEnd = async () => {
    // The text went out as it streamed: the final message is not read (issue 18 item 6).
    let result: ResultWithoutText = await app.agent.result(runId, { text: false });
    // run.finished of a run another node ran may arrive before that node's finish commits (the
    // event log is written apart from the run's row): its end is then waited for.
    if (result.status === 'running' || result.status === 'queued') result = await app.agent.wait(runId);
    if (result.status !== 'completed') {
      const failure = runFailure(result);
      await finish(app, prepared, {
        status: result.status === 'cancelled' || result.status === 'interrupted' ? 'cancelled' : 'failed',
        finish_reason: null,
        http_status: 200,
        error: failure.message,
        usage: result.usage,
      });
      sendError(stream, app.redactor.string(failure.message));
      return;
    }
    const finishReason = finishReasonOf(result);
    chunk({}, finishReason);
    if (request.include_usage) {
      stream.send({ data: JSON.stringify(usageChunk(base, usageOf(result))) });
    }
    // Written by the run's finish already: nothing left before `[DONE]`.
    if (!prepared.ended)
      await finish(app, prepared, {
        status: 'completed',
        finish_reason: finishReason,
        http_status: 200,
        error: null,
        usage: result.usage,
      });
    stream.close({ data: '[DONE]' });
  };
  prepared.onEvent((event) => {
    try {
      onEvent(event);
    } catch (error) {
      failed(error);
    }
  });
  return response;
}

/**
 * The answer's chunks. Every chunk is `base` with one choice: its JSON is built around the delta's
 * (the same bytes as stringifying the whole object, without copying and re-encoding `base` for
 * every delta). `open` sends the role chunk, once: at the check phase of the request's turn
 * (`later`; else at once), or before whatever the stream sends first.
 */
function chunkWriters(stream: SseStream, prepared: Prepared, later: boolean) {
  const base = {
    id: prepared.requestId,
    object: 'chat.completion.chunk',
    created: prepared.created,
    model: prepared.model.resolved.selector,
    system_fingerprint: null,
  };
  const head = `${JSON.stringify(base).slice(0, -1)},"choices":[{"index":0,"delta":`;
  const tail = prepared.request.include_usage ? '}],"usage":null}' : '}]}';
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    stream.send({
      data: `${head}${JSON.stringify(delta)},"logprobs":null,"finish_reason":${JSON.stringify(finishReason)}${tail}`,
    });
  // A text delta's chunk: `chunk({ content })`'s bytes, without the object per delta.
  const textEnd = `},"logprobs":null,"finish_reason":null${tail}`;
  const textChunk = (content: string) =>
    stream.send({ data: `${head}{"content":${JSON.stringify(content)}${textEnd}` });
  // The head and the role chunk leave at this turn's check phase: a warm request writes its model
  // request in this turn, so they follow it (while the model thinks) instead of preceding it. What
  // the stream sends before (text, the end, an error) sends the role chunk first.
  let opened = false;
  const open = () => {
    if (opened) return;
    opened = true;
    chunk({ role: 'assistant', content: '', refusal: null });
  };
  const send = () => {
    if (opened || stream.closed) return;
    open();
    stream.flush();
  };
  if (later) setImmediate(send);
  else send();
  return { base, chunk, textChunk, open };
}

function sendError(stream: SseStream, message: string): void {
  stream.send({ data: JSON.stringify({ error: { message, type: 'invalid_request_error' } }) });
  stream.close({ data: '[DONE]' });
}

/**
 * The usage chunk: `base`'s fields written out, not `{ ...base, choices, usage }` (a property after
 * a spread goes through V8's runtime on Node 20, p-sqlprofile): the same object, the same JSON.
 */
function usageChunk<
  B extends { id: string; object: string; created: number; model: string; system_fingerprint: null },
  U,
>(base: B, usage: U) {
  return {
    id: base.id,
    object: base.object,
    created: base.created,
    model: base.model,
    system_fingerprint: base.system_fingerprint,
    choices: [],
    usage,
  };
}
