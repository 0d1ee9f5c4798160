// strace over a running service for the statements harness's measured requests
// (`compatStatements` in ./statements-harness.mjs): `straced(args)` answers its `warmedUp` and
// `finished` hooks; `finished` answers the trace's text. Used by sse-syscalls.mjs and wire-writes.mjs.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** strace with `args` attached to every thread of the warmed-up service, until the requests are done. */
export function straced(name, args) {
  const out = join(tmpdir(), `svc-${name}-${process.pid}.txt`);
  let tracer;
  return {
    warmedUp: async (child) => {
      const tids = readdirSync(`/proc/${child.pid}/task`);
      tracer = spawn('strace', [...args, '-o', out, ...tids.flatMap((t) => ['-p', t])], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      // strace says "Process N attached" on stderr for each thread once it holds it.
      await new Promise((resolve) => {
        let seen = 0;
        tracer.stderr.on('data', (d) => {
          seen += String(d).split('attached').length - 1;
          if (seen >= tids.length) resolve();
        });
        setTimeout(resolve, 3000);
      });
    },
    finished: async () => {
      tracer.kill('SIGINT');
      await new Promise((resolve) => tracer.on('exit', resolve));
      const text = readFileSync(out, 'utf8');
      rmSync(out, { force: true });
      return text;
    },
  };
}
