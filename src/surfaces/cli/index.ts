/**
 * The CLI: a commander program built from the registry's `cli` bindings plus hand-written
 * command families. Exit codes: 0 success, 1 runtime failure, 2 usage or config error. Errors are
 * one stderr line (`svc: …`); a stack only with SVC_DEBUG=1.
 * @module
 */
import { Command, CommanderError, Option } from 'commander';
import type { App, AppOptions } from '../../app';
import { SvcError, toSvcError } from '../../errors';
import { allTools } from '../../tools/index';
import { printable, safeTerminalText } from '../../util/terminal-text';
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
          workspaceTrust: {
            ...(g.trustWorkspace ? { decision: 'trust' as const } : {}),
            ...options.appOptions?.workspaceTrust,
            ...extra.workspaceTrust,
          },
        });
        warnDroppedKeys(app, io);
        return app;
      })();
      return appPromise;
    },
    // Human text on a terminal shows what the model, a command, a file name or a peer wrote, and
    // none of their escape sequences acts on the terminal (JSON and piped output stay exact).
    out: (text) => {
      const line = text.endsWith('\n') ? text : `${text}\n`;
      io.stdout.write(io.stdout.isTTY ? safeTerminalText(line) : line);
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
    .option(
      '--trust-workspace',
      "use this workspace's config keys that run commands, loosen permissions or name remote endpoints, for this invocation (env SVC_TRUST_WORKSPACE=1; svc trust remembers it)",
    )
    .showHelpAfterError('(run svc --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
      outputError: (s, write) => write(s.startsWith('error:') ? `svc: ${s.slice(7)}` : s),
    });

  registerToolCommands(program, ctx, allTools, parsedCommandWord(argv));
  for (const register of registrars) register(program, ctx);
  pointAtOwnHelp(program);
  // Set after the subcommands exist so they keep refusing excess arguments (commander copies the
  // setting to commands created later): only the root takes them, to name an unknown command.
  program.allowExcessArguments(true);

  try {
    // Before commander: `svc <typo> --help` would print the top-level help and exit 0.
    const unknown = unknownCommand(program, argv);
    if (unknown) {
      io.stderr.write(`svc: ${unknown}\n`);
      return 2;
    }
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
    io.stderr.write(`svc: ${safeTerminalText(message)}\n`);
    if (io.env.SVC_DEBUG === '1') io.stderr.write(`${(e.cause as Error | undefined)?.stack ?? e.stack}\n`);
    if (e.code === 'internal') app?.log.error('command failed', { argv, error: e.cause ?? e });
    return SvcError.is(error) ? e.exitCode : 1;
  } finally {
    if (app && !ctx.keepAlive) await app.close();
  }
}

/** Root options that take a value as the next word. */
const ROOT_VALUE_OPTIONS = new Set(['--cwd', '--data-dir', '--config', '-c']);

/**
 * The first command word of `argv` (after the root's options), when commander will parse that
 * command alone; undefined when it may show help or the whole command list (no command, `help`,
 * or a help flag before the command).
 */
export function parsedCommandWord(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i];
    if (word === '--') return undefined;
    if (word.startsWith('-')) {
      if (word === '-h' || word === '--help') return undefined;
      if (ROOT_VALUE_OPTIONS.has(word)) i++;
      continue;
    }
    return word === 'help' ? undefined : word;
  }
  return undefined;
}

/**
 * The error for a command word that names no command (`svc sesion list`, `svc session lst
 * --help`), with the nearest known one; undefined when the words name commands (or reach a
 * command's own arguments).
 */
export function unknownCommand(program: Command, argv: readonly string[]): string | undefined {
  let command = program;
  const path: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i];
    if (word === '--') return undefined;
    if (word.startsWith('-')) {
      // Only the root's own options are skipped; after a subcommand, options end the walk.
      if (command !== program) return undefined;
      if (ROOT_VALUE_OPTIONS.has(word)) i++;
      continue;
    }
    const subcommands = command.commands;
    if (subcommands.length === 0) return undefined;
    const next = subcommands.find((c) => c.name() === word || c.aliases().includes(word));
    if (next) {
      command = next;
      path.push(word);
      continue;
    }
    // A command with subcommands that also takes arguments: the word is an argument.
    if (command !== program && command.registeredArguments.length > 0) return undefined;
    const names = subcommands.map((c) => c.name()).filter((n) => n !== 'help');
    const nearest = nearestName(word, names);
    const where = ['svc', ...path].join(' ');
    return (
      `unknown command '${[...path, word].join(' ')}'` +
      (nearest ? `; did you mean '${[...path, nearest].join(' ')}'?` : '') +
      ` (${where} --help lists the commands)`
    );
  }
  return undefined;
}

/**
 * A subcommand's usage error points at that command's help (`svc run --help`), not the top-level
 * one, which does not list its options (found by probing).
 */
function pointAtOwnHelp(command: Command, path: string[] = []): void {
  for (const sub of command.commands) {
    const own = [...path, sub.name()];
    sub.showHelpAfterError(`(run svc ${own.join(' ')} --help for usage)`);
    formatAsJson(sub);
    pointAtOwnHelp(sub, own);
  }
}

/**
 * A command with `--json` and no output option of its own (`doctor`, `trust`, `auth …`) takes
 * `--format json` as the same, as the tool commands do (docs/cli.md; found by probing: `svc
 * doctor --format json` was an unknown option).
 */
function formatAsJson(command: Command): void {
  const has = (flag: string) => command.options.some((option) => option.long === flag);
  if (!has('--json') || has('--format') || has('--output')) return;
  command.addOption(
    new Option('--format <format>', 'output format (json: the same as --json)').choices(['text', 'json']),
  );
  command.hook('preAction', (_, action) => {
    if (action.getOptionValue('format') === 'json') action.setOptionValue('json', true);
  });
}

/**
 * The known name closest to `word`: edits (a swap of two neighbours is one) at most a third of its
 * length, at least 1. At least 2 suggested `logs` for `bogus` (found by probing).
 */
function nearestName(word: string, names: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(word.length / 3)) + 1;
  for (const name of names) {
    const d = name.startsWith(word) && word.length >= 3 ? 1 : editDistance(word, name);
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  return best;
}

/** Insertions, deletions, substitutions and swaps of two neighbours (optimal string alignment). */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j] + 1,
        current[j - 1] + 1,
        previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        current[j] = Math.min(current[j], before[j - 2] + 1);
    }
    before = previous;
    previous = current;
  }
  return previous[b.length];
}

/**
 * A headless surface says on stderr (stdout may be a protocol) what the gate did with an untrusted
 * workspace's risky keys: under "require" which it ignored; under "ask" (the TUI asks; headless
 * runs keep them) which it is using, so they are never used unannounced. Of the other config
 * warnings only `svc run` prints the unknown keys (commands/run.ts).
 */
function warnDroppedKeys(app: App, io: CliIo) {
  const trust = app.loaded.trust;
  if (!trust || trust.trusted || trust.ask) return;
  // Key names come from the workspace's file: each on one line, control characters shown (a `\r`
  // in a table name would otherwise start a made-up line of svc's own).
  const names = (keys: { key: string }[]) => {
    const shown = keys.slice(0, 6).map((k) => printable(k.key, 120));
    return keys.length > 6 ? `${shown.join(', ')} and ${keys.length - 6} more` : shown.join(', ');
  };
  const workspace = printable(trust.workspace);
  if (trust.mode === 'require' && trust.dropped.length) {
    io.stderr.write(
      safeTerminalText(
        `svc: warning: workspace ${workspace} is not trusted (security.workspace_trust = "require"): ignored ${names(trust.dropped)} from its config; run \`svc trust ${workspace}\` (or pass --trust-workspace) to use them\n`,
      ),
    );
  } else if (trust.mode === 'ask' && trust.risky.length && !trust.dropped.length) {
    io.stderr.write(
      safeTerminalText(
        `svc: note: workspace ${workspace} is not trusted and its config sets ${names(trust.risky)} (commands, looser permissions or remote endpoints); a headless run uses them under security.workspace_trust = "ask": run \`svc trust ${workspace}\` to record that you trust it, or set [security] workspace_trust = "require" in your user config to ignore them\n`,
      ),
    );
  }
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
