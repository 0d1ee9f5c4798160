/**
 * The loopback redirect target of `svc mcp auth <id>`: a one-shot HTTP listener on 127.0.0.1
 * that takes the authorization code and tells the browser it can close.
 *
 * The flow's `state` is made before the listener starts, and every callback, an error callback
 * included, must carry it: any page in the operator's browser can send a request to the loopback
 * port, so a callback without it (one arriving early, while the client registers, too) is refused
 * and never reaches the token endpoint or cancels the flow.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SvcError } from '../errors';
import { CALLBACK_PATH } from './oauth-provider';

export interface OAuthCallback {
  /** The redirect URI to register and send (`http://127.0.0.1:<port>/mcp/oauth/callback`). */
  url: string;
  port: number;
  /** The `state` of this flow, to send with the authorization request. */
  state: string;
  /** The code of the first callback carrying `state`; rejects on such an error callback. */
  waitForCode(signal: AbortSignal): Promise<string>;
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
  const state = randomBytes(16).toString('hex');

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
    if (arrival.state !== state || (!arrival.error && !arrival.code)) {
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
    state,
    waitForCode(signal) {
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
