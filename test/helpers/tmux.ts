/**
 * The built `svc` in a tmux pane of a private tmux server (-L), read with `capture-pane`: how the
 * TUI end-to-end tests meet the terminal UI the way a user does. Every wait polls the screen with
 * a bound; nothing waits a fixed time.
 * @module
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { trustWorkspace } from '../../src/config/trust';
import { BIN } from './run-bin';

export const hasTmux = spawnSync('tmux', ['-V']).status === 0;
export const STEP_MS = 60_000;

export interface TmuxPane {
  run(...args: string[]): string;
  screen(): string;
  /** The screen with the scrollback above it. */
  history(): string;
  /** Literal text, then (optionally) keys such as Enter or C-c. */
  type(text: string, ...keys: string[]): void;
  until(check: (screen: string) => boolean, what: string, timeoutMs?: number): Promise<string>;
  resize(columns: number, rows: number): void;
}

/**
 * Starts `svc <args>` in `cwd` at `columns`x`rows` with an empty HOME of its own and only PATH and
 * TERM from this environment (plus `env`). The pane and the tmux server go when the test ends.
 */
export function svcInTmux(options: {
  cwd: string;
  columns: number;
  rows: number;
  args?: string[];
  env?: Record<string, string>;
  /**
   * Trust `cwd` as `svc trust` does (config/trust.ts), for a test whose workspace config sets
   * keys that need trust but is not about the trust dialog.
   */
  trustWorkspace?: boolean;
}): TmuxPane & { home: string } {
  if (!hasTmux) throw new Error('tmux is required (apt-get install tmux)');
  const home = realpathSync(mkdtempSync(join(tmpdir(), 'svc-home-')));
  onTestFinished(() => rmSync(home, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }));
  if (options.trustWorkspace) trustWorkspace(join(home, '.config', 'svc'), options.cwd);
  const socket = `svc-t-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const run = (...args: string[]) =>
    execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
  const env = Object.entries({
    PATH: process.env.PATH ?? '',
    HOME: home,
    TERM: 'xterm-256color',
    ...options.env,
  })
    .map(([k, v]) => `${k}=${quote(v)}`)
    .join(' ');
  const command = [quote(process.execPath), quote(BIN), ...(options.args ?? []).map(quote)].join(' ');
  const script = [
    `cd ${quote(options.cwd)}`,
    `env -i ${env} ${command}`,
    'echo "svc-exit=$?"',
    'sleep 600',
  ].join('; ');
  run('new-session', '-d', '-s', 'svc', '-x', String(options.columns), '-y', String(options.rows), script);
  onTestFinished(() => {
    spawnSync('tmux', ['-L', socket, 'kill-server']);
  });
  const screen = () => run('capture-pane', '-p', '-t', 'svc');
  return {
    home,
    run,
    screen,
    history: () => run('capture-pane', '-p', '-S', '-', '-t', 'svc'),
    type(text, ...keys) {
      if (text) run('send-keys', '-t', 'svc', '-l', text);
      if (keys.length) run('send-keys', '-t', 'svc', ...keys);
    },
    async until(check, what, timeoutMs = STEP_MS) {
      const start = Date.now();
      let last = '';
      for (;;) {
        try {
          last = screen();
        } catch (error) {
          throw new Error(`tmux pane is gone while waiting for ${what}: ${(error as Error).message}`);
        }
        if (check(last)) return last;
        if (Date.now() - start > timeoutMs)
          throw new Error(`waited ${timeoutMs} ms for ${what}; last screen:\n${last}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    resize(columns, rows) {
      run('resize-window', '-t', 'svc', '-x', String(columns), '-y', String(rows));
    },
  };
}
