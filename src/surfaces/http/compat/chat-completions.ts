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
import { textOf } from '../../../agent/history';
import { createToolBridge } from '../../../agent/tool-bridge';
import type { RunResult } from '../../../agent/types';
import type { App } from '../../../app';
import { SvcError, toSvcError } from '../../../errors';
import type { SessionEvent } from '../../../events/bus';
import { createAgentToolbox } from '../../../tools/core/agent-toolbox';
import { openSseStream, type SseStream, type StreamTracker } from '../sse';
import { CONTINUE_PROMPT, type Conversation, planConversation } from './conversation';
import { finishRequest, ledgerEnabled, recordRequest } from './ledger';
import { type CompatModel, resolveCompatModel } from './model';
import { type ChatRequest, parseChatRequest } from './request';
import { compatRuntime, toolPolicyOf } from './runtime';

export const SESSION_HEADER = 'x-svc-session-id';
export const COMPAT_ORIGIN = 'openai_compat';

export interface ChatCompletionsOptions {
  streams: StreamTracker;
}

interface Prepared {
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
}

export async function chatCompletions(
  c: Context,
  app: App,
  options: ChatCompletionsOptions,
): Promise<Response> {
  const prepared = await prepare(c, app);
  const headers = {
    'x-request-id': prepared.requestId,
    [SESSION_HEADER]: prepared.sessionId,
    'x-svc-run-id': prepared.runId,
  };
  return prepared.request.stream
    ? streamAnswer(c, app, prepared, headers, options)
    : jsonAnswer(c, app, prepared, headers);
}

async function prepare(c: Context, app: App): Promise<Prepared> {
  const request = parseChatRequest(await c.req.text());
  const signal = c.req.raw.signal;
  const boundId = c.req.header(SESSION_HEADER)?.trim();
  const bound = boundId ? app.sessions.get(boundId) : undefined;
  if (boundId && !bound) {
    throw new SvcError(
      'not_found',
      `${SESSION_HEADER}: no session "${boundId}"; omit the header for a new session`,
    );
  }
  const model = await resolveCompatModel(app, request.model, { sessionModel: bound?.model, signal });
  const conversation = planConversation(request.messages);
  const requestId = app.ids.next('chatcmpl').replace('_', '-');
  // spec: messages are routed into the session. A bound session keeps its own history: only the
  // trailing user messages (and system messages) of the request are used. A new session and its
  // imported history are written in one transaction (one commit).
  const session =
    bound ??
    app.db.transaction(() => {
      const created = app.agent.createSession({ metadata: { openai_compat: { request_id: requestId } } });
      importHistory(app, created.id, conversation);
      return created;
    })();
  const runtime = compatRuntime(app);
  const release = runtime.enter(session.id, conversation.system);

  const early: SessionEvent[] = [];
  let listener: ((event: SessionEvent) => void) | undefined;
  const unsubscribe = app.bus.subscribe(session.id, (event) => {
    if (listener) listener(event);
    else early.push(event);
  });
  let runId: string | undefined;
  try {
    const pending = bound ? [] : conversation.pending;
    const send = {
      sessionId: session.id,
      prompt: conversation.prompt,
      model: model.resolved.selector,
      origin: COMPAT_ORIGIN,
      ifBusy: 'queue' as const,
    };
    if (pending.length) {
      // The pending tool calls run first, in the run's name, then the run starts.
      runId = app.agent.enqueue({ ...send, start: false }).run_id;
      await runPendingCalls(app, session.id, runId, conversation, signal);
      app.agent.drain(session.id);
    } else {
      runId = app.agent.send(send).run_id;
    }
  } catch (error) {
    if (runId) cancelRun(app, runId);
    unsubscribe();
    release();
    throw error;
  }

  const ledger = ledgerEnabled(app);
  const created = Math.floor(app.clock.now() / 1000);
  if (ledger.enabled) {
    const startedRunId = runId;
    try {
      // The request row and its run ledger event: one commit.
      app.db.transaction(() => {
        recordRequest(app, {
          request_id: requestId,
          run_id: startedRunId,
          session_id: session.id,
          requested_model: request.model,
          model: model.resolved.selector,
          model_source: model.source,
          stream: request.stream,
          include_usage: request.include_usage,
          session_binding: bound ? 'header' : 'new',
          message_count: request.messages.length,
          ignored_fields: request.ignored,
          status: 'running',
          finish_reason: null,
          http_status: null,
          error: null,
          prompt_tokens: 0,
          completion_tokens: 0,
          created_at: app.clock.now(),
        });
        app.runs.append(startedRunId, 'openai_compat.request', {
          request_id: requestId,
          stream: request.stream,
          include_usage: request.include_usage,
          requested_model: request.model,
          model: model.resolved.selector,
          model_source: model.source,
          messages: request.messages.length,
          session_binding: bound ? 'header' : 'new',
          imported_messages: bound ? 0 : conversation.history.length,
          pending_tool_calls: bound ? 0 : conversation.pending.length,
          prompt: conversation.continued ? 'continue' : 'user',
          ignored_fields: request.ignored,
          unknown_fields: request.unknown,
          tool_policy: toolPolicyOf(app).policy,
        });
      })();
    } catch (error) {
      app.log.warn('compat ledger write failed', { request_id: requestId, error });
    }
  }
  return {
    request,
    requestId,
    sessionId: session.id,
    runId,
    model,
    recorded: ledger.enabled,
    created,
    release,
    early,
    unsubscribe,
    onEvent(next) {
      listener = next;
      for (const event of early.splice(0)) next(event);
    },
  };
}

function importHistory(app: App, sessionId: string, conversation: Conversation): void {
  if (conversation.history.length === 0) return;
  app.db.transaction(() => {
    for (const entry of conversation.history) {
      app.sessions.appendMessage({
        session_id: sessionId,
        role: entry.role,
        parts: entry.parts,
        finished: true,
      });
    }
  })();
}

/**
 * Tool calls the client left without a result run through svc's tool path: the funnel (with the
 * compat tool policy layer), permissions, the tool itself, ledger events. Denied or unknown tools
 * are not run; their result says why. One tool turn with every result goes into the history.
 */
async function runPendingCalls(
  app: App,
  sessionId: string,
  runId: string,
  conversation: Conversation,
  signal: AbortSignal,
): Promise<void> {
  const ai = await import('ai');
  const runtime = compatRuntime(app);
  const effective = new Set(
    app
      .funnel(app.funnelContext(sessionId))
      .filter((e) => e.effective)
      .map((e) => e.name),
  );
  const toolbox = createAgentToolbox(app);
  const bridge = createToolBridge({
    app,
    toolbox,
    sessionId,
    runId,
    agent: app.sessions.require(sessionId).agent,
    signal,
    permission: {},
    isActive: (name) => effective.has(name),
    onResult: () => {},
  });
  const results: { tool_call_id: string; tool: string; output: string; is_error: boolean }[] = [];
  for (const call of conversation.pending) {
    const tool = app.tools.get(call.name);
    const denied = tool ? runtime.denies(tool) : undefined;
    if (!tool || denied) {
      const output = tool
        ? `forbidden: ${call.name} was not run: ${denied}`
        : `not_found: ${call.name} is not an svc tool (request tools are ignored; svc runs only its own registry)`;
      app.runs.append(runId, 'openai_compat.tool_denied', {
        tool_call_id: call.id,
        tool: call.name,
        reason: tool ? denied : 'unknown_tool',
      });
      results.push({ tool_call_id: call.id, tool: call.name, output, is_error: true });
      continue;
    }
    const set = bridge.toolSet(ai, [toolbox.get(tool.name)!]);
    const execute = set[tool.name].execute as (input: unknown, options: unknown) => Promise<string>;
    try {
      const output = await execute(call.input, { toolCallId: call.id, messages: [] });
      results.push({ tool_call_id: call.id, tool: call.name, output, is_error: false });
    } catch (error) {
      results.push({
        tool_call_id: call.id,
        tool: call.name,
        output: error instanceof Error ? error.message : String(error),
        is_error: true,
      });
    }
  }
  // The client's partial results of that turn come first, then the ones run here: one tool turn.
  const messages = app.sessions.messages(sessionId);
  const last = messages.at(-1);
  const parts = results.map((r) => ({ type: 'tool-result' as const, ...r }));
  if (last?.role === 'tool') app.sessions.updateMessage(last.id, { parts: [...last.parts, ...parts] });
  else app.sessions.appendMessage({ session_id: sessionId, role: 'tool', parts, finished: true });
}

async function jsonAnswer(
  c: Context,
  app: App,
  prepared: Prepared,
  headers: Record<string, string>,
): Promise<Response> {
  prepared.onEvent(() => {});
  let result: RunResult;
  try {
    result = await app.agent.wait(prepared.runId, { signal: c.req.raw.signal });
  } catch (error) {
    cancelRun(app, prepared.runId);
    finish(app, prepared, {
      status: 'disconnected',
      finish_reason: null,
      http_status: null,
      error: 'client disconnected',
    });
    cleanup(prepared);
    throw error;
  }
  cleanup(prepared);
  if (result.status !== 'completed') {
    const failure = runFailure(result);
    finish(app, prepared, {
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
  finish(app, prepared, {
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
        message: { role: 'assistant', content: answerText(app, prepared), refusal: null },
        logprobs: null,
        finish_reason: finishReason,
      },
    ],
    usage: usageOf(result),
  };
  return c.json(app.redactor.value(body), 200, headers);
}

function streamAnswer(
  c: Context,
  app: App,
  prepared: Prepared,
  headers: Record<string, string>,
  options: ChatCompletionsOptions,
): Response {
  const { request, runId } = prepared;
  let finished = false;
  const { stream, response } = openSseStream(
    {
      signal: c.req.raw.signal,
      heartbeatMs: app.config.services.http.sse_heartbeat_seconds * 1000,
      tracker: options.streams,
      onShutdown: (s) => {
        if (finished) return;
        finished = true;
        // The ledger row ends here too: the App closes right after, and nothing else would finish it.
        finish(app, prepared, {
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
  const base = {
    id: prepared.requestId,
    object: 'chat.completion.chunk',
    created: prepared.created,
    model: prepared.model.resolved.selector,
    system_fingerprint: null,
  };
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    stream.send({
      data: JSON.stringify({
        ...base,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
        ...(request.include_usage ? { usage: null } : {}),
      }),
    });

  chunk({ role: 'assistant', content: '', refusal: null });
  let lastMessage: string | undefined;
  let wroteText = false;
  stream.onClose(() => {
    cleanup(prepared);
    if (finished) return;
    // The client went away before the answer ended: stop the run, nobody reads it.
    finished = true;
    cancelRun(app, runId);
    finish(app, prepared, {
      status: 'disconnected',
      finish_reason: null,
      http_status: 200,
      error: 'client disconnected',
    });
  });
  prepared.onEvent((event) => {
    if (finished) return;
    const payload = event.payload as { run_id?: string };
    if (payload.run_id !== runId) return;
    if (event.type === 'message.delta') {
      const delta = event.payload as { message_id: string; part: string; delta: string };
      if (delta.part !== 'text' || !delta.delta) return;
      const separator = wroteText && lastMessage !== delta.message_id ? '\n\n' : '';
      lastMessage = delta.message_id;
      wroteText = true;
      chunk({ content: app.redactor.string(separator + delta.delta) });
      return;
    }
    if (event.type !== 'run.finished') return;
    finished = true;
    const result = app.agent.result(runId);
    if (result.status !== 'completed') {
      const failure = runFailure(result);
      finish(app, prepared, {
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
      stream.send({ data: JSON.stringify({ ...base, choices: [], usage: usageOf(result) }) });
    }
    finish(app, prepared, {
      status: 'completed',
      finish_reason: finishReason,
      http_status: 200,
      error: null,
      usage: result.usage,
    });
    stream.close({ data: '[DONE]' });
  });
  return response;
}

function sendError(stream: SseStream, message: string): void {
  stream.send({ data: JSON.stringify({ error: { message, type: 'invalid_request_error' } }) });
  stream.close({ data: '[DONE]' });
}

/** Every assistant text of the run, in order (what the stream sent, joined the same way). */
function answerText(app: App, prepared: Prepared): string {
  return app.sessions
    .messages(prepared.sessionId)
    .filter((m) => m.run_id === prepared.runId && m.role === 'assistant')
    .map((m) => textOf(m.parts))
    .filter(Boolean)
    .join('\n\n');
}

function finishReasonOf(result: RunResult): 'stop' | 'length' {
  return result.reason?.startsWith('length') ? 'length' : 'stop';
}

function usageOf(result: RunResult) {
  return {
    prompt_tokens: result.usage.input_tokens,
    completion_tokens: result.usage.output_tokens,
    total_tokens: result.usage.input_tokens + result.usage.output_tokens,
    ...(result.usage.cached_input_tokens
      ? { prompt_tokens_details: { cached_tokens: result.usage.cached_input_tokens } }
      : {}),
    ...(result.usage.reasoning_tokens
      ? { completion_tokens_details: { reasoning_tokens: result.usage.reasoning_tokens } }
      : {}),
  };
}

function runFailure(result: RunResult): { status: number; message: string } {
  const what = result.failure
    ? `${result.failure.summary}; next: ${result.failure.next}`
    : (result.error ?? result.reason ?? result.status);
  const message = `the run ${result.status}: ${what}`;
  if (result.reason === 'provider_error') return { status: 502, message };
  if (
    result.reason === 'model_unavailable' ||
    result.status === 'interrupted' ||
    result.status === 'cancelled'
  ) {
    return { status: 503, message };
  }
  return { status: 500, message };
}

function cancelRun(app: App, runId: string): void {
  try {
    const run = app.runs.get(runId);
    if (run && (run.status === 'queued' || run.status === 'running')) {
      app.agent.cancelRun(runId, 'the chat-completions client disconnected');
    }
  } catch (error) {
    app.log.warn('compat cancel failed', { run_id: runId, error: toSvcError(error).message });
  }
}

function cleanup(prepared: Prepared): void {
  prepared.unsubscribe();
  prepared.release();
}

function finish(
  app: App,
  prepared: Prepared,
  outcome: {
    status: 'completed' | 'failed' | 'cancelled' | 'disconnected';
    finish_reason: string | null;
    http_status: number | null;
    error: string | null;
    usage?: RunResult['usage'];
  },
): void {
  if (!prepared.recorded) return;
  try {
    finishRequest(app, prepared.requestId, {
      status: outcome.status,
      finish_reason: outcome.finish_reason,
      http_status: outcome.http_status,
      error: outcome.error,
      prompt_tokens: outcome.usage?.input_tokens ?? 0,
      completion_tokens: outcome.usage?.output_tokens ?? 0,
    });
    if (app.runs.get(prepared.runId)) {
      app.runs.append(prepared.runId, 'openai_compat.response', {
        request_id: prepared.requestId,
        status: outcome.status,
        finish_reason: outcome.finish_reason,
        http_status: outcome.http_status,
        stream: prepared.request.stream,
        ...(outcome.error ? { error: outcome.error } : {}),
      });
    }
  } catch (error) {
    app.log.warn('compat ledger write failed', { request_id: prepared.requestId, error });
  }
}

export { CONTINUE_PROMPT };
