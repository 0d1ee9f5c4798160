/**
 * `[mcp.<name>]`: an MCP server svc connects to as a client.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';

export const mcpServerSchema = lazy(() =>
  z.strictObject({
    type: z
      .enum(['stdio', 'http', 'sse'])
      .optional()
      .describe(
        'stdio (spawn command), http (streamable HTTP) or sse (legacy); default stdio, or http with a url.',
      ),
    command: z.string().optional().describe('stdio: the server executable (looked up in PATH).'),
    args: z.array(z.string()).optional().describe('stdio: its arguments.'),
    env: z
      .record(z.string(), z.string())
      .optional()
      .describe('stdio: extra environment (${ENV} interpolated); only HOME, PATH, … are inherited.'),
    cwd: z.string().optional().describe('stdio: working directory, relative to the workspace.'),
    url: z.string().optional().describe('http/sse: the endpoint.'),
    headers: z
      .record(z.string(), z.string())
      .optional()
      .describe('http/sse: headers sent with every request.'),
    timeout: z
      .number()
      .positive()
      .optional()
      .describe('Seconds per request (default 30); starting the server gets at least 10.'),
    disabled: z.boolean().optional().describe('Keep the block but never connect.'),
    trust_annotations: z
      .boolean()
      .optional()
      .describe(
        "Let the readOnlyHint of this server's tools skip the permission ask (default false: every tool asks; destructiveHint always asks).",
      ),
    max_tools: z
      .number()
      .int()
      .positive()
      .max(4096)
      .optional()
      .describe(
        "The most of this server's tools svc takes (default 256); the rest are skipped with a warning in svc mcp status.",
      ),
    auth: z.enum(['oauth', 'none']).optional().describe('oauth enables MCP client OAuth for this server.'),
    oauth: z
      .strictObject({
        client_id: z
          .string()
          .optional()
          .describe('Pre-registered client id (default: dynamic registration).'),
        client_secret: z.string().optional(),
        scopes: z.array(z.string()).optional(),
        redirect_port: z
          .number()
          .int()
          .positive()
          .optional()
          .describe('Fixed loopback port of the OAuth callback (default: any free port).'),
      })
      .optional(),
  }),
);
