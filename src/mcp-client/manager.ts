/**
 * The MCP client side: every `[mcp.<id>]` block as a connection whose tools join the registry
 * (and so the funnel: `options.disabled_tools` hides them, mutating ones ask permission).
 *
 * Nothing connects at creation. `start()` begins every connection that has not started, in
 * parallel, and returns at once; the agent, the TUI and the MCP commands call it (the first
 * prompt assembly of a session does too). `settled()` waits for what is in flight, bounded.
 * A failed server is retried on demand: by `start()` after a cool-down, by `connect(id)`, and by
 * a call to one of its tools. Owned by the App and stopped by `app.close()`.
 * @module
 */

import type { Config, McpServerConfig } from '../config/schema';
import { SvcError } from '../errors';
import type { Logger } from '../log';
import type { Clock } from '../util/ids';
import type { McpAuthStore } from './auth-store';
import { McpConnection, type McpServerStatus, targetOf, transportType } from './connection';
import { startOAuthCallback } from './oauth-callback';
import {
  isRemoteTool,
  type RemoteToolDef,
  type RemoteToolSink,
  sanitizeName,
  toolPrefix,
} from './remote-tools';

export type { McpServerState, McpServerStatus } from './connection';

export interface McpClientManagerDeps {
  config: () => Config;
  workspace: string;
  env: Readonly<Record<string, string | undefined>>;
  log: Logger;
  clock: Clock;
  fetch: typeof fetch;
  /** The tool registry: the servers' tools join it as `mcp_<id>_<tool>`. */
  tools: RemoteToolSink;
  authStore: McpAuthStore;
  /** Secrets learned at run time (OAuth tokens) go to the redactor. */
  onSecret(value: string): void;
  /** Automatic reconnect delays after a crash (default 500 ms, 2 s, 5 s). */
  reconnectDelaysMs?: readonly number[];
  /** How long a failed server rests before `start()` retries it (default 30 s). */
  retryCooldownMs?: number;
}

export interface AuthorizeOptions {
  /** Show the authorization URL to the operator (print it, open a browser). */
  onAuthorizationUrl(url: URL): void | Promise<void>;
  signal: AbortSignal;
}

export interface McpClientManager {
  /** Configured servers (no connection is made). */
  ids(): string[];
  /**
   * Begin connecting every enabled server not started yet, and retry failures that have rested
   * (all failures with `retryFailed`: an explicit status request); never blocks.
   */
  start(options?: { retryFailed?: boolean }): void;
  /** Wait until no connection attempt is in flight, at most `timeoutMs`. */
  settled(options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<void>;
  /** Connect (or reconnect) one server now and wait for the outcome. */
  connect(id: string): Promise<McpServerStatus>;
  status(id?: string): McpServerStatus[];
  /** The authorization-code + PKCE flow with a loopback callback (svc mcp auth). */
  authorize(id: string, options: AuthorizeOptions): Promise<McpServerStatus>;
  /** Forget the stored OAuth credentials of a server (svc mcp logout). */
  logout(id: string): Promise<{ server: string; removed: boolean; location: string }>;
  close(): Promise<void>;
}

export function createMcpClientManager(deps: McpClientManagerDeps): McpClientManager {
  const log = deps.log.child({ component: 'mcp-client' });
  const connections = new Map<string, McpConnection>();
  /** Registry names each server currently owns. */
  const owned = new Map<string, Set<string>>();
  const inflight = new Set<Promise<void>>();
  const cooldown = deps.retryCooldownMs ?? 30_000;
  let closed = false;

  const setTools = (id: string, defs: RemoteToolDef[]): string[] => {
    if (closed) return [];
    const mine = owned.get(id) ?? new Set<string>();
    // Never replace a tool this server does not own (a built-in one, another server's).
    const foreign = new Set(
      deps.tools
        .gates()
        .map((g) => g.tool.name)
        .filter((name) => !mine.has(name)),
    );
    const rejected = defs.filter((d) => foreign.has(d.name)).map((d) => d.name);
    const accepted = defs.filter((d) => !foreign.has(d.name));
    const next = new Set(accepted.map((d) => d.name));
    const stale = [...mine].filter((name) => !next.has(name));
    if (stale.length) deps.tools.remove((t) => isRemoteTool(t) && stale.includes(t.name));
    if (accepted.length) deps.tools.add(accepted);
    owned.set(id, next);
    return rejected;
  };

  /** Builds connections for new config blocks and marks the ones that cannot run. */
  const sync = () => {
    const servers = deps.config().mcp;
    for (const [id, config] of Object.entries(servers)) {
      const existing = connections.get(id);
      if (existing && sameConfig(existing.config, config)) continue;
      if (existing) {
        void existing.close();
        setTools(id, []);
      }
      connections.set(
        id,
        new McpConnection({
          id,
          config,
          workspace: deps.workspace,
          env: deps.env,
          log,
          clock: deps.clock,
          fetch: deps.fetch,
          authStore: deps.authStore,
          onSecret: deps.onSecret,
          setTools: (defs) => setTools(id, defs),
          reconnectDelaysMs: deps.reconnectDelaysMs ?? [500, 2000, 5000],
          crashWindowMs: 60_000,
        }),
      );
    }
    for (const [id, connection] of connections) {
      if (!(id in servers)) {
        connections.delete(id);
        void connection.close();
        setTools(id, []);
      }
    }
    // A server listed twice (same command line or URL under two ids), or two ids whose tool
    // prefixes collide after sanitizing: the first keeps running, the others explain why not.
    const byTarget = new Map<string, string>();
    const byPrefix = new Map<string, string>();
    for (const [id, connection] of connections) {
      connection.blocked = null;
      if (connection.config.disabled) continue;
      const target = `${transportType(connection.config)} ${targetKey(connection.config)}`;
      const prefix = toolPrefix(id);
      const twin = byTarget.get(target);
      const clash = byPrefix.get(prefix);
      if (twin) {
        connection.blocked = `mcp.${id} is the same server as mcp.${twin} (${targetOf(connection.config)}): listed twice; remove one of the two blocks`;
      } else if (clash) {
        connection.blocked = `mcp.${id} and mcp.${clash} both give tool names starting ${prefix}; rename one (ids are sanitized to ${sanitizeName(id)})`;
      } else {
        byTarget.set(target, id);
        byPrefix.set(prefix, id);
      }
    }
  };

  const track = (promise: Promise<void>) => {
    inflight.add(promise);
    void promise.finally(() => inflight.delete(promise));
  };

  const require = (id: string): McpConnection => {
    sync();
    const connection = connections.get(id);
    if (!connection) {
      const known = [...connections.keys()].join(', ');
      throw new SvcError(
        'not_found',
        `no MCP server "${id}" in the config; ${known ? `configured: ${known}` : 'add an [mcp.<id>] block'}`,
      );
    }
    return connection;
  };

  return {
    ids() {
      sync();
      return [...connections.keys()];
    },
    start(options = {}) {
      if (closed) return;
      sync();
      const now = deps.clock.now();
      for (const connection of connections.values()) {
        if (connection.blocked || connection.connecting) continue;
        const rested =
          options.retryFailed ||
          connection.lastAttemptAt === null ||
          now - connection.lastAttemptAt >= cooldown;
        if (connection.state === 'idle') track(connection.connect());
        else if (connection.state === 'failed' && rested) track(connection.retry());
        else if (connection.state === 'needs_auth' && hasTokens(deps.authStore, connection)) {
          track(connection.connect());
        }
      }
    },
    async settled(options = {}) {
      const deadline = Date.now() + (options.timeoutMs ?? 30_000);
      while (inflight.size && !options.signal?.aborted) {
        const left = deadline - Date.now();
        if (left <= 0) return;
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.allSettled([...inflight]),
          new Promise<void>((resolvePromise) => {
            timer = setTimeout(resolvePromise, left);
            options.signal?.addEventListener('abort', () => resolvePromise(), { once: true });
          }),
        ]);
        clearTimeout(timer);
      }
    },
    async connect(id) {
      const connection = require(id);
      if (connection.blocked) return connection.status();
      const attempt = connection.retry();
      track(attempt);
      await attempt;
      return connection.status();
    },
    status(id) {
      sync();
      if (id !== undefined) return [require(id).status()];
      return [...connections.values()].map((c) => c.status());
    },
    async authorize(id, options) {
      const connection = require(id);
      const config = connection.config;
      const type = transportType(config);
      if (type === 'stdio') {
        throw new SvcError(
          'invalid_input',
          `mcp.${id} is a stdio server; OAuth applies to http and sse servers`,
        );
      }
      if (config.auth !== 'oauth') {
        throw new SvcError(
          'invalid_input',
          `mcp.${id}.auth is not "oauth"; set auth = "oauth" in [mcp.${id}] first`,
        );
      }
      if (!config.url) throw new SvcError('config_error', `mcp.${id}.url is required for a ${type} server`);
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
          onAuthorizationUrl: options.onAuthorizationUrl,
        });
        const { auth } = await import('@modelcontextprotocol/sdk/client/auth.js');
        const run = (authorizationCode?: string) =>
          auth(provider, { serverUrl: config.url!, authorizationCode, fetchFn: deps.fetch }).catch(
            (error) => {
              throw new SvcError('unavailable', `mcp.${id}: OAuth failed: ${(error as Error).message}`, {
                cause: error,
              });
            },
          );
        let result = await run();
        if (result === 'REDIRECT') {
          const code = await callback.waitForCode(() => provider.expectedState, options.signal);
          result = await run(code);
        }
        log.info('mcp server authorized', { server: id, result });
      } finally {
        await callback.close();
      }
      return this.connect(id);
    },
    async logout(id) {
      const connection = require(id);
      const removed = deps.authStore.delete(id);
      if (connection.config.auth === 'oauth') {
        await connection.disconnect('needs_auth', `logged out: run svc mcp auth ${id} to authorize again`);
      }
      return { server: id, removed, location: deps.authStore.location };
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled([...connections.values()].map((c) => c.close()));
      const names = new Set([...owned.values()].flatMap((s) => [...s]));
      if (names.size) deps.tools.remove((t) => isRemoteTool(t) && names.has(t.name));
      owned.clear();
    },
  };
}

function targetKey(config: McpServerConfig): string {
  if (transportType(config) === 'stdio') {
    return JSON.stringify([config.command ?? '', config.args ?? [], config.cwd ?? '.', sorted(config.env)]);
  }
  let url = config.url ?? '';
  try {
    url = new URL(url).href;
  } catch {
    // reported by the connection itself
  }
  return JSON.stringify([url, sorted(config.headers)]);
}

/** Same command line, cwd and env (or URL and headers) = the same server listed twice. */
function sorted(record: Record<string, string> | undefined): [string, string][] {
  return Object.entries(record ?? {}).sort(([a], [b]) => a.localeCompare(b));
}

function sameConfig(a: McpServerConfig, b: McpServerConfig): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function hasTokens(store: McpAuthStore, connection: McpConnection): boolean {
  const entry = store.get(connection.id);
  return Boolean(entry?.tokens && entry.server_url === connection.config.url);
}
