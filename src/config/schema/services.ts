/**
 * `[services]`: the HTTP server, the autopilot worker and the MCP server.
 * @module
 */
import { z } from 'zod';
import { lazy } from '../../util/lazy';
import { toolList } from './shared';

const serviceAuth = lazy(() => ({
  host: z.string().default('127.0.0.1'),
  port: z.number().int().min(0).max(65535).optional(),
  token: z.string().optional(),
  allow_no_auth: z.boolean().default(false),
}));

/** Connection limits of a service's HTTP server, read when it starts. */
const connectionLimits = lazy(() => ({
  max_connections: z
    .number()
    .int()
    .positive()
    .default(1024)
    .describe('Most open connections at once; past it a new connection is closed at once.'),
  headers_timeout_seconds: z
    .number()
    .positive()
    .max(300)
    .default(20)
    .describe("Seconds a client has to send a request's headers; past them a 408 and the connection closed."),
}));

export const servicesSchema = lazy(() =>
  z.strictObject({
    http: z
      .strictObject({
        ...serviceAuth(),
        max_body_bytes: z
          .number()
          .int()
          .positive()
          .default(10 * 1024 * 1024),
        max_body_bytes_in_flight: z
          .number()
          .int()
          .positive()
          .default(128 * 1024 * 1024)
          .describe(
            'Bytes of request bodies being received at once (declared lengths; a chunked body counts the bytes that arrived); past it a 503 with Retry-After.',
          ),
        body_idle_timeout_seconds: z
          .number()
          .positive()
          .max(3600)
          .default(30)
          .describe('Seconds a request body may stop arriving; past them a 408 and the connection closed.'),
        ...connectionLimits(),
        event_ring_size: z.number().int().positive().default(1000),
        sse_heartbeat_seconds: z
          .number()
          .positive()
          .max(3600)
          .default(15)
          .describe('Seconds between SSE heartbeat comments on idle event streams.'),
        sse_max_buffered_bytes: z
          .number()
          .int()
          .positive()
          .default(128 * 1024 * 1024)
          .describe(
            'Bytes all session event streams may hold for clients that have not read them; past it the slowest stream is dropped (it reconnects with Last-Event-ID).',
          ),
        sse_max_streams_per_session: z
          .number()
          .int()
          .positive()
          .default(16)
          .describe(
            'Session event streams one session may have open. Past it, an open stream 64 KiB or more behind is dropped (it reconnects with Last-Event-ID); when none is behind, the new stream is refused (a dropped event, reason stream_limit).',
          ),
      })
      .prefault({}),
    autopilot: z
      .strictObject({
        tick_seconds: z
          .number()
          .min(1)
          .max(3600)
          .default(5)
          .describe(
            'How often the autopilot worker looks for due schedules and queued prompts (seconds, at least 1).',
          ),
        drain_queues: z
          .boolean()
          .default(true)
          .describe('Start queued prompts of idle sessions (not after a failed or cancelled run).'),
        max_concurrent_runs: z
          .number()
          .int()
          .positive()
          .default(2)
          .describe('Most runs the worker starts that are active at once.'),
        unattended: z
          .enum(['fail', 'wait'])
          .optional()
          .describe(
            'A permission prompt in a run the worker started, with nobody attached: fail or wait. Default: permissions.unattended. Never approved silently.',
          ),
      })
      .prefault({}),
    mcp: z
      .strictObject({
        ...serviceAuth(),
        ...connectionLimits(),
        exposed_tools: toolList()
          .optional()
          .describe(
            'MCP tool names svc service start mcp exposes (e.g. svc_get_workflow_tools_status). Unset: the read-only default set (docs/mcp.md); [] serves none.',
          ),
        transport: z
          .enum(['stdio', 'http'])
          .default('stdio')
          .describe('svc service start mcp transport; --transport overrides it.'),
      })
      .prefault({}),
  }),
);
