/**
 * `svc mcp auth <id>`: the OAuth authorization-code + PKCE flow for one http/sse server, with a
 * loopback callback on the configured port, the port of an earlier registration, or a free one.
 * The tokens land in the auth store through the connection's OAuth provider.
 * @module
 */
import { SvcError } from '../errors';
import type { Logger } from '../log';
import type { McpAuthStore } from './auth-store';
import type { McpConnection } from './connection';
import { startOAuthCallback } from './oauth-callback';
import { describeOAuthFailure, oauthFetch } from './oauth-fetch';
import { transportType } from './transport';

export interface AuthorizeOptions {
  /** Show the authorization URL to the operator (print it, open a browser). */
  onAuthorizationUrl(url: URL): void | Promise<void>;
  signal: AbortSignal;
}

/** Runs the flow to the end (or throws); the caller reconnects the server afterwards. */
export async function authorizeServer(
  connection: McpConnection,
  options: AuthorizeOptions,
  deps: { authStore: McpAuthStore; fetch: typeof fetch; log: Logger },
): Promise<void> {
  const id = connection.id;
  const config = connection.config;
  const type = transportType(config);
  if (type === 'stdio') {
    throw new SvcError('invalid_input', `mcp.${id} is a stdio server; OAuth applies to http and sse servers`);
  }
  if (config.auth !== 'oauth') {
    throw new SvcError(
      'invalid_input',
      `mcp.${id}.auth is not "oauth"; set auth = "oauth" in [mcp.${id}] first`,
    );
  }
  const serverUrl = config.url;
  if (!serverUrl) throw new SvcError('config_error', `mcp.${id}.url is required for a ${type} server`);
  const configuredPort = config.oauth?.redirect_port;
  const storedUri = deps.authStore.get(id)?.redirect_uri;
  const storedPort = storedUri ? Number(new URL(storedUri).port) || undefined : undefined;
  const callback = await startOAuthCallback(configuredPort ?? storedPort ?? 0).catch((error) => {
    // The port of an earlier registration is taken: register again on a free one.
    if (configuredPort === undefined && storedPort !== undefined) return startOAuthCallback(0);
    throw error;
  });
  try {
    const provider = connection.oauthProvider({
      redirectUrl: callback.url,
      state: callback.state,
      onAuthorizationUrl: options.onAuthorizationUrl,
    });
    const { auth } = await import('@modelcontextprotocol/sdk/client/auth.js');
    // Endpoints from the metadata are checked, answers capped (oauth-fetch.ts).
    const fetchFn = oauthFetch(deps.fetch, { id, serverUrl, capAll: true });
    const run = (authorizationCode?: string) =>
      auth(provider, { serverUrl, authorizationCode, fetchFn }).catch((error) => {
        throw new SvcError('unavailable', `mcp.${id}: OAuth failed: ${describeOAuthFailure(error)}`, {
          cause: error,
        });
      });
    let result = await run();
    if (result === 'REDIRECT') {
      const code = await callback.waitForCode(options.signal);
      result = await run(code);
    }
    deps.log.info('mcp server authorized', { server: id, result });
  } finally {
    await callback.close();
  }
}
