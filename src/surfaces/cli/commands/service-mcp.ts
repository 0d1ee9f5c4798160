/**
 * `svc service start mcp`: serve the exposed tools over MCP until the host goes away (stdin
 * closes), SIGINT or SIGTERM. Its own nested command so it sits beside `service start http`.
 * @module
 */
import { Option } from 'commander';
import { SvcError } from '../../../errors';
import type { CliRegistrar } from '../context';
import { ensureCommand } from '../tool-commands';

interface ServiceMcpFlags {
  transport?: 'stdio' | 'http';
  port?: string;
  auth?: 'bearer' | 'none';
  token?: string;
  sessionId?: string;
}

export const registerServiceMcp: CliRegistrar = (program, ctx) => {
  const command = ensureCommand(
    program,
    ['service', 'start', 'mcp'],
    'serve svc tools over MCP (stdio by default): services.mcp.exposed_tools, or the read-only tools when unset',
  );
  command
    .addOption(
      new Option('--transport <transport>', 'stdio, or streamable HTTP on 127.0.0.1').choices([
        'stdio',
        'http',
      ]),
    )
    .option('--port <n>', 'HTTP port (with --transport http; 0 picks a free one)')
    .addOption(
      new Option(
        '--auth <mode>',
        'HTTP only. bearer: a bearer token is required (with no token configured every request gets 401); ' +
          'none: with no token configured, requests pass without one (loopback hosts only)',
      ).choices(['bearer', 'none']),
    )
    .option(
      '--token <token>',
      'bearer token clients must send (default [services.mcp].token or SVC_MCP_TOKEN; never printed)',
    )
    .option(
      '--session-id <id>',
      'bind to this session (default: a new session, created when a tool first needs one)',
    )
    .action(async (flags: ServiceMcpFlags) => {
      const port = flags.port === undefined ? undefined : Number(flags.port);
      if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) {
        throw new SvcError('invalid_input', `--port: expected an integer 0-65535, got ${flags.port}`);
      }
      const app = await ctx.app({ eagerDb: true });
      if (port !== undefined && (flags.transport ?? app.config.services.mcp.transport) !== 'http') {
        throw new SvcError('invalid_input', '--port needs --transport http');
      }
      const { startMcpService } = await import('../../mcp/service');
      ctx.keepAlive = true;
      let service: Awaited<ReturnType<typeof startMcpService>>;
      try {
        service = await startMcpService(app, {
          transport: flags.transport,
          port,
          auth: flags.auth,
          token: flags.token,
          sessionId: flags.sessionId,
          stdin: ctx.io.stdin as NodeJS.ReadableStream as never,
          stdout: ctx.io.stdout as never,
        });
      } catch (error) {
        await app.close();
        throw error;
      }
      if (service.notice) ctx.io.stderr.write(`svc: ${service.notice}\n`);
      if (service.warning) ctx.io.stderr.write(`svc: warning: ${service.warning}\n`);
      // Like svc service start http: one line on stdout once ready (stdout is free without stdio).
      if (service.url) ctx.out(`svc: listening on ${service.url}`);
      const stop = () => void service.close();
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
      ctx.io.signal?.addEventListener('abort', stop, { once: true });
      try {
        await service.closed;
      } finally {
        process.off('SIGTERM', stop);
        process.off('SIGINT', stop);
        ctx.io.signal?.removeEventListener('abort', stop);
        await app.close();
      }
    });
};
