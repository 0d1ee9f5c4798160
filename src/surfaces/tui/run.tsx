/**
 * Starting and stopping the terminal UI: Ink on the real terminal, colors off under NO_COLOR,
 * the kitty keyboard protocol when the terminal has it (so ctrl+enter is its own key), bracketed
 * paste (a paste arrives whole), an unfinished escape sequence held no longer than 4 KiB in front of
 * Ink (ui/stdin-guard.ts), logs to the log file only, and the terminal restored on exit, on a
 * signal and on a crash.
 * This module is loaded with `await import()` by the CLI: ink and react never load for other
 * commands.
 * @module
 */
import { spawn } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import chalk from 'chalk';
import { render } from 'ink';
import { SvcError } from '../../errors';
import type { Logger } from '../../log';
import { makeDirs } from '../../util/make-dirs';
import type { TuiClient } from './client';
import { loadHighlighter } from './render/highlight';
import { createChatController } from './state/chat-controller';
import { whenRunEnds } from './state/run-end';
import { type Dialog, type PromptHistoryStore, TuiApp } from './ui/app';
import { guardStdin } from './ui/stdin-guard';

const PASTE_ON = '\x1b[?2004h';
const PASTE_OFF = '\x1b[?2004l';

export interface RunTuiOptions {
  client: TuiClient;
  log: Logger;
  env: Record<string, string | undefined>;
  stdin: NodeJS.ReadStream;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  /** Open this session (else a new one starts with the first prompt). */
  sessionId?: string;
  /** Open the most recent session. */
  continueLast?: boolean;
  /** Prompt history file (local TUI). */
  historyFile?: string;
  /** argv prefix that runs this svc binary (for `svc auth …` from Manage Providers). */
  selfCommand?: string[];
  /** Checkpoint before each prompt (`tui.checkpoint_prompts`). */
  checkpoints?: boolean;
  /** Called when a run has ended and the TUI waits for the human (the local TUI trims its heap). */
  onRunEnd?: () => void;
  /** Called once the TUI has started: first frame drawn, grammars loaded (the local TUI trims its heap). */
  onStarted?: () => void;
}

export async function runTui(options: RunTuiOptions): Promise<void> {
  const { stdin, stdout, stderr, log } = options;
  if (!stdin.isTTY || !stdout.isTTY) {
    throw new SvcError(
      'invalid_input',
      'the terminal UI needs an interactive terminal; use svc run "<prompt>" for headless work (svc --help lists commands)',
    );
  }
  if (options.env.NO_COLOR) chalk.level = 0;
  const highlighter = loadHighlighter();

  const controller = createChatController(options.client, { checkpoints: options.checkpoints });
  const stopWatchingRuns = options.onRunEnd ? whenRunEnds(controller, options.onRunEnd) : undefined;
  let sessionId = options.sessionId;
  if (!sessionId && options.continueLast)
    sessionId = (await options.client.listSessions({ limit: 1 }))[0]?.id;
  if (sessionId) await controller.open(sessionId);

  const history = options.historyFile ? fileHistory(options.historyFile) : undefined;
  const info = options.client.info();
  log.info('tui started', { transport: info.transport, target: info.target, session_id: sessionId ?? null });

  let unmount: (() => void) | undefined;
  const onFatal = (error: unknown) => {
    log.error('tui crashed', { error });
    try {
      unmount?.();
    } finally {
      // Ink restores raw mode and the cursor on unmount; make sure of the cursor and keyboard mode.
      stdout.write(`\x1b[?25h\x1b[<u${PASTE_OFF}`);
      stderr.write(
        `svc: the terminal UI stopped: ${error instanceof Error ? error.message : String(error)} (details in the log)\n`,
      );
      process.exit(1);
    }
  };
  const onSignal = () => unmount?.();
  process.on('uncaughtException', onFatal);
  process.on('unhandledRejection', onFatal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  // Ink holds an unfinished escape sequence no longer than 4 KiB (ui/stdin-guard.ts).
  const unguard = guardStdin(stdin);

  try {
    let resume: Dialog | undefined;
    let first = true;
    for (;;) {
      let external: string | undefined;
      const instance = render(
        <TuiApp
          controller={controller}
          history={history}
          onboarding={first && options.client.info().transport === 'local'}
          initialDialog={resume}
          clearOnRedraw
          runExternal={
            options.selfCommand
              ? async (command) => {
                  external = command;
                  instance.unmount();
                }
              : undefined
          }
        />,
        {
          stdin,
          stdout,
          stderr,
          exitOnCtrlC: false,
          patchConsole: false,
          maxFps: 30,
          kittyKeyboard: { mode: 'auto', flags: ['disambiguateEscapeCodes'] },
        },
      );
      unmount = () => instance.unmount();
      // Bracketed paste: a paste comes marked, and whole, to the prompt (ui/key-input.tsx).
      stdout.write(PASTE_ON);
      if (first && options.onStarted) void highlighter.then(options.onStarted);
      first = false;
      await instance.waitUntilExit().finally(() => stdout.write(PASTE_OFF));
      if (!external) break;
      await runInTerminal(external, options.selfCommand!, stdin, log);
      resume = { kind: 'providers' };
    }
  } finally {
    unguard();
    process.off('uncaughtException', onFatal);
    process.off('unhandledRejection', onFatal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
    stopWatchingRuns?.();
    controller.dispose();
    await options.client.close();
    log.info('tui stopped');
  }
}

/** `svc auth …` in the foreground with the terminal handed over, then back to the TUI. */
async function runInTerminal(command: string, self: string[], stdin: NodeJS.ReadStream, log: Logger) {
  const words = command.trim().split(/\s+/);
  const argv = words[0] === 'svc' ? [...self, ...words.slice(1)] : words;
  log.info('tui runs a command in the terminal', { command: words.slice(0, 3).join(' ') });
  if (stdin.isTTY) stdin.setRawMode(false);
  await new Promise<void>((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit' });
    child.on('error', (error) => {
      log.warn('command failed to start', { error });
      resolve();
    });
    child.on('close', () => resolve());
  });
}

/** The longest prompt the history file keeps (characters). */
const HISTORY_ENTRY_MAX = 100_000;

function fileHistory(file: string): PromptHistoryStore {
  return {
    load() {
      try {
        return readFileSync(file, 'utf8')
          .split('\n')
          .filter(Boolean)
          .slice(-500)
          .flatMap((line) => {
            try {
              const value = JSON.parse(line);
              return typeof value === 'string' ? [value] : [];
            } catch {
              return [];
            }
          });
      } catch {
        return [];
      }
    },
    append(entry) {
      // A prompt with a big paste in it is recalled in this run only: the file stays quick to load.
      if (entry.length > HISTORY_ENTRY_MAX) return;
      try {
        makeDirs(dirname(file));
        appendFileSync(file, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
      } catch {
        // History is a convenience; a read-only data dir must not break the prompt.
      }
    },
  };
}
