#!/usr/bin/env node
/**
 * The `svc` binary. `--version` answers without loading anything else (cold start budget); every
 * other command loads the CLI lazily.
 * @module
 */
import { opensTui, startsService } from './surfaces/cli/argv-peek';
import { VERSION } from './version';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    process.stdout.write(`${VERSION}\n`);
    return;
  }
  // A service holds glibc's mmap threshold (util/malloc.ts), before anything else loads.
  if (startsService(argv)) (await import('./util/malloc')).holdMmapThreshold(process.env);
  // The TUI holds V8's young generation at its start size, set before anything loads (util/heap.ts).
  if (opensTui(argv)) (await import('./util/heap')).holdYoungGeneration(process.env);
  // A reader that goes away (`svc run --output stream-json | head`) is not an error: stop quietly.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw error;
    });
  }
  const controller = new AbortController();
  const onSignal = () => controller.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  const { runCli } = await import('./surfaces/cli/index');
  const code = await runCli(argv, {
    stdout: process.stdout,
    stderr: process.stderr,
    // On first use: creating process.stdin (a stream over /dev/null, a pipe or a TTY) is ~2 ms of
    // CPU that `svc run "<prompt>"` never needs (issue 17).
    get stdin() {
      return process.stdin;
    },
    env: process.env,
    cwd: process.cwd(),
    signal: controller.signal,
  });
  process.removeListener('SIGINT', onSignal);
  process.exitCode = code;
}

main().catch((error: unknown) => {
  process.stderr.write(`svc: ${error instanceof Error ? error.message : String(error)}\n`);
  if (process.env.SVC_DEBUG === '1' && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  process.exitCode = 1;
});
