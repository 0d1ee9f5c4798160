/**
 * Child processes for the shell tools: each command runs in its own process group (so a timeout
 * or a cancel kills the command and everything it started), with stdout and stderr merged in
 * arrival order. Output is kept in memory up to a cap; past it the head and tail are kept and the
 * full output is spilled to a file in the data dir.
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

const KILL_GRACE_MS = 2_000;

/** Collects output: everything up to `maxBytes`, then head + tail in memory and all of it in `spillPath`. */
export class OutputCollector {
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private fd: number | undefined;
  total = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly spillPath: () => string,
  ) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.fd === undefined && this.headBytes + chunk.length <= this.maxBytes) {
      this.head.push(chunk);
      this.headBytes += chunk.length;
      return;
    }
    if (this.fd === undefined) {
      const path = this.spillPath();
      mkdirSync(dirname(path), { recursive: true });
      this.fd = openSync(path, 'w');
      for (const b of this.head) writeSync(this.fd, b);
      // Keep the first half as the head; the rest becomes the start of the tail.
      const all = Buffer.concat(this.head);
      const half = Math.floor(this.maxBytes / 2);
      this.head = [all.subarray(0, half)];
      this.headBytes = half;
      this.tail = [all.subarray(half)];
      this.tailBytes = all.length - half;
    }
    writeSync(this.fd, chunk);
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    const keep = this.maxBytes - this.headBytes;
    while (this.tailBytes - this.tail[0].length >= keep) this.tailBytes -= this.tail.shift()!.length;
  }

  get spilled(): boolean {
    return this.fd !== undefined;
  }

  /** Close the spill file (if any) and render the kept output. */
  finish(): { text: string; truncated: boolean; omittedBytes: number } {
    if (this.fd !== undefined) {
      closeSync(this.fd);
      const head = Buffer.concat(this.head).toString('utf8');
      let tail = Buffer.concat(this.tail);
      const keep = this.maxBytes - this.headBytes;
      if (tail.length > keep) tail = tail.subarray(tail.length - keep);
      const omitted = this.total - this.headBytes - tail.length;
      return {
        text: `${head}\n\n… [${omitted} bytes of output omitted] …\n\n${tail.toString('utf8')}`,
        truncated: true,
        omittedBytes: omitted,
      };
    }
    return { text: Buffer.concat(this.head).toString('utf8'), truncated: false, omittedBytes: 0 };
  }
}

export interface SpawnedCommand {
  child: ChildProcess;
  /** Resolves with the exit code (null when killed by a signal) and the signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM the whole process group, SIGKILL it after a grace period. Resolves on exit. */
  kill(): Promise<void>;
  /** SIGKILL whatever is left in the process group (after the shell itself exited). */
  reap(): void;
}

export function spawnShell(
  script: string,
  options: {
    cwd: string;
    env: Record<string, string | undefined>;
    onOutput: (chunk: Buffer) => void;
    shell?: string;
  },
): SpawnedCommand {
  const child = spawn(options.shell ?? '/bin/bash', ['--noprofile', '--norc', '-c', script], {
    cwd: options.cwd,
    env: options.env as NodeJS.ProcessEnv,
    // A new process group: the kill reaches everything the command started.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', options.onOutput);
  child.stderr?.on('data', options.onOutput);
  let done = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('error', () => {
      if (done) return;
      done = true;
      resolve({ code: 127, signal: null });
    });
    let closeTimer: NodeJS.Timeout | undefined;
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (done) return;
      done = true;
      if (closeTimer) clearTimeout(closeTimer);
      resolve({ code, signal });
    };
    child.on('close', finish);
    // A process the command left running in the background can hold the pipes open after the
    // shell exits: do not wait for it (the caller reaps the group).
    child.on('exit', (code, signal) => {
      closeTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish(code, signal);
      }, 250);
    });
  });
  const signalGroup = (signal: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // the group is already gone
    }
  };
  return {
    child,
    exited,
    reap: () => signalGroup('SIGKILL'),
    async kill() {
      if (done) return;
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), KILL_GRACE_MS);
      try {
        await exited;
      } finally {
        clearTimeout(timer);
        // Stragglers that ignored SIGTERM and outlived the shell.
        signalGroup('SIGKILL');
      }
    },
  };
}
