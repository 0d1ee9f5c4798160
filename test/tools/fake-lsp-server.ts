/**
 * The fake language server (test/fixtures/coding-tools/fake-lsp.mjs) as a `[lsp.fake]` entry for
 * `.ts` files: its every message logged, tagged to find its processes by, and its directory
 * writable in the command sandbox (the server runs there).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const FAKE_LSP = resolve(import.meta.dirname, '../fixtures/coding-tools/fake-lsp.mjs');

/** The server run with `flags(dir)`; `initializes`: how many starts it logged; `running`: a process of it is alive. */
export function fakeLspServer(flags: (dir: string) => string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-lsp-fake-'));
  const log = join(dir, 'methods.log');
  const tag = `--tag=${randomUUID()}`;
  const config = {
    lsp: {
      fake: {
        command: process.execPath,
        args: [FAKE_LSP, ...flags(dir), `--log=${log}`, tag],
        extensions: ['ts'],
      },
    },
    options: { lsp: { diagnostics_wait_seconds: 1 }, sandbox: { allow_write: [dir] } },
  };
  const initializes = () => {
    try {
      return readFileSync(log, 'utf8')
        .split('\n')
        .filter((m) => m === 'initialize').length;
    } catch {
      return 0;
    }
  };
  const running = () => {
    try {
      return execFileSync('pgrep', ['-f', '--', tag], { encoding: 'utf8' }).trim() !== '';
    } catch {
      return false;
    }
  };
  return { dir, config, initializes, running };
}
