/**
 * What an MCP connection's failures mean to the operator and to the caller: the state and message
 * a failed start leaves, and the SvcError a failed tool call becomes. Pure functions over the
 * error; the connection applies the result. A server's own text in an error (an HTTP error body,
 * its error message) is made safe and cut (`peerError`): it is shown on terminals and to the model.
 * @module
 */
import type { McpServerConfig } from '../config/schema';
import { SvcError, toSvcError } from '../errors';
import { MESSAGE_TOO_LARGE } from './capped-fetch';
import { oauthFailureText } from './oauth-fetch';
import { peerError } from './peer-text';
import { NeedsAuth } from './transport';

export interface FailureContext {
  id: string;
  config: McpServerConfig;
  /** The time limit of the start-up, in ms. */
  startTimeoutMs: number;
  /** Whether the server wrote anything to stderr (the message then points at stderr_tail). */
  hasStderr: boolean;
  /** Why the transport closed the connection, when known (`transportFault`). */
  fault?: string;
}

/**
 * Why the transport closed the connection, from an error it reported, when svc can name it (what
 * the server did, e.g. `sent a message over the 10 MiB limit of one stdio MCP message`): the SDK
 * closes the connection then, and the pending request only learns that it closed.
 */
export function transportFault(error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : String(error);
  const match = /ReadBuffer exceeded maximum size of (\d+) bytes/.exec(message);
  if (!match) return undefined;
  const bytes = Number(match[1]);
  const limit = bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
  return `sent a message over the ${limit} limit of one stdio MCP message`;
}

export function isUnauthorized(error: unknown): boolean {
  return (
    error instanceof NeedsAuth ||
    (error as Error)?.name === 'UnauthorizedError' ||
    (error as { code?: unknown })?.code === 401
  );
}

/** The state and message a failed connection attempt leaves. */
export function startFailure(
  error: unknown,
  context: FailureContext,
): { state: 'needs_auth' | 'failed'; error: string } {
  const { id, config } = context;
  const unauthorized = isUnauthorized(error);
  if (error instanceof NeedsAuth) return { state: 'needs_auth', error: error.message };
  if (unauthorized && config.auth === 'oauth') {
    return {
      state: 'needs_auth',
      error: `the stored token was refused and could not be refreshed: run svc mcp auth ${id}`,
    };
  }
  if (unauthorized) {
    return {
      state: 'failed',
      error: `the server answered 401 Unauthorized; set headers (e.g. Authorization) or auth = "oauth" in [mcp.${id}]`,
    };
  }
  return { state: 'failed', error: peerError(describeStartError(error, context)) };
}

function describeStartError(error: unknown, context: FailureContext): string {
  const { id, config } = context;
  if (SvcError.is(error)) return error.message;
  const oauth = config.auth === 'oauth' ? oauthFailureText(error) : undefined;
  if (oauth) return `OAuth failed: ${oauth}`;
  const code = (error as { code?: unknown })?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === -32001) {
    return `no answer within ${context.startTimeoutMs / 1000}s while starting (mcp.${id}.timeout)`;
  }
  if (code === -32000 || /connection closed/i.test(message)) {
    if (context.fault) return `the server ${context.fault} while starting, so svc closed the connection`;
    return `the server exited or closed the connection while starting${context.hasStderr ? ' (see stderr_tail)' : ''}`;
  }
  if (code === 'ENOENT') return `mcp.${id}.command: command not found: ${config.command}`;
  if (code === 'ECONNREFUSED' || /fetch failed|ECONNREFUSED/.test(message)) {
    return `cannot reach ${config.url}: ${message}`;
  }
  return message;
}

/**
 * The SvcError a failed call of tool `name` becomes (the registry name, for the message);
 * `refused` when the server refused the credentials, which changes the connection's state.
 */
export function callFailure(
  name: string,
  error: unknown,
  signal: AbortSignal,
  context: CallContext,
): { error: SvcError; refused: boolean } {
  const failure = callError(name, error, signal, context);
  return { error: failure, refused: failure.code === 'unauthorized' && !SvcError.is(error) };
}

export interface CallContext {
  id: string;
  timeoutMs: number;
  /** Why the transport closed the connection, when known (`transportFault`). */
  fault?: string;
}

function callError(name: string, error: unknown, signal: AbortSignal, context: CallContext): SvcError {
  const { id } = context;
  if (signal.aborted) return new SvcError('cancelled', `${name}: cancelled`, { cause: error });
  const code = (error as { code?: unknown })?.code;
  const message = peerError(error instanceof Error ? error.message : String(error));
  if (code === -32001) {
    return new SvcError(
      'timeout',
      `${name}: MCP server ${id} did not answer within ${context.timeoutMs / 1000}s (mcp.${id}.timeout)`,
      { cause: error },
    );
  }
  if (code === MESSAGE_TOO_LARGE) {
    return new SvcError(
      'unavailable',
      `${name}: MCP server ${id}: ${message.replace(/^MCP error -?\d+: /, '')}`,
      { cause: error, retryable: false },
    );
  }
  if (code === -32000 || /connection closed/i.test(message)) {
    const why = context.fault
      ? `${context.fault} during the call, so svc closed the connection`
      : 'closed the connection during the call';
    return new SvcError('unavailable', `${name}: MCP server ${id} ${why}`, { cause: error });
  }
  if (code === -32602 || code === -32601) {
    return new SvcError('invalid_input', `${name}: ${message.replace(/^MCP error -?\d+: /, '')}`, {
      cause: error,
    });
  }
  if (isUnauthorized(error)) {
    return new SvcError('unauthorized', `${name}: MCP server ${id} refused the credentials`, {
      cause: error,
    });
  }
  const e = toSvcError(error);
  return SvcError.is(error)
    ? e
    : new SvcError('unavailable', `${name}: MCP server ${id}: ${message}`, { cause: error });
}

/** `promise`, or a `cancelled` SvcError as soon as the signal aborts. */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new SvcError('cancelled', 'cancelled'));
  return new Promise<T>((resolvePromise, reject) => {
    const onAbort = () => reject(new SvcError('cancelled', 'cancelled', { cause: signal.reason }));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolvePromise(value);
      },
      (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
