/**
 * The fetch of svc's OAuth requests for an MCP server. Every URL the OAuth flow visits beyond the
 * configured server's origin comes from a server's answer (the protected-resource metadata, the
 * authorization server's metadata, a `WWW-Authenticate` header): the token, registration and
 * metadata endpoints get the authorization code, the PKCE verifier, refresh tokens and the client
 * secret. So such a URL must be `https:` (or `http:` on a loopback host) and may not be, or
 * resolve to, a link-local or cloud metadata address (workspace/web-target.ts); an OAuth answer is
 * read to at most 1 MiB. The configured origin is the operator's choice and is not checked.
 * @module
 */

import { SvcError } from '../errors';
import { isLoopbackHostname } from '../util/loopback';
import { blockedTargetAddress, guardedFetch, type Lookup } from '../workspace/web-target';
import { cappedFetch } from './capped-fetch';

/** The cap of one OAuth answer (metadata, registration, tokens). */
export const OAUTH_MAX_BYTES = 1024 * 1024;

export { isLoopbackHostname };

export interface OAuthFetchOptions {
  /** The server's id, for messages. */
  id: string;
  /** The configured server URL: its origin is not checked. */
  serverUrl: string;
  /** Cap every answer (the `svc mcp auth` flow); else only those of OAuth URLs (a connection's fetch, which also carries MCP). */
  capAll?: boolean;
  lookup?: Lookup;
}

export function oauthFetch(base: typeof fetch, options: OAuthFetchOptions): typeof fetch {
  const own = originOf(options.serverUrl);
  const capped = cappedFetch(base, OAUTH_MAX_BYTES, () => tooLarge(options.id));
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.origin === own) {
      const wellKnown = url.pathname.startsWith('/.well-known/');
      return options.capAll || wellKnown ? capped(input, init) : base(input, init);
    }
    checkSecureEndpoint(options.id, url);
    // Checked before the request and by the connection itself: a DNS answer changed since the
    // check cannot take the secrets to a metadata address (workspace/web-target.ts).
    const refuse = (blocked: string) => blockedEndpointError(options.id, url, blocked);
    return guardedFetch(capped, input, init, refuse, options.lookup, url);
  };
}

/** Refuses an OAuth endpoint taken from a server's answer that svc sends nothing to. */
export async function checkOAuthEndpoint(id: string, url: URL, lookup?: Lookup): Promise<void> {
  checkSecureEndpoint(id, url);
  const blocked = await blockedTargetAddress(url, lookup);
  if (blocked) throw blockedEndpointError(id, url, blocked);
}

/** Refuses an OAuth endpoint that is not https: (or http: on a loopback host). */
function checkSecureEndpoint(id: string, url: URL): void {
  const shown = `${url.protocol}//${url.host}${url.pathname}`.slice(0, 120);
  const secure = url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHostname(url.hostname));
  if (!secure) {
    throw new SvcError(
      'forbidden',
      `the OAuth metadata of mcp.${id} names the endpoint ${shown}; svc sends OAuth requests only to https: URLs (or http: on a loopback host): check the server's OAuth configuration`,
      { details: { mcp_server: id, reason: 'insecure_endpoint', scheme: url.protocol, host: url.hostname } },
    );
  }
}

function blockedEndpointError(id: string, url: URL, blocked: string): SvcError {
  const shown = `${url.protocol}//${url.host}${url.pathname}`.slice(0, 120);
  return new SvcError(
    'forbidden',
    `the OAuth metadata of mcp.${id} names the endpoint ${shown}, at ${blocked}, a link-local or cloud metadata address; svc never sends OAuth requests there: check the server's OAuth configuration`,
    { details: { mcp_server: id, reason: 'blocked_address', address: blocked } },
  );
}

function tooLarge(id: string): SvcError {
  return new SvcError(
    'unavailable',
    `an OAuth answer for mcp.${id} is over the ${OAUTH_MAX_BYTES / (1024 * 1024)} MiB limit; the request was stopped: check the server's OAuth configuration`,
    { retryable: false },
  );
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

const SECRET_FIELD =
  /\b(code|code_verifier|client_secret|refresh_token|access_token|id_token|assertion|password)(["']?\s*[:=]\s*["']?)[^\s&"',;}]+/gi;
const MAX_SHOWN = 200;

/**
 * What the failed answer of an OAuth call shows the operator, in one short line: an answer that is
 * not an OAuth error keeps only its status (the SDK quotes the whole body, which may be an
 * internal page), and a server's `error_description` is capped, with anything like a code,
 * verifier, token or secret masked. Undefined for an error that is not such an answer.
 */
export function oauthFailureText(error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : String(error);
  const raw = /^(?:HTTP (\d{3}): )?Invalid OAuth error response/.exec(message);
  if (raw) {
    return `the authorization server answered ${raw[1] ? `HTTP ${raw[1]}` : 'a request'} with something that is not an OAuth error (not shown)`;
  }
  const code = (error as { errorCode?: unknown })?.errorCode;
  if (typeof code === 'string') return message ? `${shorten(code)}: ${shorten(message)}` : shorten(code);
  return undefined;
}

/**
 * A one-line message of any failure of the `svc mcp auth` flow: as oauthFailureText, and an
 * invalid metadata document names its first problem instead of the validator's dump.
 */
export function describeOAuthFailure(error: unknown): string {
  if (SvcError.is(error)) return error.message;
  const issues = (error as { issues?: unknown })?.issues;
  if (Array.isArray(issues) && issues.length) {
    const first = issues[0] as { path?: unknown; message?: unknown };
    const path = Array.isArray(first.path) && first.path.length ? `${first.path.join('.')}: ` : '';
    return `the server's OAuth metadata is not valid (${shorten(`${path}${String(first.message)}`)}): check the server's OAuth configuration`;
  }
  return oauthFailureText(error) ?? shorten(error instanceof Error ? error.message : String(error));
}

function shorten(text: string): string {
  const flat = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').replace(SECRET_FIELD, '$1$2[REDACTED]');
  return flat.length > MAX_SHOWN ? `${flat.slice(0, MAX_SHOWN)}…` : flat;
}
