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
import { type AuthorizeOptions, authorizeServer } from './authorize';
import { McpConnection, type McpServerStatus } from './connection';
import { markBlocked } from './duplicates';
import type { RemoteToolDef, RemoteToolSink } from './remote-tools';
import { createToolOwnership } from './tool-ownership';

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
  const ownership = createToolOwnership(deps.tools);
  const inflight = new Set<Promise<void>>();
  const cooldown = deps.retryCooldownMs ?? 30_000;
  let closed = false;

  const setTools = (id: string, defs: RemoteToolDef[]): string[] => (closed ? [] : ownership.set(id, defs));

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
    markBlocked(connections);
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
    settled: (options = {}) => waitSettled(inflight, options),
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
      await authorizeServer(require(id), options, { authStore: deps.authStore, fetch: deps.fetch, log });
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
      ownership.releaseAll();
    },
  };
}

function sameConfig(a: McpServerConfig, b: McpServerConfig): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function hasTokens(store: McpAuthStore, connection: McpConnection): boolean {
  const entry = store.get(connection.id);
  return Boolean(entry?.tokens && entry.server_url === connection.config.url);
}

/** Wait until `inflight` is empty (it shrinks as attempts end), at most `timeoutMs`. */
async function waitSettled(
  inflight: ReadonlySet<Promise<void>>,
  options: { timeoutMs?: number; signal?: AbortSignal },
): Promise<void> {
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
}
