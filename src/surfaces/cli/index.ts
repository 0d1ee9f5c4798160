/**
 * The CLI: a commander program built from the registry's `cli` bindings plus hand-written
 * command families. Exit codes: 0 success, 1 runtime failure, 2 usage or config error. Errors are
 * one stderr line (`svc: …`); a stack only with SVC_DEBUG=1.
 * @module
 */
import { Command, CommanderError } from 'commander';
import type { App, AppOptions } from '../../app';
import { SvcError, toSvcError } from '../../errors';
import { allTools } from '../../tools/index';
import { VERSION } from '../../version';
import { registrars } from './commands/index';
import type { CliContext, CliIo, GlobalOptions } from './context';
import { registerToolCommands } from './tool-commands';

export type { CliIo } from './context';

export async function runCli(
  argv: string[],
  io: CliIo,
  options: { appOptions?: Partial<AppOptions> } = {},
): Promise<number> {
  const program = new Command('svc');
  let app: App | undefined;
  let appPromise: Promise<App> | undefined;

  const ctx: CliContext = {
    io,
    program,
    globals: () => program.opts<GlobalOptions>(),
    app(extra = {}) {
      appPromise ??= (async () => {
        const { createApp } = await import('../../app');
        const g = program.opts<GlobalOptions>();
        app = await createApp({
          workspace: g.cwd ?? io.cwd,
          dataDir: g.dataDir,
          configFile: g.config,
          overrides: g.c ?? [],
          env: io.env,
          ...options.appOptions,
          ...extra,
        });
        return app;
      })();
      return appPromise;
    },
    out: (text) => {
      io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
    },
    json: (value) => {
      io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
    },
  };

  program
    .name('svc')
    .description(
      'svc: an agentic coding assistant. Run `svc` for the terminal UI or `svc run "<prompt>"` headless.',
    )
    .version(VERSION, '-v, --version', 'print the version')
    .option('--cwd <dir>', 'workspace directory (default: the current directory)')
    .option('--data-dir <dir>', 'data directory (default: <workspace>/.svc; env SVC_DATA_DIR)')
    .option('--config <file>', 'extra config file, above every other file')
    .option(
      '-c <key=value>',
      'override one config key (repeatable), e.g. -c options.max_steps=20',
      collect,
      [],
    )
    .showHelpAfterError('(run svc --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
      outputError: (s, write) => write(s.startsWith('error:') ? `svc: ${s.slice(7)}` : s),
    });

  registerToolCommands(program, ctx, allTools);
  for (const register of registrars) register(program, ctx);
  // Set after the subcommands exist so they keep refusing excess arguments (commander copies the
  // setting to commands created later): only the root takes them, to name an unknown command.
  program.allowExcessArguments(true);

  try {
    await program.parseAsync(argv, { from: 'user' });
    return ctx.exitCode ?? 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are "errors" in commander's exitOverride world.
      if (
        error.code === 'commander.helpDisplayed' ||
        error.code === 'commander.version' ||
        error.code === 'commander.help'
      )
        return 0;
      return 2;
    }
    const e = toSvcError(error);
    const message = app ? app.redactor.string(e.message) : e.message;
    io.stderr.write(`svc: ${message}\n`);
    if (io.env.SVC_DEBUG === '1') io.stderr.write(`${(e.cause as Error | undefined)?.stack ?? e.stack}\n`);
    if (e.code === 'internal') app?.log.error('command failed', { argv, error: e.cause ?? e });
    return SvcError.is(error) ? e.exitCode : 1;
  } finally {
    if (app && !ctx.keepAlive) await app.close();
  }
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
