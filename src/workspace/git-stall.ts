/**
 * Seeing svc's git call stopped in `open` on a FIFO (a named pipe): git waits there until a writer
 * comes, which none does. A command the agent runs can put one wherever git reads a file (a
 * `.gitignore` or `.gitattributes` in any directory, a loose ref, a rebase's state files), more
 * places than a check before the call can cover, and each held svc's checkpoint or readout until
 * its timeout (found by probing). On Linux `/proc/<pid>/wchan` names where a sleeping process
 * waits, `wait_for_partner` for a FIFO's `open`; elsewhere (no /proc, a kernel that hides it)
 * nothing is seen and the call's timeout stops git.
 * @module
 */
import { readFile } from 'node:fs/promises';

/** Where the kernel holds a process opening a FIFO that has no other end. */
const FIFO_WAIT = 'wait_for_partner';

/**
 * Calls `onBlocked` once when `pid` (or a process it started) has been seen waiting to open a FIFO
 * twice in a row, `everyMs` apart. Returns the function that stops watching.
 */
export function watchFifoWait(pid: number | undefined, onBlocked: () => void, everyMs = 500): () => void {
  if (pid === undefined || process.platform !== 'linux') return () => {};
  let seen = 0;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    waitingOnFifo(pid, 2)
      .then((waiting) => {
        seen = waiting ? seen + 1 : 0;
        if (seen >= 2) {
          clearInterval(timer);
          onBlocked();
        }
      })
      .finally(() => {
        busy = false;
      });
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** `pid`, or one of its children `depth` levels down, waits to open a FIFO. */
async function waitingOnFifo(pid: number, depth: number): Promise<boolean> {
  const wchan = await readFile(`/proc/${pid}/wchan`, 'utf8').catch(() => '');
  if (wchan.trim() === FIFO_WAIT) return true;
  if (depth === 0) return false;
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
  for (const child of children.split(' ').filter(Boolean)) {
    if (await waitingOnFifo(Number(child), depth - 1)) return true;
  }
  return false;
}
