/**
 * Opening the transport of one configured MCP server: a spawned stdio child (with the inherited
 * environment narrowed to the SDK's default list), streamable HTTP or legacy SSE, with the stored
 * OAuth credentials when the block asks for them. The MCP SDK's transports load on first use.
 * @module
 */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpServerConfig } from '../config/schema';
import { SvcError } from '../errors';
import { maskSecretArgs, maskUrlSecrets } from '../redact';
import type { McpAuthStore } from './auth-store';
import { cappedFetch, DEFAULT_MAX_MESSAGE_BYTES } from './capped-fetch';
import { oauthFetch } from './oauth-fetch';
import { NeedsAuth, type SvcOAuthProvider } from './oauth-provider';

export type McpTransportType = 'stdio' | 'http' | 'sse';

export { NeedsAuth } from './oauth-provider';

export interface TransportOptions {
  id: string;
  config: McpServerConfig;
  workspace: string;
  env: Readonly<Record<string, string | undefined>>;
  fetch: typeof fetch;
  /** The cap of one message from an http/sse server (default 32 MiB). */
  maxMessageBytes?: number;
  authStore: McpAuthStore;
  /** An OAuth provider bound to the stored credentials of this server. */
  oauthProvider(): SvcOAuthProvider;
  /** What a stdio server writes to stderr, chunk by chunk. */
  onStderr(text: string): void;
}

export function transportType(config: McpServerConfig): McpTransportType {
  return config.type ?? (config.url && !config.command ? 'http' : 'stdio');
}

/**
 * The command line or URL as `svc mcp list` and the status readouts show it: credentials in the
 * URL and the values of flags like `--api-key` are masked (the transport uses the config as is).
 */
export function targetOf(config: McpServerConfig): string {
  return transportType(config) === 'stdio'
    ? [config.command ?? '', ...maskSecretArgs(config.args ?? [])].join(' ').trim()
    : maskUrlSecrets(config.url ?? '');
}

/** The server's transport, not yet started; throws SvcError (config) or NeedsAuth. */
export async function openTransport(options: TransportOptions): Promise<Transport> {
  const { id, config } = options;
  const type = transportType(config);
  if (type === 'stdio') return stdioTransport(options);
  const raw = config.url;
  if (!raw) throw new SvcError('config_error', `mcp.${id}.url is required for a ${type} server`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SvcError('config_error', `mcp.${id}.url: not a valid URL: ${raw}`);
  }
  let authProvider: SvcOAuthProvider | undefined;
  if (config.auth === 'oauth') {
    const entry = options.authStore.get(id);
    const stored =
      entry?.server_url === raw && entry.tokens && (entry.client_information || config.oauth?.client_id);
    if (!stored) throw new NeedsAuth(`not authorized yet: run svc mcp auth ${id}`);
    authProvider = options.oauthProvider();
  }
  const requestInit = { headers: { ...(config.headers ?? {}) } };
  // What the server sends back is size-capped (capped-fetch.ts); a refresh goes only to an
  // endpoint svc may send the refresh token to (oauth-fetch.ts).
  const capped = cappedFetch(options.fetch, options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
  const fetch = authProvider ? oauthFetch(capped, { id, serverUrl: raw }) : capped;
  if (type === 'sse') {
    const { SSEClientTransport } = await import('@modelcontextprotocol/sdk/client/sse.js');
    return new SSEClientTransport(url, { requestInit, authProvider, fetch });
  }
  const { StreamableHTTPClientTransport } = await import(
    '@modelcontextprotocol/sdk/client/streamableHttp.js'
  );
  return new StreamableHTTPClientTransport(url, { requestInit, authProvider, fetch });
}

async function stdioTransport(options: TransportOptions): Promise<Transport> {
  const { id, config } = options;
  const { StdioClientTransport, DEFAULT_INHERITED_ENV_VARS } = await import(
    '@modelcontextprotocol/sdk/client/stdio.js'
  );
  const command = config.command;
  if (!command) throw new SvcError('config_error', `mcp.${id}.command is required for a stdio server`);
  const cwd = resolve(options.workspace, config.cwd ?? '.');
  if (!isDirectory(cwd)) throw new SvcError('config_error', `mcp.${id}.cwd: ${cwd} is not a directory`);
  const env: Record<string, string> = {};
  for (const name of DEFAULT_INHERITED_ENV_VARS) {
    const value = options.env[name];
    if (value !== undefined) env[name] = value;
  }
  // The server's stdin is a socket (Node's 'pipe'): a bash with a socket as stdin and no SHLVL
  // takes itself for an sshd command and sources ~/.bashrc, whose output on stdout would be read
  // as the protocol's. One shell level up, as under a terminal.
  env.SHLVL = '1';
  Object.assign(env, config.env ?? {});
  if (!findExecutable(command, env.PATH ?? '', cwd)) {
    throw new SvcError(
      'not_found',
      `mcp.${id}.command: command not found: ${command}${command.includes('/') ? '' : ' (searched PATH)'}`,
    );
  }
  const transport = new StdioClientTransport({
    command,
    args: config.args ?? [],
    env,
    cwd,
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk: Buffer) => options.onStderr(chunk.toString('utf8')));
  return transport;
}

/** `which`, against the PATH the server will get. */
export function findExecutable(command: string, path: string, cwd: string): string | undefined {
  if (command.includes('/') || isAbsolute(command)) {
    const full = resolve(cwd, command);
    return isExecutable(full) ? full : undefined;
  }
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const full = join(resolve(cwd, dir), command);
    if (isExecutable(full)) return full;
  }
  return undefined;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function isExecutable(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
