/**
 * One configured MCP server: its transport, its SDK client, its tools in the registry, and its
 * state (idle → connecting → connected | needs_auth | failed). A crash is reconnected with a
 * short backoff; past the budget the server stays failed until someone asks again (a status
 * request, a call to one of its tools). Nothing here throws past the connection: every failure
 * becomes state and a message, so one server can never take down the agent or another server.
 * The MCP SDK is loaded on the first connect.
 * @module
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { McpServerConfig } from '../config/schema';
import { SvcError } from '../errors';
import type { Logger } from '../log';
import type { Clock } from '../util/ids';
import { safeTerminalText } from '../util/terminal-text';
import { VERSION } from '../version';
import type { McpAuthStore } from './auth-store';
import { callFailure, raceAbort, startFailure, transportFault } from './connection-errors';
import { createOAuthProvider } from './oauth-provider';
import { peerLabel } from './peer-text';
import { type RemoteCallResult, type RemoteToolDef, registryName } from './remote-tools';
import { listRawTools, toolDefinitions } from './tool-listing';
import { type McpTransportType, openTransport, targetOf, transportType } from './transport';

export type McpServerState = 'disabled' | 'idle' | 'connecting' | 'connected' | 'needs_auth' | 'failed';
export type { McpTransportType };
export { targetOf, transportType };

export const DEFAULT_TIMEOUT_SECONDS = 30;
/** Spawning a server (npx, a cold interpreter) can take longer than one request may. */
const MIN_START_SECONDS = 10;
const STDERR_LINES = 20;
const STDERR_LINE_CHARS = 400;

export interface McpServerStatus {
  id: string;
  type: McpTransportType;
  /** The command line or URL (redacted by the surface that prints it). */
  target: string;
  auth: 'oauth' | 'none';
  state: McpServerState;
  error: string | null;
  /** What the operator can do about the state, when anything. */
  action: string | null;
  /** Registry names of its tools. */
  tools: string[];
  /** Tools that were skipped (malformed, too deep or large a schema, name clash, over max_tools). */
  warnings: string[];
  /** Last lines the server wrote to stderr (stdio servers), made safe to show. */
  stderr_tail: string[];
  attempts: number;
  connected_at_unix: number | null;
  server: { name: string; version: string } | null;
}

export interface ConnectionDeps {
  id: string;
  config: McpServerConfig;
  workspace: string;
  env: Readonly<Record<string, string | undefined>>;
  log: Logger;
  clock: Clock;
  fetch: typeof fetch;
  /** The cap of one message from an http/sse server (default 32 MiB). */
  maxMessageBytes?: number;
  authStore: McpAuthStore;
  onSecret(value: string): void;
  /** Replace this server's tools in the registry. */
  setTools(defs: RemoteToolDef[]): string[];
  /** Delays between automatic reconnects after crashes; their count is the crash budget. */
  reconnectDelaysMs: readonly number[];
  /** Crashes older than this no longer count against the budget. */
  crashWindowMs: number;
}

export class McpConnection {
  readonly id: string;
  readonly config: McpServerConfig;
  state: McpServerState;
  /** Set by the manager when the block cannot run at all (listed twice, prefix clash). */
  blocked: string | null = null;
  error: string | null = null;
  attempts = 0;
  lastAttemptAt: number | null = null;
  private connectedAt: number | null = null;
  private serverInfo: { name: string; version: string } | null = null;
  private tools: string[] = [];
  private warnings: string[] = [];
  private stderrTail: string[] = [];
  private stderrPartial = '';
  /** Why the transport closed the current client's connection, when it said (`transportFault`). */
  private fault?: string;
  private client?: Client;
  private inflight?: Promise<void>;
  private reconnectTimer?: NodeJS.Timeout;
  private crashes: number[] = [];
  private closed = false;
  private readonly deps: ConnectionDeps;

  constructor(deps: ConnectionDeps) {
    this.deps = deps;
    this.id = deps.id;
    this.config = deps.config;
    this.state = deps.config.disabled ? 'disabled' : 'idle';
  }

  get timeoutMs(): number {
    return (this.config.timeout ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
  }

  /** Start-up (initialize and the first tools/list) gets at least MIN_START_SECONDS. */
  private get startTimeoutMs(): number {
    return Math.max(this.timeoutMs, MIN_START_SECONDS * 1000);
  }

  /** Connect (or reconnect with `force`); concurrent callers share one attempt. Never rejects. */
  connect(options: { force?: boolean } = {}): Promise<void> {
    if (this.closed || this.state === 'disabled' || this.blocked) return Promise.resolve();
    if (this.inflight) return this.inflight;
    if (this.state === 'connected' && !options.force) return Promise.resolve();
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.inflight = this.attempt().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  /** Asked for explicitly (status, a tool call): a fresh crash budget and an attempt now. */
  retry(): Promise<void> {
    this.crashes = [];
    return this.connect({ force: this.state !== 'connected' });
  }

  get connecting(): boolean {
    return this.inflight !== undefined;
  }

  /** Crashed within the window as often as the budget allows: wait to be asked. */
  get crashedOut(): boolean {
    return this.crashes.length > this.deps.reconnectDelaysMs.length;
  }

  async callTool(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<RemoteCallResult> {
    const name = registryName(this.id, tool);
    const client = await this.ready(name, signal);
    try {
      return (await client.callTool({ name: tool, arguments: args }, undefined, {
        signal,
        timeout: this.timeoutMs,
      })) as RemoteCallResult;
    } catch (error) {
      throw this.callError(name, error, signal);
    }
  }

  /** Forget the connection (logout): the next connect starts from the stored credentials. */
  async disconnect(state: McpServerState, error: string | null): Promise<void> {
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    await this.dropClient();
    this.state = state;
    this.error = error;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    await this.inflight?.catch(() => {});
    await this.dropClient();
  }

  status(): McpServerStatus {
    const type = transportType(this.config);
    return {
      id: this.id,
      type,
      target: targetOf(this.config),
      auth: this.config.auth === 'oauth' ? 'oauth' : 'none',
      state: this.blocked ? 'failed' : this.state,
      error: this.blocked ?? this.error,
      action: this.action(),
      tools: [...this.tools],
      warnings: [...this.warnings],
      stderr_tail: [...this.stderrTail, ...(this.stderrPartial ? [stderrLine(this.stderrPartial)] : [])],
      attempts: this.attempts,
      connected_at_unix: this.connectedAt === null ? null : Math.floor(this.connectedAt / 1000),
      server: this.serverInfo,
    };
  }

  /** An OAuth provider bound to the stored credentials of this server. */
  oauthProvider(
    options: {
      redirectUrl?: string;
      state?: string;
      onAuthorizationUrl?: (url: URL) => void | Promise<void>;
    } = {},
  ) {
    return createOAuthProvider({
      id: this.id,
      serverUrl: this.config.url ?? '',
      store: this.deps.authStore,
      settings: this.config.oauth,
      clock: this.deps.clock,
      onSecret: this.deps.onSecret,
      ...options,
    });
  }

  // ---- internals ------------------------------------------------------------------------------

  private action(): string | null {
    if (this.blocked) return `edit [mcp.${this.id}] in your config`;
    switch (this.state) {
      case 'needs_auth':
        return `run svc mcp auth ${this.id}`;
      case 'failed':
        return `fix the cause, then svc mcp status retries it`;
      case 'disabled':
        return `set mcp.${this.id}.disabled = false to use it`;
      default:
        return null;
    }
  }

  private async attempt(): Promise<void> {
    this.attempts++;
    this.lastAttemptAt = this.deps.clock.now();
    this.state = 'connecting';
    await this.dropClient();
    this.stderrTail = [];
    this.stderrPartial = '';
    this.fault = undefined;
    const log = this.deps.log;
    try {
      const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
      const transport = await this.makeTransport();
      const client = new Client({ name: 'svc', version: VERSION }, { capabilities: {} });
      client.onerror = (error) => {
        log.debug('mcp client error', { server: this.id, error });
        if (client === this.client) this.fault = transportFault(error) ?? this.fault;
      };
      this.client = client;
      client.onclose = () => this.onClientClosed(client);
      await client.connect(transport, { timeout: this.startTimeoutMs });
      if (this.closed) {
        await this.dropClient();
        return;
      }
      if (client.getServerCapabilities()?.tools?.listChanged) {
        const { ToolListChangedNotificationSchema } = await import('@modelcontextprotocol/sdk/types.js');
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
          this.refreshTools(client).catch((error) =>
            log.warn('mcp tool list refresh failed', { server: this.id, error }),
          );
        });
      }
      await this.refreshTools(client, this.startTimeoutMs);
      const version = client.getServerVersion();
      this.serverInfo = version
        ? { name: peerLabel(version.name), version: peerLabel(version.version) }
        : null;
      this.state = 'connected';
      this.error = null;
      this.connectedAt = this.deps.clock.now();
      log.info('mcp server connected', { server: this.id, tools: this.tools.length });
    } catch (error) {
      await this.dropClient();
      if (this.closed) return;
      this.fail(error);
    }
  }

  private fail(error: unknown) {
    const failure = startFailure(error, {
      id: this.id,
      config: this.config,
      startTimeoutMs: this.startTimeoutMs,
      hasStderr: this.stderrTail.length > 0,
      fault: this.fault,
    });
    this.state = failure.state;
    this.error = failure.error;
    this.deps.log.warn('mcp server failed', {
      server: this.id,
      state: this.state,
      error: this.error,
      stderr_tail: this.stderrTail,
    });
  }

  private makeTransport() {
    return openTransport({
      id: this.id,
      config: this.config,
      workspace: this.deps.workspace,
      env: this.deps.env,
      fetch: this.deps.fetch,
      maxMessageBytes: this.deps.maxMessageBytes,
      authStore: this.deps.authStore,
      oauthProvider: () => this.oauthProvider(),
      onStderr: (text) => this.appendStderr(text),
    });
  }

  private appendStderr(text: string) {
    const lines = (this.stderrPartial + text).split(/\r?\n/);
    this.stderrPartial = (lines.pop() ?? '').slice(0, STDERR_LINE_CHARS);
    for (const line of lines) this.stderrTail.push(stderrLine(line));
    if (this.stderrTail.length > STDERR_LINES)
      this.stderrTail.splice(0, this.stderrTail.length - STDERR_LINES);
  }

  private async refreshTools(client: Client, timeout = this.timeoutMs) {
    const raw = await listRawTools(client, timeout);
    const { defs, warnings } = toolDefinitions(
      this.id,
      raw,
      (tool, args, signal) => this.callTool(tool, args, signal),
      { trustAnnotations: this.config.trust_annotations, maxTools: this.config.max_tools },
    );
    const rejected = this.deps.setTools(defs);
    for (const name of rejected) warnings.push(`skipped: ${name} would replace a built-in tool`);
    this.tools = defs.map((d) => d.name).filter((n) => !rejected.includes(n));
    this.warnings = warnings;
    if (warnings.length) this.deps.log.warn('mcp tools skipped', { server: this.id, warnings });
  }

  private onClientClosed(client: Client) {
    if (client !== this.client || this.closed || this.state !== 'connected') return;
    this.client = undefined;
    const now = this.deps.clock.now();
    this.crashes = this.crashes.filter((at) => now - at < this.deps.crashWindowMs);
    this.crashes.push(now);
    const tail = this.stderrTail.length ? ' (see stderr_tail)' : '';
    const cause = this.fault ? `the server ${this.fault}, so svc closed the connection` : undefined;
    this.deps.log.warn('mcp server connection lost', { server: this.id, stderr_tail: this.stderrTail });
    if (this.crashedOut) {
      this.state = 'failed';
      this.error = `the server stopped ${this.crashes.length} times in a row${tail}; not reconnecting until asked (svc mcp status, or a call to one of its tools)`;
      return;
    }
    this.state = 'connecting';
    this.error = `${cause ?? `the server connection closed unexpectedly${tail}`}; reconnecting`;
    const delay = this.deps.reconnectDelaysMs[this.crashes.length - 1] ?? 1000;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.connect();
    }, delay);
    this.reconnectTimer.unref?.();
  }

  private async ready(name: string, signal: AbortSignal): Promise<Client> {
    if (this.state === 'disabled') {
      throw new SvcError(
        'unavailable',
        `${name}: MCP server ${this.id} is disabled (mcp.${this.id}.disabled)`,
      );
    }
    if (this.state !== 'connected' || !this.client) {
      await raceAbort(this.inflight ?? this.retry(), signal);
    }
    if (this.state === 'connected' && this.client) return this.client;
    if (this.state === 'needs_auth') {
      throw new SvcError(
        'unauthorized',
        `${name}: MCP server ${this.id} needs authorization: run svc mcp auth ${this.id}`,
      );
    }
    throw new SvcError(
      'unavailable',
      `${name}: MCP server ${this.id} is not available: ${this.error ?? this.state}`,
    );
  }

  private callError(name: string, error: unknown, signal: AbortSignal): SvcError {
    const failure = callFailure(name, error, signal, {
      id: this.id,
      timeoutMs: this.timeoutMs,
      fault: this.fault,
    });
    if (failure.refused) this.state = this.config.auth === 'oauth' ? 'needs_auth' : 'failed';
    return failure.error;
  }

  private async dropClient() {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    try {
      await client.close();
    } catch (error) {
      this.deps.log.debug('mcp client close failed', { server: this.id, error });
    }
  }
}

/** One line of a server's stderr as kept: made safe to show (no escape sequences), capped. */
function stderrLine(line: string): string {
  return safeTerminalText(line.slice(0, STDERR_LINE_CHARS * 2))
    .replace(/\n/g, ' ')
    .slice(0, STDERR_LINE_CHARS);
}
