/**
 * A FIFO swapped in between a stat and a read, for the readers that once checked a path with
 * `statSync` and then read it with `readFileSync`. A test file mocks `node:fs` with `swappedFs`:
 * `statSync` of a path in `swapped` answers what a small regular file would (the stat ran before the
 * swap), while the path is a FIFO (what the read finds). A reader that opens it for a blocking read
 * stops svc's whole process until a writer comes: the rescuer is that writer, a child process that
 * after a delay opens the FIFO and writes to it, again and again (one blocked reader each time), so
 * a test of a reader that still blocks fails (late, with what the writer wrote) rather than hanging.
 * A reader that never waited on the FIFO leaves the rescuer still waiting to open it: `rescued()`
 * false.
 * @module
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import type * as fs from 'node:fs';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

/** Paths whose stat says "a small regular file" though a FIFO is there. */
export const swapped = new Set<string>();

/** `node:fs` with `statSync` answering for the paths in `swapped` as for a regular file. */
export function swappedFs(actual: typeof fs): typeof fs {
  const statSync = ((path: fs.PathLike, options?: fs.StatSyncOptions) =>
    swapped.has(String(path))
      ? actual.statSync(actual.realpathSync('/etc/hostname'))
      : actual.statSync(path, options)) as typeof fs.statSync;
  return { ...actual, statSync, default: { ...actual, statSync } } as typeof fs;
}

/** How long the rescuer waits before it opens the FIFO for writing (never reached by a fixed reader). */
const RESCUE_AFTER_MS = 8000;

export interface Rescuer {
  /** Whether the rescuer got to write: something opened the FIFO for a blocking read. */
  rescued(): boolean;
  stop(): void;
}

/** Make a FIFO at `path`, listed in `swapped`, with a rescuer ready to unblock a reader, stopped when the test ends. */
export function plantSwappedFifo(path: string): Rescuer {
  execFileSync('mkfifo', [path]);
  swapped.add(path);
  // Written once the FIFO took the rescuer's bytes: a file, so the check needs no event loop turn.
  const dir = mkdtempSync(join(tmpdir(), 'svc-fifo-rescue-'));
  const mark = join(dir, 'rescued');
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '-e',
      `const fs = require('node:fs');
       const rescue = () => {
         fs.writeFileSync(process.argv[1], 'rescued');
         fs.writeFileSync(process.argv[2], '');
         setImmediate(rescue);
       };
       setTimeout(rescue, ${RESCUE_AFTER_MS});`,
      path,
      mark,
    ],
    { stdio: 'ignore' },
  );
  const rescuer: Rescuer = {
    rescued: () => existsSync(mark),
    stop() {
      swapped.delete(path);
      if (child.exitCode === null && child.signalCode === null && child.pid)
        process.kill(child.pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // Stopped when the test ends, whatever its outcome (the FIFO's writer, its mark, the swap).
  onTestFinished(() => rescuer.stop());
  return rescuer;
}
