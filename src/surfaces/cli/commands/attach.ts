/**
 * `svc attach <url> [--token T]`: the terminal UI against a running `svc service start http`,
 * over the session API and the SSE event stream. Same TUI code as the local one.
 * @module
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { SvcError } from '../../../errors';
import { withProductionReact } from '../../tui/production-react';
import type { CliContext, CliRegistrar } from '../context';

export const registerAttach: CliRegistrar = (program, ctx) => {
  program
    .command('attach')
    .description('open the terminal UI on a running svc HTTP server (svc service start http)')
    .argument('<url>', 'server URL, e.g. http://127.0.0.1:4096')
    .option('--token <token>', 'bearer token (default: env SVC_HTTP_TOKEN)')
    .option('-s, --session <id>', 'open this session')
    .option('--continue', 'open the most recent session')
    .action(async (url: string, options: { token?: string; session?: string; continue?: boolean }) => {
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        throw new SvcError(
          'invalid_input',
          `url: "${url}" is not a URL; e.g. svc attach http://127.0.0.1:4096`,
        );
      }
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
        throw new SvcError('invalid_input', `url: use http:// or https:// (got ${parsed.protocol})`);
      const io = ctx.io;
      // React's production build (NODE_ENV=production while the TUI's modules load, then restored).
      const [{ runTui }, { createHttpClient }, { createFileLogger }] = await withProductionReact(() =>
        Promise.all([import('../../tui/run'), import('../../tui/http-client'), import('../../../log')]),
      );
      const stateHome = io.env.XDG_STATE_HOME || join(io.env.HOME || homedir(), '.local', 'state');
      const token = options.token ?? io.env.SVC_HTTP_TOKEN;
      const client = createHttpClient({ url: parsed.toString(), token });
      // Fail fast with a clear line when the server is not there or the token is wrong.
      await client.listSessions({ limit: 1 });
      await runTui({
        client,
        log: createFileLogger(join(stateHome, 'svc', 'logs', 'attach.log')),
        env: io.env,
        stdin: (io.stdin ?? process.stdin) as NodeJS.ReadStream,
        stdout: io.stdout as NodeJS.WriteStream,
        stderr: io.stderr as NodeJS.WriteStream,
        sessionId: options.session,
        continueLast: options.continue,
        // A checkpoint before each prompt (POST /v1/checkpoints on the server), so /undo can
        // restore what the prompt changed, as in the local TUI: tui.checkpoint_prompts.
        checkpoints: await checkpointPrompts(ctx),
      });
    });
};

/**
 * `tui.checkpoint_prompts` is a preference of whoever runs the TUI, so attach reads it from the
 * local config (global file, workspace, --config, -c). A local config that does not load leaves
 * the default (on): it is the server's workspace that attach works on, not this one.
 */
export async function checkpointPrompts(ctx: CliContext): Promise<boolean> {
  const globals = ctx.globals();
  const { loadConfig } = await import('../../../config/load');
  try {
    return loadConfig({
      workspace: resolve(ctx.io.cwd, globals.cwd ?? '.'),
      env: ctx.io.env,
      configFile: globals.config,
      overrides: globals.c ?? [],
    }).config.tui.checkpoint_prompts;
  } catch {
    return true;
  }
}
