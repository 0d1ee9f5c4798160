/**
 * Seeing a helper process svc runs outside the sandbox (its git, ripgrep) stopped in `open` on a
 * FIFO (a named pipe): it waits there until a writer comes, which none does. A command the agent
 * runs can put one wherever git or ripgrep reads a file (a `.gitignore` or `.gitattributes` in any
 * directory, a loose ref, a rebase's state files), more places than a check before the call can
 * cover, and each held svc's checkpoint, readout or search until its timeout (found by probing).
 * On Linux `/proc/<pid>/task/<tid>/wchan` names where a sleeping thread waits, `wait_for_partner`
 * for a FIFO's `open` (ripgrep opens ignore files on its walker threads, not the main one);
 * elsewhere (no /proc, a kernel that hides it) nothing is seen and the call's timeout stops it.
 * @module
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Where the kernel holds a process opening a FIFO that has no other end. */
const FIFO_WAIT = 'wait_for_partner';

/**
 * Calls `onBlocked` once when `pid` (one of its threads, or a process it started) has been seen
 * waiting to open a FIFO twice in a row, `everyMs` apart. Returns the function that stops watching.
 */
export function watchFifoWait(pid: number | undefined, onBlocked: () => void, everyMs = 500): () => void {
  if (pid === undefined || process.platform !== 'linux') return () => {};
  let seen = 0;
  let busy = false;
  let stopped = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    waitingOnFifo(pid, 2)
      .then((waiting) => {
        seen = waiting ? seen + 1 : 0;
        if (seen >= 2 && !stopped) {
          stopped = true;
          clearInterval(timer);
          onBlocked();
        }
      })
      .finally(() => {
        busy = false;
      });
  }, everyMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

/** A thread of `pid`, or of one of its children `depth` levels down, waits to open a FIFO. */
async function waitingOnFifo(pid: number, depth: number): Promise<boolean> {
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  for (const tid of tasks) {
    const wchan = await readFile(`/proc/${pid}/task/${tid}/wchan`, 'utf8').catch(() => '');
    if (wchan.trim() === FIFO_WAIT) return true;
  }
  if (depth === 0) return false;
  for (const tid of tasks) {
    const children = await readFile(`/proc/${pid}/task/${tid}/children`, 'utf8').catch(() => '');
    for (const child of children.split(' ').filter(Boolean)) {
      if (await waitingOnFifo(Number(child), depth - 1)) return true;
    }
  }
  return false;
}

/** The most FIFOs named, and directory entries looked at, when finding which one stopped a walk. */
const FIND_LIMITS = { fifos: 5, entries: 100_000 } as const;

/**
 * FIFOs under `dir` (relative to it, sorted), for a message saying which one stopped a process:
 * directory entries' types only (nothing is opened but directories, symlinks are not followed), at
 * most `FIND_LIMITS.entries` of them looked at, and the first `FIND_LIMITS.fifos` found named.
 */
export async function findFifos(dir: string): Promise<string[]> {
  const found: string[] = [];
  const queue = [''];
  let looked = 0;
  while (queue.length && found.length < FIND_LIMITS.fifos && looked < FIND_LIMITS.entries) {
    const rel = queue.shift() as string;
    const entries = await readdir(join(dir, rel), { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      looked++;
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isFIFO()) found.push(path);
      else if (entry.isDirectory()) queue.push(path);
    }
  }
  return found.slice(0, FIND_LIMITS.fifos).sort();
}
