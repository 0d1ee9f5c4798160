/**
 * The MCP server over an App: one SDK `Server` whose tools are the registry's `mcp` bindings
 * listed in `services.mcp.exposed_tools`. Transports (stdio, streamable HTTP, in-memory for
 * tests) are connected by the caller; one Server serves one client connection.
 * @module
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { App } from '../../app';
import { VERSION } from '../../version';
import { callTool, listTools } from './call-tool';
import { type ExposedTool, resolveExposedTools, servedTools } from './exposed-tools';
import { guardTransport } from './stdio-transport';

export interface McpServerOptions {
  /**
   * The MCP-bound session; tools with an optional `session_id` default to it. A function is
   * called only when a tool reads the session (the server creates its session lazily).
   */
  sessionId?: string | (() => string);
  /** Names to expose instead of `services.mcp.exposed_tools` (tests, the parity walker). */
  exposedTools?: readonly string[];
  /** Resolved exposure, when the caller has checked it already (one per process). */
  exposed?: readonly ExposedTool[];
  /** Sees every tool call in flight (a stdio host that closes stdin still gets its answers). */
  trackCall?: (call: Promise<unknown>) => void;
}

export function createMcpServer(app: App, options: McpServerOptions = {}): Server {
  const exposed =
    options.exposed ??
    (options.exposedTools ? resolveExposedTools(app, options.exposedTools) : servedTools(app).exposed);
  const server = new Server(
    { name: 'svc', version: VERSION },
    {
      capabilities: { tools: {} },
      instructions:
        'svc read surfaces: each tool returns the same JSON as the matching svc HTTP route and CLI --json command.',
    },
  );
  // A malformed tools/call (arguments not an object) answers -32602 in one sentence, on every transport.
  const connect = server.connect.bind(server);
  server.connect = (transport) => connect(guardTransport(transport));
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listTools(app, exposed) }));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const call = callTool(app, exposed, request.params.name, request.params.arguments, {
      signal: extra.signal,
      sessionId: options.sessionId,
    });
    options.trackCall?.(call);
    return call;
  });
  return server;
}
