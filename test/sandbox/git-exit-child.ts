/**
 * A process that starts a heavy git command (`diff`) through svc's git runner, with the fake git
 * of git-child-limits.test.ts first on PATH (it writes its pid to GIT_TEST_FAKE_PIDFILE and
 * sleeps), prints its own pid and waits to be SIGKILLed: the test checks the git dies with it.
 */
import { createGitRunner } from '../../src/workspace/git';

const [cwd, path] = process.argv.slice(2);
void createGitRunner(cwd!, { ...process.env, PATH: path }, { fifoCheckMs: 0 })
  .run(['diff'], { allowFail: true })
  .catch(() => {});
process.stdout.write(`${process.pid}\n`);
// Held open until the test's SIGKILL (its own timer ends it at worst).
setTimeout(() => process.exit(1), 60_000);
