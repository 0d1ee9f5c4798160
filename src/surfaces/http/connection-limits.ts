/**
 * The connection limits of svc's HTTP servers (`svc service start http`, and `mcp --transport
 * http`), from `[services.http]` / `[services.mcp]`, read when the server starts: how many
 * connections may be open at once, and how long a client has to send a request's headers.
 * @module
 */
import type { Server, ServerOptions } from 'node:http';

export interface ConnectionLimits {
  max_connections: number;
  headers_timeout_seconds: number;
}

/**
 * `headers_timeout_seconds` (Node's 60 s default let a client hold a connection that long with a
 * trickle of header bytes), checked every second or so rather than at Node's 30 s interval.
 */
export function connectionOptions(limits: ConnectionLimits): ServerOptions {
  const headersTimeout = Math.round(limits.headers_timeout_seconds * 1000);
  return {
    headersTimeout,
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.round(headersTimeout / 2))),
  };
}

/** `max_connections`: a connection past it is closed at once (Node's `maxConnections`; Node has no limit). */
export function limitConnections(server: Server, limits: ConnectionLimits): void {
  server.maxConnections = limits.max_connections;
}
