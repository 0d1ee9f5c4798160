/**
 * A process that starts a ripgrep which never ends by itself (a FIFO as a `.gitignore`, the FIFO
 * check off), prints its pid, and then exits (`exit`, the default) or waits to be SIGKILLed
 * (`stay`): rg-fifo-stall.test.ts checks that no ripgrep outlives it either way. Staying, it
 * prints its own pid first (`unrun` runs it in a process of its own): `<pid>;<rg pids>`.
 */
import { runningRg, runRg } from '../../src/workspace/ripgrep';

const stay = process.argv[3] === 'stay';
void runRg(['--files', '.'], { cwd: process.argv[2], timeLimitMs: 600_000, fifoCheckMs: 0 }).catch(() => {});
const wait = setInterval(() => {
  const pids = runningRg();
  if (!pids.length) return;
  clearInterval(wait);
  process.stdout.write(`${stay ? `${process.pid};` : ''}${pids.join(',')}\n`, () => {
    if (!stay) process.exit(0);
  });
}, 20);
// Held open when staying: the test's SIGKILL ends it (and its own timer, at worst).
if (stay) setTimeout(() => process.exit(1), 60_000);
