/**
 * The fake language server (test/fixtures/coding-tools/fake-lsp.mjs) as a `[lsp.fake]` entry for
 * `.ts` files: its every message logged (the methods, and each message whole), tagged to find its
 * processes by, and its directory writable in the command sandbox (the server runs there).
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
  const messagesLog = join(dir, 'messages.jsonl');
  const tag = `--tag=${randomUUID()}`;
  const config = {
    lsp: {
      fake: {
        command: process.execPath,
        args: [FAKE_LSP, ...flags(dir), `--log=${log}`, `--messages=${messagesLog}`, tag],
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
  return { dir, config, initializes, running, ...receivedBy(messagesLog) };
}

/** What a fake server run with `--messages=<log>` read: its requests of a method, its cancels. */
export function receivedBy(messagesLog: string) {
  const received = (): { id?: number; method?: string; params?: any }[] => {
    try {
      return readFileSync(messagesLog, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line));
    } catch {
      return [];
    }
  };
  /** The ids of the requests of `method` it read, in order. */
  const requestIds = (method: string) =>
    received()
      .filter((m) => m.method === method && m.id !== undefined)
      .map((m) => m.id as number);
  /** The ids named by the `$/cancelRequest` notifications it read, in order. */
  const cancelled = () =>
    received()
      .filter((m) => m.method === '$/cancelRequest' && m.id === undefined)
      .map((m) => m.params?.id as number);
  return { requestIds, cancelled };
}
