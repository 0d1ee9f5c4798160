/**
 * The start of a chat-completions request: parse the body, bind or create the session (importing
 * the request's history), start the run (answering pending tool calls first), and record the
 * request in the compat ledger. What comes back (`Prepared`) is what the JSON and SSE answers need.
 * @module
 */
import type { Context } from 'hono';
import { titleFromPrompt } from '../../../agent/run-loop';
import type { SendInput } from '../../../agent/types';
import type { App } from '../../../app';
import { SvcError } from '../../../errors';
import type { SessionEvent } from '../../../events/bus';
import type { Session } from '../../../sessions/session-store';
import type { RidingInsert } from '../../../store/preceding-write';
import type { Tx } from '../../../store/transactions';
import { type Conversation, planConversation } from './conversation';
import {
  type CompatRequestRow,
  ledgerEnabled,
  recordRequest,
  recordRequestWithEvent,
  requestInClaim,
} from './ledger';
import { type CompatModel, resolveCompatModel } from './model';
import { runPendingCalls } from './pending-calls';
import { abandonStart, finishInRunFinish, type Prepared } from './prepared';
import { type ChatRequest, DEFAULT_MAX_MESSAGES, parseChatRequest } from './request';
import { compatRuntime, toolPolicyOf } from './runtime';

export const SESSION_HEADER = 'x-svc-session-id';
export const COMPAT_ORIGIN = 'openai_compat';

export async function prepare(c: Context, app: App): Promise<Prepared> {
  const request = parseChatRequest(
    await c.req.text(),
    app.config.options.openai_compat?.max_messages ?? DEFAULT_MAX_MESSAGES,
  );
  const signal = c.req.raw.signal;
  const boundId = c.req.header(SESSION_HEADER)?.trim();
  const bound = boundId ? await app.sessions.get(boundId) : undefined;
  if (boundId && !bound) {
    throw new SvcError(
      'not_found',
      `${SESSION_HEADER}: no session "${boundId}"; omit the header for a new session`,
    );
  }
  const model = await resolveCompatModel(app, request.model, { sessionModel: bound?.model, signal });
  const conversation = planConversation(request.messages);
  const requestId = app.ids.next('chatcmpl').replace('_', '-');
  const runtime = compatRuntime(app);
  const ledger = ledgerEnabled(app);
  const created = Math.floor(app.clock.now() / 1000);
  const early: SessionEvent[] = [];
  let listener: ((event: SessionEvent) => void) | undefined;
  let sessionId: string | undefined;
  let release = () => {};
  let unsubscribe = () => {};
  let runId: string | undefined;
  const pending = bound ? [] : conversation.pending;
  const startOf = (id: string, session: string) => ({
    request,
    requestId,
    runId: id,
    sessionId: session,
    bound: Boolean(bound),
    model,
    conversation,
  });
  const record = async (id: string, tx?: Tx) =>
    ledger.enabled && sessionId ? await recordStart(app, startOf(id, sessionId), tx) : undefined;
  // The row and its event in the run's claim where the store can (PostgreSQL: one statement of
  // the start fewer); `recorded` once the claim (or a pending-calls start's `record`) wrote them,
  // else `record` after the send.
  let recorded = false;
  // Made only when the claim wrote them: the start's COMMIT waits for the run's prompt message.
  let prompted: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  const written = () => {
    recorded = true;
    prompted = new Promise<void>((resolve) => {
      wake = resolve;
    });
  };
  const opened = () => wake?.();
  // Made before the run can start: its finish may come before this function returns (p-pgsingle).
  const { prepared, finishWith } = answerState(
    app,
    { request, requestId, model, created, early },
    ledger.enabled,
    (next) => {
      listener = next;
      for (const event of early.splice(0)) next(event);
    },
  );
  const inClaim = (id: string) => {
    runId = id; // PostgreSQL: a lone start commits by itself; cancelled when the send then fails
    finishWith(id);
    if (!ledger.enabled || !sessionId) return undefined;
    try {
      const { row, payload } = compatStart(app, startOf(id, sessionId));
      return requestInClaim(app, row, payload, written, opened);
    } catch {
      // Not in the claim: `record` after the send builds them again, its failure a warning.
      return undefined;
    }
  };
  // spec: messages are routed into the session. A bound session keeps its own history: only the
  // trailing user messages (and system messages) of the request are used. A new session, its
  // imported history, the run's start and the request's ledger row are one transaction (one
  // commit); with pending tool calls (which run first, awaited) the session is one and the rest
  // another.
  let sessionInsert: RidingInsert | undefined;
  const begin = async (withRun = false) => {
    // A new session is made with the title its run would give it (no update of the row at the run's start).
    const input = {
      title: titleFromPrompt(conversation.prompt),
      metadata: { openai_compat: { request_id: requestId } },
    };
    // Without history to import and with its run in this transaction, its INSERT waits to go with
    // the run's (PostgreSQL: one statement fewer).
    const held =
      !bound && withRun && conversation.history.length === 0 ? app.sessions.createHeld?.(input) : undefined;
    sessionInsert = held?.insert;
    const session = bound ?? held?.session ?? (await app.agent.createSession(input));
    if (!bound) await importHistory(app, session.id, conversation);
    sessionId = session.id;
    release = runtime.enter(session.id, conversation.system);
    const off = app.bus.subscribe(session.id, (event) => {
      if (listener) listener(event);
      else early.push(event);
    });
    unsubscribe = bound ? off : releasing(app, session.id, off);
    return session;
  };
  try {
    if (pending.length) {
      // The pending tool calls run first, in the run's name, then the run starts.
      const id = (await app.store.transactions.run(() => begin())).id;
      runId = (await app.agent.enqueue(sendInput(id, conversation, model, undefined, undefined))).run_id;
      await runPendingCalls(app, id, runId, conversation, signal);
      // The row and its end's registration before the run can start: a run that finishes in
      // `drain` carries the row's end in its finish, not a statement of its own after (p-pgcost).
      await record(runId);
      recorded = ledger.enabled;
      finishWith(runId);
      await app.agent.drain(id);
    } else {
      // SQLite: no async scope; the send, its run's step batch and the row join by `tx` (p-txtoken).
      runId = await app.store.transactions.runWith(async (tx) => {
        const session = await begin(true);
        // The send's failure fails this transaction: no savepoint of its own (PostgreSQL).
        const sent = await app.agent.send(
          sendInput(session.id, conversation, model, bound ? undefined : { session, insert: sessionInsert }, {
            transaction: tx ?? undefined,
            claimAlongside: inClaim,
          }),
        );
        const started = sent.run_id;
        finishWith(started);
        // Written in the claim: the run's prompt message is still on its way in this transaction;
        // the COMMIT waits for it so that its events are held with the start's (one append after
        // the COMMIT). Before, the row's own statement gave it that time.
        if (prompted) await prompted;
        else if (!recorded) await record(started, tx);
        return started;
      });
    }
  } catch (error) {
    prepared.finishing?.();
    if (runId) await abandonStart(app, { runId, requestId, recorded }, error);
    unsubscribe();
    release();
    throw error;
  }

  prepared.sessionId = sessionId as string;
  prepared.release = release;
  prepared.unsubscribe = unsubscribe;
  return prepared;
}

/**
 * The answer's state (`Prepared`), made before the run starts, its run id, session id, release and
 * unsubscribe filled in as they are known, and `finishWith`, which registers the row's end in the
 * run's finish (`finishInRunFinish`) with the run's id as soon as it is known. The run's finish may
 * come before `prepare` returns (PostgreSQL: a lone start commits by itself, then the model request
 * goes out; a provider that answers fast, a late turn under load): registered only when the answer
 * began, that finish ended the run alone and the row's end was a statement of its own after it
 * (p-pgsingle, STORE-PG-650's third event INSERT under load).
 */
function answerState(
  app: App,
  known: Pick<Prepared, 'request' | 'requestId' | 'model' | 'created' | 'early'>,
  recorded: boolean,
  onEvent: Prepared['onEvent'],
): { prepared: Prepared; finishWith: (runId: string) => void } {
  const prepared: Prepared = {
    request: known.request,
    requestId: known.requestId,
    sessionId: '',
    runId: '',
    model: known.model,
    recorded,
    created: known.created,
    release: () => {},
    early: known.early,
    unsubscribe: () => {},
    onEvent,
    ended: false,
    ending: false,
    finishing: undefined,
  };
  const finishWith = (runId: string) => {
    if (prepared.runId === runId) return;
    prepared.finishing?.();
    prepared.runId = runId;
    prepared.finishing = undefined;
    prepared.finishing = finishInRunFinish(app, prepared);
  };
  return { prepared, finishWith };
}

/**
 * A session this request made: nobody else listened to it, so its ring leaves memory with the
 * request (issue 17 item 4, p-pin); a bound one's stays for its next request.
 */
function releasing(app: App, sessionId: string, off: () => void): () => void {
  return () => {
    off();
    app.bus.release?.(sessionId);
  };
}

async function importHistory(app: App, sessionId: string, conversation: Conversation): Promise<void> {
  for (const entry of conversation.history) {
    await app.sessions.appendMessage({
      session_id: sessionId,
      role: entry.role,
      parts: entry.parts,
      finished: true,
    });
  }
}

/**
 * The request row and its run ledger event (`openai_compat.request`) in the start's transaction: a
 * failure is a warning, the start goes on. PostgreSQL: one statement, no savepoint (a request id
 * already there is skipped, not an error; any other failure aborts the transaction, whose COMMIT
 * then fails the start). SQLite: a savepoint of the transaction.
 */
async function recordStart(app: App, start: CompatStart, tx?: Tx): Promise<void> {
  const { requestId, runId } = start;
  try {
    const { row, payload } = compatStart(app, start);
    // PostgreSQL: the row and the event in one statement, without a savepoint (ledger.ts).
    if (await recordRequestWithEvent(app, row, payload)) return;
    await app.store.transactions.run(async () => {
      await recordRequest(app, row);
      await app.runs.append(runId, 'openai_compat.request', payload);
    }, tx);
  } catch (error) {
    app.log.warn('compat ledger write failed', { request_id: requestId, error });
  }
}

interface CompatStart {
  request: ChatRequest;
  requestId: string;
  runId: string;
  sessionId: string;
  bound: boolean;
  model: CompatModel;
  conversation: Conversation;
}

/** The request's ledger row and its `openai_compat.request` payload. */
function compatStart(
  app: App,
  start: CompatStart,
): { row: Omit<CompatRequestRow, 'finished_at'>; payload: Record<string, unknown> } {
  const { request, requestId, runId, model, conversation, bound } = start;
  const row: Omit<CompatRequestRow, 'finished_at'> = {
    request_id: requestId,
    run_id: runId,
    session_id: start.sessionId,
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
  };
  const payload = {
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
  };
  return { row, payload };
}

/**
 * A compat request's send input as one literal, every key there (undefined when not given; the
 * send reads them as properties), not `{ ...send(id), joinTransaction, ...(tx ? { transaction } :
 * {}), claimAlongside }`: on Node 20 a literal that starts with a spread and adds keys gives each
 * answer a new V8 map (p-sqlprofile, p-gcrate; COMPAT-PERF-301). `created`: a new session's row,
 * sent with it (the send does not read it again; a bound one is read by the send). `joined`: the
 * send joins the caller's transaction with its claim hook; without it, an enqueue that does not
 * start the run (pending tool calls run first).
 */
function sendInput(
  sessionId: string,
  conversation: Conversation,
  model: CompatModel,
  created: { session: Session; insert: RidingInsert | undefined } | undefined,
  joined: { transaction: Tx | undefined; claimAlongside: SendInput['claimAlongside'] } | undefined,
) {
  return {
    sessionId,
    session: created?.session,
    sessionInsert: created?.insert,
    prompt: conversation.prompt,
    model: model.resolved.selector,
    // Resolved once: the run binds it to its own metering (ModelResolver.bind).
    resolved: model.resolved,
    origin: COMPAT_ORIGIN,
    ifBusy: 'queue' as const,
    start: joined ? undefined : false,
    joinTransaction: joined ? true : undefined,
    transaction: joined?.transaction,
    claimAlongside: joined?.claimAlongside,
  };
}
