/**
 * Child processes for the shell tools: each command runs in its own process group (so a timeout
 * or a cancel kills the command and everything it started), with stdout and stderr merged in
 * arrival order. Output is kept in memory up to a cap; past it the head and tail are kept and the
 * full output is spilled to a file in the data dir.
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { makeDirs } from '../util/make-dirs';
import { closeStdinFile, stdinFile } from '../util/stdin-file';

const KILL_GRACE_MS = 2_000;

/**
 * The most of one command's output its spill file keeps: a command printing without end (`yes`)
 * until its timeout would otherwise fill the disk (a pipe carries ≈ 1 GB/s).
 */
export const SPILL_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * Collects output: everything up to `maxBytes`, then head + tail in memory and all of it in
 * `spillPath`, up to `spillLimit` bytes (the file keeps the output's first `spillLimit` bytes).
 */
export class OutputCollector {
  /** The first `maxBytes` of the stream. */
  private prefix: Buffer[] = [];
  private prefixBytes = 0;
  /** The last bytes of the stream (at least `tailLimit` once that many arrived). */
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private readonly headLimit: number;
  private readonly tailLimit: number;
  private fd: number | undefined;
  private spilledBytes = 0;
  total = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly spillPath: () => string,
    private readonly spillLimit = SPILL_LIMIT_BYTES,
  ) {
    this.headLimit = Math.floor(maxBytes / 2);
    this.tailLimit = maxBytes - this.headLimit;
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.prefixBytes < this.maxBytes) {
      const room = this.maxBytes - this.prefixBytes;
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.prefix.push(part);
      this.prefixBytes += part.length;
    }
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    while (this.tail.length > 1 && this.tailBytes - this.tail[0].length >= this.tailLimit) {
      this.tailBytes -= this.tail.shift()!.length;
    }
    if (this.total > this.maxBytes) {
      if (this.fd === undefined) {
        const path = this.spillPath();
        makeDirs(dirname(path));
        this.fd = openSync(path, 'w');
        // Everything so far: the prefix, plus what of this chunk did not fit in it.
        const before = this.total - chunk.length;
        for (const b of this.prefix) this.spill(b);
        const written = Math.min(this.prefixBytes, this.total);
        if (written < this.total) this.spill(chunk.subarray(Math.max(0, written - before)));
      } else {
        this.spill(chunk);
      }
    }
  }

  private spill(chunk: Buffer): void {
    const room = this.spillLimit - this.spilledBytes;
    if (room <= 0 || this.fd === undefined) return;
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    writeSync(this.fd, part);
    this.spilledBytes += part.length;
  }

  /** Whether the spill file stopped short of the whole output (at `spillLimit`). */
  get spillCut(): boolean {
    return this.spilledBytes < this.total && this.fd !== undefined;
  }

  get spilled(): boolean {
    return this.fd !== undefined;
  }

  /** Close the spill file (if any) and render the kept output. */
  finish(): { text: string; truncated: boolean; omittedBytes: number } {
    if (this.fd === undefined) {
      return { text: Buffer.concat(this.prefix).toString('utf8'), truncated: false, omittedBytes: 0 };
    }
    const cut = this.spillCut;
    closeSync(this.fd);
    this.fd = undefined;
    const head = Buffer.concat(this.prefix).subarray(0, this.headLimit);
    let tail = Buffer.concat(this.tail);
    if (tail.length > this.tailLimit) tail = tail.subarray(tail.length - this.tailLimit);
    const omitted = this.total - head.length - tail.length;
    const file = cut ? `; the output file keeps only its first ${this.spilledBytes} bytes` : '';
    return {
      text: `${head.toString('utf8')}\n\n… [${omitted} bytes of output omitted${file}] …\n\n${tail.toString('utf8')}`,
      truncated: true,
      omittedBytes: omitted,
    };
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
    /** stdout and stderr, merged in arrival order; without it both are discarded. */
    onOutput?: (chunk: Buffer) => void;
    /** Written to the command's stdin, which is then closed; without it stdin is /dev/null. */
    stdin?: string;
    shell?: string;
    /** A wrapper the shell runs inside (the bwrap sandbox): `[bwrap, …args, '--']`. */
    prefix?: readonly string[];
  },
): SpawnedCommand {
  const shell = options.shell ?? '/bin/bash';
  // bash skips its startup files; /bin/sh (dash, for hooks) has no such options and reads none.
  const shellArgs = shell.endsWith('bash')
    ? [shell, '--noprofile', '--norc', '-c', script]
    : [shell, '-c', script];
  const argv = options.prefix?.length ? [...options.prefix, ...shellArgs] : shellArgs;
  const output = options.onOutput ? 'pipe' : 'ignore';
  // Input as a file, not a socket (../util/stdin-file.ts: bash would source ~/.bashrc).
  const input = options.stdin === undefined ? undefined : stdinFile(options.stdin);
  let child: ChildProcess;
  try {
    child = spawn(argv[0], argv.slice(1), {
      cwd: options.cwd,
      env: options.env as NodeJS.ProcessEnv,
      // A new process group: the kill reaches everything the command started.
      detached: true,
      stdio: [input ?? (options.stdin === undefined ? 'ignore' : 'pipe'), output, output],
    });
  } finally {
    closeStdinFile(input);
  }
  if (options.onOutput) {
    child.stdout?.on('data', options.onOutput);
    child.stderr?.on('data', options.onOutput);
  }
  if (options.stdin !== undefined && input === undefined) {
    // A command that does not read stdin closes the pipe early: that is not a failure.
    child.stdin?.on('error', () => {});
    child.stdin?.end(options.stdin);
  }
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

/** Kept output files (spills, job logs) older than this are removed when new ones are written. */
export const OUTPUT_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

const pruned = new Set<string>();

/** Remove files older than the retention from `dir`, once per directory per process. */
export function pruneOldFiles(dir: string, now = Date.now()): void {
  if (pruned.has(dir)) return;
  pruned.add(dir);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const path = join(dir, name);
    try {
      if (now - statSync(path).mtimeMs > OUTPUT_RETENTION_MS) rmSync(path, { force: true });
    } catch {
      // raced with another process: fine
    }
  }
}
