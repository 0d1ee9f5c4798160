/** Git set-up shared by the tests of svc's own git (git-repo-pin, git-objects-fifo, git-fifo-stall). */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** `git <args>` in `cwd`, its stdout as text. */
export const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' });

/** A first commit holding `a.txt`. */
export function commitOne(ws: string): void {
  writeFileSync(join(ws, 'a.txt'), 'one\n');
  git(ws, 'add', '-A');
  git(ws, 'commit', '-q', '-m', 'one');
}
