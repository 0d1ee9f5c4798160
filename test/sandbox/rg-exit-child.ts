/**
 * A process that starts a ripgrep which never ends by itself (a FIFO as a `.gitignore`, the FIFO
 * check off), prints its pid, and exits: rg-fifo-stall.test.ts checks that no ripgrep outlives it.
 */
import { runningRg, runRg } from '../../src/workspace/ripgrep';

void runRg(['--files', '.'], { cwd: process.argv[2], timeLimitMs: 600_000, fifoCheckMs: 0 }).catch(() => {});
const wait = setInterval(() => {
  const pids = runningRg();
  if (!pids.length) return;
  clearInterval(wait);
  process.stdout.write(`${pids.join(',')}\n`, () => process.exit(0));
}, 20);
