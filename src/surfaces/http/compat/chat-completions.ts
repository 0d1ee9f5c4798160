/**
 * `POST /v1/chat/completions` (spec, Endpoints → Compat surface; docs/compat.md). Each request is
 * an agent run in a session: a fresh session per request, or the session named by the
 * `X-Svc-Session-Id` header. The run is the real agent (svc's tools, prompt, permissions), so
 * model tool calls execute server-side under `options.openai_compat.tool_policy`; the client sees
 * the assistant's text. `stream: true` → `chat.completion.chunk` SSE ending with `data: [DONE]`.
 *
 * Errors before the answer starts (bad body, unknown model, unknown session) are plain HTTP errors
 * with the flat body `{"error": "<message>", "code": <status>}`; a run that fails after a stream
 * opened ends it with `data: {"error":{"message":…,"type":"invalid_request_error"}}` then
 * `data: [DONE]`. A client that disconnects cancels its run (nobody reads the answer).
 * @module
 */
import type { Context } from 'hono';
import type { App } from '../../../app';
import type { StreamTracker } from '../sse';
import { CONTINUE_PROMPT } from './conversation';
import { jsonAnswer } from './json-answer';
import { COMPAT_ORIGIN, prepare, SESSION_HEADER } from './prepare';
import { compatRunQueue, type QueueLeave } from './run-queue';
import { streamAnswer } from './stream-answer';

export interface ChatCompletionsOptions {
  streams: StreamTracker;
}

/**
 * One request: its body, then a slot in the run queue (run-queue.ts: 429 past its depth), then prepare (session,
 * run, ledger row: prepare.ts), then answer as JSON (json-answer.ts) or as SSE chunks
 * (stream-answer.ts). The slot is held until the answer ends (the stream closes or the JSON is
 * built), so at most `max_concurrent_runs` agent runs of the surface are live at once.
 */
export function chatCompletions(c: Context, app: App, options: ChatCompletionsOptions): Promise<Response> {
  // The body is read before the request queues: a slot bounds agent runs, not a client's upload
  // (four clients sending their bodies slowly held every slot until Node's request timeout, and
  // the surface answered nobody meanwhile). `prepare` reads it again from Hono's cache.
  // No async frame held while queued (most of a burst waits here).
  return c.req
    .text()
    .then(() => compatRunQueue(app).acquire(queueLeave(c)))
    .then((free) => answerInSlot(c, app, options, free));
}

/**
 * What tells the run queue the request's client went away: from node-front.ts the request itself
 * (a `QueueLeave`: no AbortController while it waits, issue 17 item 4, p-inflight), else its signal.
 */
export function queueLeave(c: Context): AbortSignal | QueueLeave {
  const raw = c.req.raw as Request & Partial<QueueLeave>;
  return raw.onLeave ? (raw as QueueLeave) : raw.signal;
}

/** The request once it holds a run slot (`free` frees it). */
export async function answerInSlot(
  c: Context,
  app: App,
  options: ChatCompletionsOptions,
  free: () => void,
): Promise<Response> {
  let prepared: Awaited<ReturnType<typeof prepare>>;
  try {
    prepared = await prepare(c, app);
  } catch (error) {
    free();
    throw error;
  }
  const release = prepared.release;
  prepared.release = () => {
    release();
    free();
  };
  const headers = {
    'x-request-id': prepared.requestId,
    [SESSION_HEADER]: prepared.sessionId,
    'x-svc-run-id': prepared.runId,
  };
  if (prepared.request.stream) return streamAnswer(c, app, prepared, headers, options.streams);
  try {
    return await jsonAnswer(c, app, prepared, headers);
  } finally {
    free();
  }
}

export { COMPAT_ORIGIN, CONTINUE_PROMPT, SESSION_HEADER };
