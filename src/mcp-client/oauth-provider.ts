/**
 * The SDK's `OAuthClientProvider` over an `McpAuthStore`: authorization code + PKCE with dynamic
 * client registration (or a pre-registered `[mcp.<id>.oauth] client_id`), tokens kept durably and
 * refreshed by the SDK when the server answers 401.
 *
 * Two modes. Interactive (`svc mcp auth <id>`): the redirect URL is the loopback callback and the
 * authorization URL goes to the operator. Background (connecting for the agent): the stored
 * redirect URI is reused and an authorization request (a refused token that cannot be refreshed)
 * ends the connect with `NeedsAuth`; svc never opens a browser on its own.
 * @module
 */
import { randomBytes } from 'node:crypto';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { McpServerConfig } from '../config/schema';
import { SvcError } from '../errors';
import type { Clock } from '../util/ids';
import type { McpAuthEntry, McpAuthStore } from './auth-store';
import { isLoopbackHostname } from './oauth-fetch';

export const CALLBACK_PATH = '/mcp/oauth/callback';
/** Placeholder redirect for background connects before any interactive flow ran. */
const BACKGROUND_REDIRECT = `http://127.0.0.1${CALLBACK_PATH}`;

/** The server needs (new) authorization before it can be reached: `svc mcp auth <id>`. */
export class NeedsAuth extends Error {}

export interface SvcOAuthProviderOptions {
  id: string;
  serverUrl: string;
  store: McpAuthStore;
  settings?: McpServerConfig['oauth'];
  clock: Clock;
  /** Interactive: the loopback callback URL. Omit for a background connect. */
  redirectUrl?: string;
  /** Interactive: show the authorization URL to the operator. */
  onAuthorizationUrl?: (url: URL) => void | Promise<void>;
  /** Interactive: the `state` the loopback callback waits for (made before it listens). */
  state?: string;
  /** Every secret the provider learns (tokens, client secret), for the redactor. */
  onSecret?: (value: string) => void;
}

export interface SvcOAuthProvider extends OAuthClientProvider {
  /** The last authorization URL the SDK asked us to open (background: needs_auth evidence). */
  readonly authorizationUrl?: URL;
  /** The `state` sent with the last authorization request. */
  readonly expectedState?: string;
  readonly interactive: boolean;
}

export function createOAuthProvider(options: SvcOAuthProviderOptions): SvcOAuthProvider {
  const { id, serverUrl, store, settings } = options;
  const interactive = options.redirectUrl !== undefined;
  let authorizationUrl: URL | undefined;
  let expectedState: string | undefined;

  const load = (): McpAuthEntry => {
    const entry = store.get(id);
    return entry && entry.server_url === serverUrl ? entry : { server_url: serverUrl };
  };
  const save = (patch: Partial<McpAuthEntry>) => {
    const next = { ...load(), ...patch, server_url: serverUrl };
    for (const [key, value] of Object.entries(next)) if (value === undefined) delete (next as never)[key];
    store.set(id, next);
  };
  const redirectUrl = options.redirectUrl ?? load().redirect_uri ?? BACKGROUND_REDIRECT;
  const reportSecrets = (tokens?: Record<string, unknown>) => {
    for (const key of ['access_token', 'refresh_token', 'id_token']) {
      const value = tokens?.[key];
      if (typeof value === 'string') options.onSecret?.(value);
    }
  };
  if (settings?.client_secret) options.onSecret?.(settings.client_secret);
  reportSecrets(load().tokens);

  return {
    interactive,
    get authorizationUrl() {
      return authorizationUrl;
    },
    get expectedState() {
      return expectedState;
    },
    get redirectUrl() {
      return redirectUrl;
    },
    get clientMetadata(): OAuthClientMetadata {
      return {
        client_name: 'svc',
        redirect_uris: [redirectUrl],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: settings?.client_secret ? 'client_secret_post' : 'none',
        ...(settings?.scopes?.length ? { scope: settings.scopes.join(' ') } : {}),
      };
    },
    state() {
      expectedState = options.state ?? randomBytes(16).toString('hex');
      return expectedState;
    },
    clientInformation() {
      const entry = load();
      const stored = entry.client_information as OAuthClientInformationMixed | undefined;
      if (settings?.client_id) {
        if (stored?.client_id === settings.client_id) return stored;
        return {
          client_id: settings.client_id,
          ...(settings.client_secret ? { client_secret: settings.client_secret } : {}),
        };
      }
      // A registration made for another loopback port cannot complete this flow: register again.
      if (interactive && stored && entry.redirect_uri !== redirectUrl) return undefined;
      return stored;
    },
    saveClientInformation(information) {
      const secret = (information as { client_secret?: unknown }).client_secret;
      if (typeof secret === 'string') options.onSecret?.(secret);
      save({
        client_information: information as Record<string, unknown>,
        ...(interactive ? { redirect_uri: redirectUrl } : {}),
      });
    },
    tokens() {
      return load().tokens as OAuthTokens | undefined;
    },
    saveTokens(tokens) {
      reportSecrets(tokens as Record<string, unknown>);
      save({ tokens: tokens as Record<string, unknown>, tokens_saved_at: options.clock.now() });
    },
    async redirectToAuthorization(url) {
      checkAuthorizationUrl(id, url);
      authorizationUrl = url;
      // A background connect whose token was refused and could not be refreshed ends here.
      if (!interactive) {
        throw new NeedsAuth(
          `the stored token was refused and could not be refreshed: run svc mcp auth ${id}`,
        );
      }
      await options.onAuthorizationUrl?.(url);
    },
    saveCodeVerifier(codeVerifier) {
      save({ code_verifier: codeVerifier });
    },
    codeVerifier() {
      const verifier = load().code_verifier;
      if (!verifier) throw new Error(`no PKCE code verifier is saved for mcp.${id}; run svc mcp auth ${id}`);
      return verifier;
    },
    invalidateCredentials(scope) {
      switch (scope) {
        case 'all':
          store.delete(id);
          break;
        case 'client':
          save({ client_information: undefined, redirect_uri: undefined });
          break;
        case 'tokens':
          save({ tokens: undefined, tokens_saved_at: undefined });
          break;
        case 'verifier':
          save({ code_verifier: undefined });
          break;
        case 'discovery':
          save({ discovery: undefined });
          break;
        default: {
          const never: never = scope;
          throw new Error(`unknown credential scope ${String(never)}`);
        }
      }
    },
    saveDiscoveryState(state) {
      save({ discovery: state as unknown as Record<string, unknown> });
    },
    discoveryState() {
      return load().discovery as OAuthDiscoveryState | undefined;
    },
  };
}

/**
 * The authorization URL comes from the server's metadata and goes to the OS opener: only an
 * `https:` URL (or `http:` on a loopback host) is taken, never `file:`, a custom scheme or a
 * command line in disguise (CVE-2025-6514).
 */
export function checkAuthorizationUrl(id: string, url: URL): void {
  const { protocol, hostname } = url;
  if (protocol === 'https:' && hostname) return;
  if (protocol === 'http:' && isLoopbackHostname(hostname)) return;
  const host = hostname ? `host ${hostname.slice(0, 100)}` : 'no host';
  throw new SvcError(
    'invalid_input',
    `the authorization URL in the OAuth metadata of mcp.${id} has scheme ${protocol.slice(0, 40)} (${host}); svc opens only https: URLs (or http: on a loopback host): check the server's OAuth configuration`,
    { details: { mcp_server: id, scheme: protocol, host: hostname } },
  );
}

/** True when the store holds what a background connect needs (a registration and tokens). */
export function hasStoredAuthorization(store: McpAuthStore, id: string, serverUrl: string): boolean {
  const entry = store.get(id);
  return Boolean(entry && entry.server_url === serverUrl && entry.tokens && entry.client_information);
}
