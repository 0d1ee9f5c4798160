/**
 * `svc service start http` runs again with glibc's malloc tuned (issue 17 item 4, src/util/malloc.ts):
 * on Node 22.15 and later (`process.execve`) the listening process is the one that was spawned
 * (same pid) and was started with GLIBC_TUNABLES holding the mmap threshold; on Node 20 it was not
 * run again. An operator's own malloc tunable and SVC_MALLOC_MMAP_THRESHOLD_KB=0 leave it alone.
 * Through the installed command (bin/svc.cjs) the decision is made before the ESM bundle loads.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { spawnServer } from './spawn-server';

const TOKEN = 'malloc-secret-token-5678';
const canReexec = typeof (process as { execve?: unknown }).execve === 'function';

/** The environment the process was started with (execve's), from /proc. */
function startEnv(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
}

async function started(env: Record<string, string> = {}): Promise<{ environ: string[]; stderr: string }> {
  const ws = tmpWorkspace();
  const server = spawnServer(['service', 'start', 'http', '--port', '0', '--token', TOKEN], {
    cwd: ws,
    env: { HOME: join(ws, '.home'), XDG_CONFIG_HOME: join(ws, '.home', '.config'), ...env },
  });
  const url = await server.ready;
  expect((await fetch(`${url}/healthz`)).status).toBe(200);
  const environ = startEnv(server.child.pid as number);
  server.child.kill('SIGTERM');
  expect(await server.exit).toBe(0);
  return { environ, stderr: server.stderr() };
}

describe.runIf(process.platform === 'linux')('the service with glibc malloc tuned', () => {
  it('COMPAT-PERF-502: the spawned process itself listens, started again with the mmap threshold held (Node 22.15+), no warning', async () => {
    const { environ, stderr } = await started();
    const tunables = environ.filter((e) => e.startsWith('GLIBC_TUNABLES='));
    expect(tunables).toEqual(canReexec ? ['GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072'] : []);
    expect(stderr).not.toMatch(/warning/i);
  });

  it('COMPAT-PERF-506: through bin/svc.cjs the service runs again before the ESM bundle loads, once', async () => {
    // A preload (NODE_OPTIONS, kept across the re-exec) logs each process image as it starts and at
    // its first tick. bin/svc.cjs imports dist/main.js asynchronously, so an image that loaded the
    // bundle before running again would reach a tick; one replaced from bin/svc.cjs's own
    // synchronous code (dist/preflight.cjs) never does.
    const ws = tmpWorkspace();
    const log = join(ws, 'images.log');
    const preload = join(ws, 'images.cjs');
    writeFileSync(
      preload,
      [
        "const fs = require('node:fs');",
        "const image = fs.readFileSync('/proc/self/environ', 'utf8').includes('SVC_GLIBC_TUNABLES_BEFORE=') ? 'again' : 'first';",
        'const note = (what) => fs.appendFileSync(process.env.IMAGES_LOG, `${process.pid} ${image} ${what}\\n`);',
        "note('start');",
        "process.nextTick(() => note('tick'));",
      ].join('\n'),
    );
    const server = spawnServer(['service', 'start', 'http', '--port', '0', '--token', TOKEN], {
      cwd: ws,
      bin: resolve(__dirname, '../../bin/svc.cjs'),
      env: { NODE_OPTIONS: `--require ${preload}`, IMAGES_LOG: log },
    });
    const url = await server.ready;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);
    const pid = server.child.pid as number;
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines).toEqual(
      canReexec
        ? [`${pid} first start`, `${pid} again start`, `${pid} again tick`]
        : [`${pid} first start`, `${pid} first tick`],
    );
  });

  it("COMPAT-PERF-503: an operator's own malloc tunable, or SVC_MALLOC_MMAP_THRESHOLD_KB=0, is not run again", async () => {
    const own = await started({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' });
    expect(own.environ.filter((e) => e.startsWith('GLIBC_TUNABLES='))).toEqual([
      'GLIBC_TUNABLES=glibc.malloc.arena_max=2',
    ]);
    expect(own.environ.some((e) => e.startsWith('SVC_GLIBC_TUNABLES_BEFORE='))).toBe(false);
    const off = await started({ SVC_MALLOC_MMAP_THRESHOLD_KB: '0' });
    expect(off.environ.some((e) => e.startsWith('GLIBC_TUNABLES='))).toBe(false);
  });
});
