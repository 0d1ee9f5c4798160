/**
 * The loopback redirect target of `svc mcp auth <id>`: a one-shot HTTP listener on 127.0.0.1
 * that takes the authorization code (checking `state`) and tells the browser it can close.
 * @module
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SvcError } from '../errors';
import { CALLBACK_PATH } from './oauth-provider';

export interface OAuthCallback {
  /** The redirect URI to register and send (`http://127.0.0.1:<port>/mcp/oauth/callback`). */
  url: string;
  port: number;
  /** The code of the first callback whose `state` matches; rejects on an error callback. */
  waitForCode(expectedState: () => string | undefined, signal: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

interface Arrival {
  code?: string;
  state?: string;
  error?: string;
}

export async function startOAuthCallback(port: number): Promise<OAuthCallback> {
  const arrivals: Arrival[] = [];
  let notify: (() => void) | undefined;
  let expected: () => string | undefined = () => undefined;

  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== CALLBACK_PATH) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('404 Not Found');
      return;
    }
    const arrival: Arrival = {
      code: url.searchParams.get('code') ?? undefined,
      state: url.searchParams.get('state') ?? undefined,
      error: url.searchParams.get('error')
        ? [url.searchParams.get('error'), url.searchParams.get('error_description')]
            .filter(Boolean)
            .join(': ')
        : undefined,
    };
    const want = expected();
    if (!arrival.error && (!arrival.code || (want !== undefined && arrival.state !== want))) {
      response.writeHead(400, { 'content-type': 'text/html; charset=utf-8' });
      response.end(page('svc: this callback does not match the authorization in progress.'));
      return;
    }
    response.writeHead(arrival.error ? 400 : 200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(
      page(
        arrival.error
          ? `svc: authorization failed (${escapeHtml(arrival.error)}).`
          : 'svc: authorization complete. You can close this tab.',
      ),
    );
    arrivals.push(arrival);
    notify?.();
  });

  await new Promise<void>((resolvePromise, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new SvcError(
          'unavailable',
          error.code === 'EADDRINUSE'
            ? `OAuth callback port ${port} on 127.0.0.1 is in use; set [mcp.<id>.oauth] redirect_port to a free port`
            : `cannot listen for the OAuth callback: ${error.message}`,
          { cause: error },
        ),
      ),
    );
    server.listen(port, '127.0.0.1', () => resolvePromise());
  });
  const actualPort = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${actualPort}${CALLBACK_PATH}`,
    port: actualPort,
    waitForCode(expectedState, signal) {
      expected = expectedState;
      return new Promise<string>((resolvePromise, reject) => {
        const check = () => {
          const arrival = arrivals.shift();
          if (!arrival) return;
          cleanup();
          if (arrival.error) reject(new SvcError('forbidden', `authorization failed: ${arrival.error}`));
          else resolvePromise(arrival.code!);
        };
        const onAbort = () => {
          cleanup();
          reject(
            new SvcError('cancelled', 'authorization was not completed: no browser callback arrived', {
              cause: signal.reason,
            }),
          );
        };
        const cleanup = () => {
          notify = undefined;
          signal.removeEventListener('abort', onAbort);
        };
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        notify = check;
        check();
      });
    },
    close: () =>
      new Promise<void>((resolvePromise) => {
        server.close(() => resolvePromise());
        server.closeAllConnections();
      }),
  };
}

function page(text: string): string {
  return `<!doctype html><meta charset="utf-8"><title>svc</title><p>${text}</p>\n`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
