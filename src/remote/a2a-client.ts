/**
 * A2A client calls: fetch and validate an agent card, and JSON-RPC requests to the agent.
 * Conservative by design: http(s) only, no credentials in URLs, a size cap on answers, a timeout
 * on every call, the bearer token only ever sent to the origin it belongs to, and no request to a
 * link-local or cloud metadata address (a card names the JSON-RPC url, so a hostile card could
 * point it there): checked before the request and again at connect (DNS rebinding).
 * @module
 */
import { randomUUID } from 'node:crypto';
import { SvcError } from '../errors';
import { readBodyCapped } from '../util/read-body';
import { safeTerminalText } from '../util/terminal-text';
import { blockedAddressError, guardedFetch, type Lookup } from '../workspace/web-target';
import {
  type AgentCardWire,
  agentCardSchema,
  CARD_PATH,
  LEGACY_CARD_PATH,
  type MessageWire,
  messageSchema,
  RPC_ERRORS,
  rpcResponseSchema,
  rpcUrlOf,
  type TaskWire,
  taskSchema,
} from './a2a-wire';

const MAX_BYTES = 4 * 1024 * 1024;
const CALL_TIMEOUT_MS = 30_000;

/** A bearer token and the one origin it belongs to (the configured endpoint's, never a card's). */
export interface TokenScope {
  token?: string;
  origin?: string;
}

export interface A2aHttp extends TokenScope {
  fetch: typeof fetch;
  signal?: AbortSignal;
  /** The answer size cap in bytes (default 4 MiB). */
  maxBytes?: number;
  /** How a host name is resolved for the blocked-address check (the system's; tests give one). */
  lookup?: Lookup;
}

export interface FetchedCard {
  card_url: string;
  card: AgentCardWire;
  rpc_url: string;
}

/** Fetch a card from a card URL, or from a base URL (the well-known paths, new then old). */
export async function fetchAgentCard(url: string, http: A2aHttp): Promise<FetchedCard> {
  const parsed = checkUrl(url, 'card_url');
  const candidates = /\.json$/i.test(parsed.pathname)
    ? [parsed.toString()]
    : [new URL(CARD_PATH, parsed).toString(), new URL(LEGACY_CARD_PATH, parsed).toString()];
  let lastError: SvcError | undefined;
  for (const candidate of candidates) {
    const response = await request(candidate, { method: 'GET' }, http);
    if (response.status === 404 && candidate !== candidates.at(-1)) {
      lastError = new SvcError('not_found', `no agent card at ${candidate}`);
      continue;
    }
    if (!response.ok)
      throw httpFailure(candidate, response.status, await readCapped(response, candidate, http), http);
    const text = await readCapped(response, candidate, http);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new SvcError('unavailable', `agent card at ${candidate} is not JSON`);
    }
    const card = agentCardSchema().safeParse(json);
    if (!card.success) {
      const issue = card.error.issues[0];
      throw new SvcError(
        'unavailable',
        `agent card at ${candidate} is not a valid A2A card: ${issue?.path.join('.') || 'card'}: ${issue?.message}`,
      );
    }
    const rpcUrl = rpcUrlOf(card.data, candidate);
    if (!rpcUrl) throw new SvcError('unavailable', `agent card at ${candidate} offers no JSON-RPC interface`);
    checkUrl(rpcUrl, 'the card url');
    return { card_url: candidate, card: card.data, rpc_url: rpcUrl };
  }
  throw lastError ?? new SvcError('not_found', `no agent card at ${url}`);
}

/** One JSON-RPC call; a JSON-RPC error becomes an SvcError carrying its code in details. */
export async function rpcCall(
  rpcUrl: string,
  method: string,
  params: unknown,
  http: A2aHttp,
): Promise<unknown> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method, params });
  const response = await request(
    rpcUrl,
    { method: 'POST', body, headers: { 'content-type': 'application/json' } },
    http,
  );
  const text = await readCapped(response, rpcUrl, http);
  if (!response.ok) throw httpFailure(rpcUrl, response.status, text, http);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new SvcError('unavailable', `${method}: the agent answered with something that is not JSON`);
  }
  const parsed = rpcResponseSchema().safeParse(json);
  if (!parsed.success) throw new SvcError('unavailable', `${method}: not a JSON-RPC response`);
  if (parsed.data.error) {
    const { code, message } = parsed.data.error;
    const notFound = code === RPC_ERRORS.taskNotFound;
    throw new SvcError(
      notFound ? 'not_found' : code === RPC_ERRORS.taskNotCancelable ? 'conflict' : 'unavailable',
      `${method}: remote agent error ${code}: ${safeTerminalText(message)}`,
      {
        details: { rpc_code: code },
      },
    );
  }
  return parsed.data.result;
}

export type SendResult = { kind: 'task'; task: TaskWire } | { kind: 'message'; message: MessageWire };

export async function sendMessage(
  rpcUrl: string,
  input: { text: string; contextId?: string; blocking: boolean },
  http: A2aHttp,
): Promise<SendResult> {
  const result = await rpcCall(
    rpcUrl,
    'message/send',
    {
      message: {
        kind: 'message',
        role: 'user',
        messageId: randomUUID(),
        parts: [{ kind: 'text', text: input.text }],
        ...(input.contextId ? { contextId: input.contextId } : {}),
      },
      configuration: { blocking: input.blocking, acceptedOutputModes: ['text/plain'] },
    },
    http,
  );
  const task = taskSchema().safeParse(result);
  if (task.success) return { kind: 'task', task: task.data };
  const message = messageSchema().safeParse(result);
  if (message.success && message.data.parts) return { kind: 'message', message: message.data };
  throw new SvcError('unavailable', 'message/send: the agent answered with neither a task nor a message');
}

export async function getTask(rpcUrl: string, taskId: string, http: A2aHttp): Promise<TaskWire> {
  const result = await rpcCall(rpcUrl, 'tasks/get', { id: taskId }, http);
  const task = taskSchema().safeParse(result);
  if (!task.success)
    throw new SvcError('unavailable', 'tasks/get: the agent answered with something that is not a task');
  return task.data;
}

export async function cancelTask(
  rpcUrl: string,
  taskId: string,
  http: A2aHttp,
): Promise<TaskWire | undefined> {
  const result = await rpcCall(rpcUrl, 'tasks/cancel', { id: taskId }, http);
  const task = taskSchema().safeParse(result);
  return task.success ? task.data : undefined;
}

function checkUrl(url: string, field: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SvcError('invalid_input', `${field}: "${url}" is not a URL; give http(s)://host[:port][/path]`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new SvcError(
      'invalid_input',
      `${field}: only http and https agent URLs are supported, got ${parsed.protocol}`,
    );
  }
  if (parsed.username || parsed.password) {
    throw new SvcError(
      'invalid_input',
      `${field}: credentials in the URL are not allowed; configure a token instead`,
    );
  }
  return parsed;
}

async function request(url: string, init: RequestInit, http: A2aHttp): Promise<Response> {
  const target = new URL(url);
  const headers = new Headers(init.headers);
  headers.set('accept', 'application/json');
  if (sendsToken(http, target)) headers.set('authorization', `Bearer ${http.token}`);
  const timeout = AbortSignal.timeout(CALL_TIMEOUT_MS);
  const signal = http.signal ? AbortSignal.any([http.signal, timeout]) : timeout;
  const refuse = (blocked: string) =>
    blockedAddressError(
      `A2A: ${target.origin}`,
      target,
      blocked,
      'svc sends no A2A request there (an agent card naming it for its JSON-RPC url is refused)',
    );
  try {
    const requestInit = { ...init, headers, signal, redirect: 'manual' } as RequestInit;
    return await guardedFetch(http.fetch, url, requestInit, refuse, http.lookup, target);
  } catch (error) {
    if (SvcError.is(error)) throw error;
    if (http.signal?.aborted) throw new SvcError('cancelled', 'the delegation was cancelled');
    if (timeout.aborted)
      throw new SvcError('timeout', `no answer from ${target.origin} within ${CALL_TIMEOUT_MS / 1000}s`);
    throw new SvcError('unavailable', `cannot reach ${target.origin}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/**
 * The token belongs to the origin of the endpoint it is configured for: a request to any other
 * origin (a card may name one for its JSON-RPC url) goes without it.
 */
function sendsToken(http: TokenScope, target: URL): boolean {
  return Boolean(http.token && http.origin && http.origin === target.origin);
}

/** The body as text, read chunk by chunk and given up (the request cancelled) past the cap. */
async function readCapped(response: Response, url: string, http: A2aHttp): Promise<string> {
  const max = http.maxBytes ?? MAX_BYTES;
  const tooLarge = () =>
    new SvcError(
      'unavailable',
      `the answer of ${new URL(url).origin} is over the ${max}-byte cap for A2A answers; it was not read`,
    );
  const length = Number(response.headers.get('content-length') ?? 0);
  if (length > max) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  try {
    const { body, truncated } = await readBodyCapped(response, max);
    if (truncated) throw tooLarge();
    return body.toString('utf8');
  } catch (error) {
    if (SvcError.is(error)) throw error;
    if (http.signal?.aborted) throw new SvcError('cancelled', 'the delegation was cancelled');
    if ((error as Error).name === 'TimeoutError')
      throw new SvcError(
        'timeout',
        `no complete answer from ${new URL(url).origin} within ${CALL_TIMEOUT_MS / 1000}s`,
      );
    throw new SvcError(
      'unavailable',
      `reading the answer of ${new URL(url).origin} failed: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

function httpFailure(url: string, status: number, body: string, http: TokenScope): SvcError {
  const origin = new URL(url).origin;
  if ((status === 401 || status === 403) && http.token && http.origin && !sendsToken(http, new URL(url))) {
    return new SvcError(
      'unauthorized',
      `${origin} refused the request (${status}): the agent card points there, but the token is only sent to ${http.origin}, the origin it is configured for; point [a2a.remotes.<name>].url at ${origin} if it is the same agent`,
    );
  }
  if (status === 401 || status === 403) {
    return new SvcError(
      'unauthorized',
      `${origin} refused the request (${status}): configure its token ([a2a.remotes.<name>].token) or deploy it with deploy_agent`,
    );
  }
  if (status === 404)
    return new SvcError('not_found', `${url} answered 404 (is [a2a] enabled on that agent?)`);
  return new SvcError('unavailable', `${url} answered ${status}: ${safeTerminalText(body.slice(0, 200))}`);
}
