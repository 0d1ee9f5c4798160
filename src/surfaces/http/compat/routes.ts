/**
 * The compat surface's routes (spec, Endpoints and Errors → Compat surface): chat completions, the
 * compat run ledger, the posture, and the optional `/v1/completions`. Every error on these routes
 * is the flat body `{"error": "<message>", "code": <status>}` (COMPAT-28/29), with
 * `x-should-retry: false` so official clients do not replay a whole agent run on their own.
 * Sibling APIs (assistants, files, …) are simply not mounted: 404.
 * @module
 */
import type { ServerResponse } from 'node:http';
import type { Context, Hono } from 'hono';
import type { App } from '../../../app';
import { SvcError } from '../../../errors';
import { errorResponse } from '../errors';
import type { FrontKit, HttpExtension, HttpKit } from '../http-kit';
import type { AppRef } from '../mount-tools';
import { NodeContext, type NodeRoute, writeNodeAnswer } from '../node-front';
import { answerInSlot, type ChatCompletionsOptions, chatCompletions, queueLeave } from './chat-completions';
import { COMPLETIONS_PATH, completions, editPredictionsEnabled } from './completions';
import { getRequest, ledgerEnabled, listRequests, requestEvents } from './ledger';
import { describeCompatRoutes } from './openapi';
import { compatPosture } from './posture';
import { compatRunQueue, type QueueTurn } from './run-queue';

export const CHAT_COMPLETIONS_PATH = '/v1/chat/completions';
export const RUNS_PATH = '/v1/openai-compat/runs';
export const RUN_EVENTS_PATH = '/v1/openai-compat/runs/:request_id/events';
export const POSTURE_PATH = '/v1/openai-compat/posture';

export const compatSurface: HttpExtension = (hono: Hono, appRef: AppRef, kit: HttpKit) => {
  hono.post(CHAT_COMPLETIONS_PATH, (c) =>
    handle(c, appRef, (app) => chatCompletions(c, app, { streams: kit.streams })),
  );
  hono.get(RUNS_PATH, (c) => handle(c, appRef, (app) => listRuns(c, app)));
  hono.get(RUN_EVENTS_PATH, (c) => handle(c, appRef, (app) => runEvents(c, app)));
  hono.get(POSTURE_PATH, (c) => handle(c, appRef, (app) => c.json(app.redactor.value(compatPosture(app)))));
  // Registered for every method so the route does not exist at all (404, not 405) while edit
  // predictions are off; checked per request so a config reload turns it on or off.
  hono.all(COMPLETIONS_PATH, (c) =>
    handle(c, appRef, (app) => {
      if (!editPredictionsEnabled(app))
        throw new SvcError('not_found', `no route ${c.req.method} ${c.req.path}`);
      if (c.req.method !== 'POST') {
        throw new SvcError('invalid_input', `method ${c.req.method} not allowed on ${c.req.path}`, {
          status: 405,
        });
      }
      return completions(c, app);
    }),
  );
  describeCompatRoutes(kit.openapi);
};

/**
 * `POST /v1/chat/completions` in front of the middleware (http-kit.ts `FrontKit`): the gate's
 * checks at once, then the same handler as the route above; a request the gate sends on
 * (`false`) takes the middleware chain and that route.
 */
compatSurface.front = (hono: Hono, appRef: AppRef, kit: FrontKit) => {
  hono.post(CHAT_COMPLETIONS_PATH, (c, next) => {
    const gated = kit.gate(c);
    if (gated === false) return next();
    if (gated !== true) return gated;
    return handle(c, appRef, (app) => chatCompletions(c, app, { streams: kit.streams }));
  });
};

/**
 * `POST /v1/chat/completions` straight from node:http (node-front.ts): when the front gate admits
 * or refuses the request on a Context stand-in, the same handler answers and the answer is written
 * to the Node response; what the gate sends on (no App yet, tracing on, a body of undeclared
 * length), another path or method goes to Hono. An error the handler did not answer is the flat
 * error body Hono's `onError` makes on this path. An admitted request enters the run queue as a
 * `NodeTurn` (what `handle` and `chatCompletions` do, without their promises while it waits).
 */
compatSurface.node = (appRef: AppRef, kit: FrontKit): NodeRoute => {
  const query = `${CHAT_COMPLETIONS_PATH}?`;
  const options = { streams: kit.streams };
  return (incoming, outgoing) => {
    const url = incoming.url ?? '';
    if (incoming.method !== 'POST' || (url !== CHAT_COMPLETIONS_PATH && !url.startsWith(query))) return false;
    const node = new NodeContext(incoming, outgoing, CHAT_COMPLETIONS_PATH);
    const c = node.context;
    let gated: Response | boolean;
    try {
      gated = kit.gate(c);
    } catch (error) {
      // Hono's `onError` answered a gate that threw: the same flat error here.
      gated = errorResponse(c, error, { style: 'flat', app: appRef() });
    }
    if (gated === false) return false;
    if (gated !== true) {
      writeAnswer(outgoing, gated);
      return true;
    }
    node.admit();
    const app = appRef();
    if (!app?.runtime.ready)
      writeAnswer(
        outgoing,
        errorResponse(c, new SvcError('unavailable', 'App not ready'), { style: 'flat' }),
      );
    else {
      const turn = new NodeTurn(c, app, options, outgoing);
      // The body first, as `chatCompletions` reads it: a slow upload holds no run slot.
      c.req.text().then(
        () => {
          try {
            compatRunQueue(app).enter(turn, queueLeave(c));
          } catch (error) {
            turn.refused(error);
          }
        },
        (error: unknown) => turn.refused(error),
      );
    }
    return true;
  };
};

/**
 * A compat request from node:http in the run queue (`RunQueue.enter`): while it waits it is this
 * one object and the queue's waiter, no promise chain, closure or async frame (issue 17 item 4,
 * p-inflight); `handle`'s answers: the handler's, else the flat error body with `x-should-retry`.
 */
class NodeTurn implements QueueTurn {
  constructor(
    private readonly c: Context,
    private readonly app: App,
    private readonly options: ChatCompletionsOptions,
    private readonly outgoing: ServerResponse,
  ) {}

  granted(free: () => void): void {
    answerInSlot(this.c, this.app, this.options, free).then(
      (response) => writeAnswer(this.outgoing, response),
      (error: unknown) => this.refused(error),
    );
  }

  refused(error: unknown): void {
    let response: Response;
    try {
      response = failed(this.c, this.app, error);
    } catch (thrown) {
      response = errorResponse(this.c, thrown, { style: 'flat', app: this.app });
    }
    writeAnswer(this.outgoing, response);
  }
}

/** A route's answer written to node:http (node-front.ts), the response destroyed if that fails. */
function writeAnswer(outgoing: ServerResponse, response: Response): void {
  try {
    writeNodeAnswer(outgoing, response)?.catch((error: unknown) => outgoing.destroy(error as Error));
  } catch (error) {
    outgoing.destroy(error as Error);
  }
}

/**
 * A route's handler with the flat error body for what it throws. Not an async function: a queued
 * compat request holds no suspended frame here while it waits (issue 17 item 4, p-inflight).
 */
function handle(
  c: Context,
  appRef: AppRef,
  handler: (app: App) => Response | Promise<Response>,
): Promise<Response> {
  const app = appRef();
  if (!app?.runtime.ready)
    return Promise.resolve(errorResponse(c, new SvcError('unavailable', 'App not ready'), { style: 'flat' }));
  let answer: Response | Promise<Response>;
  try {
    answer = handler(app);
  } catch (error) {
    return Promise.resolve(failed(c, app, error));
  }
  return Promise.resolve(answer).then(undefined, (error: unknown) => failed(c, app, error));
}

function failed(c: Context, app: App, error: unknown): Response {
  const response = errorResponse(c, error, { style: 'flat', app });
  // A 429 from the run queue started nothing: a retry after Retry-After is safe.
  response.headers.set('x-should-retry', response.status === 429 ? 'true' : 'false');
  return response;
}

async function listRuns(c: Context, app: App): Promise<Response> {
  const raw = c.req.query('limit');
  const limit = raw === undefined || raw === '' ? 50 : Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
    throw new SvcError('invalid_input', 'invalid limit (an integer from 1 to 500)');
  }
  const ledger = ledgerEnabled(app);
  const { rows, total } = await safeList(app, limit);
  const runs = await Promise.all(
    rows.map(async (row) => {
      const run = await app.runs.get(row.run_id);
      return {
        request_id: row.request_id,
        run_id: row.run_id,
        session_id: row.session_id,
        model: row.model,
        requested_model: row.requested_model,
        model_source: row.model_source,
        stream: row.stream,
        include_usage: row.include_usage,
        session_binding: row.session_binding,
        message_count: row.message_count,
        ignored_fields: row.ignored_fields,
        status: row.status,
        run_status: run?.status ?? null,
        finish_reason: row.finish_reason,
        http_status: row.http_status,
        error: row.error,
        usage: {
          prompt_tokens: row.prompt_tokens,
          completion_tokens: row.completion_tokens,
          total_tokens: row.prompt_tokens + row.completion_tokens,
        },
        created_at: row.created_at,
        finished_at: row.finished_at,
      };
    }),
  );
  // spec, Compat surface divergence 2: an empty list is JSON null, not [].
  return c.json(
    app.redactor.value({
      runs: runs.length ? runs : null,
      total,
      ledger: { enabled: ledger.enabled, reason: ledger.reason },
    }),
  );
}

async function safeList(app: App, limit: number) {
  try {
    return await listRequests(app, { limit });
  } catch (error) {
    throw new SvcError('unavailable', `the compat ledger cannot be read: ${(error as Error).message}`, {
      status: 503,
      cause: error,
    });
  }
}

async function runEvents(c: Context, app: App): Promise<Response> {
  // Already decoded (Hono's `param`); decoding again made `%25zz` a 500 ("URI malformed").
  const requestId = c.req.param('request_id') ?? '';
  const row = await getRequest(app, requestId);
  const events = row ? await requestEvents(app, row) : [];
  // spec, Compat surface divergence 3: an unknown request_id answers 200 with total 0, not 404;
  // divergence 2: no events is JSON null.
  return c.json(
    app.redactor.value({
      request_id: requestId,
      run_id: row?.run_id ?? null,
      total: events.length,
      events: events.length
        ? events.map((e) => ({ seq: e.seq, type: e.type, payload: e.payload, created_at: e.created_at }))
        : null,
    }),
  );
}
