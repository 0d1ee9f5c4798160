/**
 * `mcp_status`: the configured MCP servers, their state (connected, needs_auth, failed…), their
 * tools and, for a server that failed, the error and its stderr tail. Served as
 * `svc mcp status` (connects and waits) and `svc mcp list` (no connection), and reused by the
 * TUI `/mcp`.
 * @module
 */
import { z } from 'zod';
import type { McpServerStatus } from '../mcp-client/connection';
import { safeTerminalText } from '../util/terminal-text';
import { defineTool } from './core/define-tool';

export const mcpStatusInput = () =>
  z.strictObject({
    server: z
      .string()
      .min(1)
      .optional()
      .describe('Only this server, by its [mcp.<id>] id. Omit for every configured server.'),
    connect: z
      .boolean()
      .default(true)
      .describe(
        'Start servers that are not connected yet and retry failed ones, then wait up to wait_ms. false reports the current state without connecting.',
      ),
    wait_ms: z
      .number()
      .int()
      .min(0)
      .max(120_000)
      .default(15_000)
      .describe('Milliseconds to wait for connections in flight (with connect). 0 returns at once.'),
  });

export interface McpStatusResult {
  servers: McpServerStatus[];
  counts: Record<'configured' | 'connected' | 'connecting' | 'needs_auth' | 'failed' | 'disabled', number>;
  tool_count: number;
}

export const mcpStatus = defineTool({
  name: 'mcp_status',
  family: 'mcp',
  tag: 'primitive',
  description:
    'The MCP servers svc connects to ([mcp.<id>] in the config): state (connected, connecting, needs_auth, failed, disabled), their tools (named mcp_<id>_<tool>), and for a failed server the error and the last lines of its stderr.',
  input: mcpStatusInput,
  mutates: false,
  surfaces: {
    http: { method: 'GET', path: '/v1/mcp-status' },
    cli: [
      {
        command: 'mcp status',
        args: ['server?'],
        description: 'connect the configured MCP servers and show their state and tools',
        text: renderStatus,
      },
      {
        command: 'mcp list',
        fixed: { connect: false },
        description: 'list the configured MCP servers (without connecting)',
        text: renderList,
      },
    ],
  },
  async run(ctx, input): Promise<McpStatusResult> {
    const manager = ctx.app.mcpClients;
    if (input.server) manager.status(input.server); // not_found names the configured ids
    if (input.connect) {
      if (input.server) {
        const [current] = manager.status(input.server);
        if (current.state !== 'connected' && current.state !== 'disabled') {
          await manager.connect(input.server);
        }
      } else {
        manager.start({ retryFailed: true });
        await manager.settled({ timeoutMs: input.wait_ms, signal: ctx.signal });
      }
    }
    const servers = manager.status(input.server);
    const count = (state: McpServerStatus['state']) => servers.filter((s) => s.state === state).length;
    return {
      servers,
      counts: {
        configured: servers.length,
        connected: count('connected'),
        connecting: count('connecting') + count('idle'),
        needs_auth: count('needs_auth'),
        failed: count('failed'),
        disabled: count('disabled'),
      },
      tool_count: servers.reduce((sum, s) => sum + s.tools.length, 0),
    };
  },
});

const MARK: Record<McpServerStatus['state'], string> = {
  connected: '✓',
  connecting: '…',
  idle: '·',
  needs_auth: '!',
  failed: '✗',
  disabled: '-',
};

function renderStatus(result: McpStatusResult): string {
  if (result.servers.length === 0) return 'no MCP servers configured (add an [mcp.<id>] block)';
  const lines: string[] = [];
  for (const s of result.servers) {
    const tools = s.state === 'connected' ? `, ${s.tools.length} tool${s.tools.length === 1 ? '' : 's'}` : '';
    lines.push(`${MARK[s.state]} ${s.id.padEnd(16)} ${s.state}${tools}  (${s.type} ${s.target})`);
    if (s.error) lines.push(`    ${s.error}`);
    if (s.action) lines.push(`    → ${s.action}`);
    for (const w of s.warnings) lines.push(`    warning: ${w}`);
    if (s.state !== 'connected' && s.stderr_tail.length) {
      lines.push('    stderr:');
      for (const line of s.stderr_tail.slice(-10)) lines.push(`      ${line}`);
    }
  }
  // What servers sent is made safe where it is kept; this keeps the whole readout so regardless.
  return safeTerminalText(lines.join('\n'));
}

function renderList(result: McpStatusResult): string {
  if (result.servers.length === 0) return 'no MCP servers configured (add an [mcp.<id>] block)';
  return result.servers
    .map(
      (s) =>
        `${s.id.padEnd(16)} ${s.type.padEnd(5)} ${s.auth === 'oauth' ? 'oauth ' : ''}${s.state === 'disabled' ? 'disabled ' : ''}${s.target}`,
    )
    .join('\n');
}
