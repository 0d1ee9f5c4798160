/**
 * What every CLI command gets: injected I/O, the global options, and the App (built once, on
 * first use, so `svc --help` and `svc models` never open a database they do not need).
 * @module
 */
import type { Command } from 'commander';
import type { App, AppOptions } from '../../app';

export interface CliIo {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
  env: Record<string, string | undefined>;
  cwd: string;
  /** Cancellation for the whole invocation (SIGINT in main.ts). */
  signal?: AbortSignal;
}

export interface GlobalOptions {
  cwd?: string;
  dataDir?: string;
  config?: string;
  c?: string[];
  trustWorkspace?: boolean;
}

export interface CliContext {
  io: CliIo;
  program: Command;
  globals(): GlobalOptions;
  /** The app for this invocation, created on first call. */
  app(extra?: Partial<AppOptions>): Promise<App>;
  /** Print a line to stdout. */
  out(text: string): void;
  /** Print JSON (2-space, newline-terminated) to stdout. */
  json(value: unknown): void;
  /** Set by a command that wants a specific exit code without throwing. */
  exitCode?: number;
  /** Set by long-running commands (servers, TUI) that close the app themselves. */
  keepAlive?: boolean;
}

/** A hand-written command family registers itself on the program. */
export type CliRegistrar = (program: Command, ctx: CliContext) => void;
