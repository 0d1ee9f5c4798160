/**
 * `svc mcp auth <id>` (human-run: the OAuth authorization-code flow with a browser and a
 * loopback callback) and `svc mcp logout <id>`. `svc mcp list|status` come from the
 * `mcp_status` tool's CLI bindings.
 * @module
 */
import { spawn } from 'node:child_process';
import { SvcError } from '../../../errors';
import type { CliRegistrar } from '../context';
import { ensureCommand } from '../tool-commands';

export const registerMcpCommands: CliRegistrar = (program, ctx) => {
  ensureCommand(program, ['mcp'], 'MCP servers svc connects to ([mcp.<id>] blocks)');

  ensureCommand(
    program,
    ['mcp', 'auth'],
    'authorize svc with an OAuth-protected MCP server (opens a browser)',
  )
    .argument('<id>', 'the server id of its [mcp.<id>] block')
    .option('--no-browser', 'print the authorization URL without opening a browser')
    .option('--timeout <seconds>', 'how long to wait for the browser callback', '300')
    .option('--json', 'print the server status as JSON when done')
    .action(async (id: string, flags: { browser: boolean; timeout: string; json?: boolean }) => {
      const seconds = Number(flags.timeout);
      if (!Number.isFinite(seconds) || seconds <= 0) {
        throw new SvcError('invalid_input', `--timeout: expected a number of seconds, got ${flags.timeout}`);
      }
      const app = await ctx.app();
      const signals = [AbortSignal.timeout(seconds * 1000)];
      if (ctx.io.signal) signals.push(ctx.io.signal);
      const status = await app.mcpClients.authorize(id, {
        signal: AbortSignal.any(signals),
        onAuthorizationUrl: (url) => {
          ctx.io.stderr.write(`svc: open this URL to authorize mcp.${id}:\n\n  ${url.href}\n\n`);
          if (flags.browser) openBrowser(url.href);
          ctx.io.stderr.write('svc: waiting for the browser to come back (Ctrl+C cancels)…\n');
        },
      });
      const shown = app.redactor.value(status);
      if (flags.json) ctx.json(shown);
      else if (status.state === 'connected') {
        ctx.out(
          `mcp.${id}: authorized; connected, ${status.tools.length} tool${status.tools.length === 1 ? '' : 's'}`,
        );
      } else {
        ctx.out(`mcp.${id}: authorized, but the server is ${status.state}: ${shown.error ?? ''}`);
      }
      if (status.state !== 'connected') ctx.exitCode = 1;
    });

  ensureCommand(program, ['mcp', 'logout'], 'forget the stored OAuth credentials of an MCP server')
    .argument('<id>', 'the server id of its [mcp.<id>] block')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, flags: { json?: boolean }) => {
      const app = await ctx.app();
      const result = await app.mcpClients.logout(id);
      if (flags.json) ctx.json(result);
      else {
        ctx.out(
          result.removed
            ? `mcp.${id}: logged out (credentials removed from ${result.location})`
            : `mcp.${id}: no stored credentials`,
        );
      }
    });
};

/**
 * The command that opens `url` in a browser. On Windows no shell is involved: `cmd /c start`
 * would read `&` in the URL as a command separator; `rundll32 url.dll,FileProtocolHandler`
 * takes the URL as one argument.
 */
export function openerCommand(url: string, platform: NodeJS.Platform = process.platform): [string, string[]] {
  if (platform === 'darwin') return ['open', [url]];
  if (platform === 'win32') return ['rundll32', ['url.dll,FileProtocolHandler', url]];
  return ['xdg-open', [url]];
}

/** Best effort: the URL is printed as well, so a failure to open a browser is not an error. */
function openBrowser(url: string) {
  const [command, args] = openerCommand(url);
  try {
    const child = spawn(command, args, { detached: true, stdio: 'ignore' });
    child.on('error', () => {});
    child.unref();
  } catch {
    // no opener on this machine
  }
}
