/**
 * glibc's malloc set up for svc's long-lived services (issue 17, item 4: an idle service ≤ 120 MB
 * RSS a minute after 1,000 compat requests).
 *
 * glibc gives an allocation of at least its mmap threshold a mapping of its own, unmapped when it
 * is freed; smaller ones come from its arenas, whose freed memory mostly stays resident (only the
 * arena's top is handed back). The threshold starts at 128 KB, but glibc raises it to the size of
 * every mapped block that is freed (up to 32 MB), so once V8's compilers have freed their large
 * zones (malloc'ed, ≈ 50 MB at the peak on Node 24 under the load), the blocks of that size come
 * from the arenas and stay there: on Node 24 the idle service kept ≈ 49 MB in malloc's arenas
 * (Node 20 ≈ 27). Held at 128 KB (`GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072`, which also
 * turns the raising off) the idle service fell from 140–142 to 117–154 MB (median 125) on Node 24,
 * from 101–102 to 93–94 on Node 22, at no CPU cost measured; 32 KB gave 106–108 MB on Node 24 but
 * ≈ 1 ms more CPU a compat request (docs/performance.md).
 *
 * glibc reads its tunables when the process starts, so the service runs again with them:
 * `process.execve` (Node 22.15 and later) replaces the process image, same pid, before anything
 * else loads (≈ one more Node start-up, for `svc service start` only). The new process puts
 * GLIBC_TUNABLES back as it was, so the commands it spawns do not inherit it. Nothing is done on
 * Node 20 (no execve; its idle service is ≈ 95 MB), off glibc (musl ignores the variable), when
 * the operator set a malloc tunable of their own, or with SVC_MALLOC_MMAP_THRESHOLD_KB=0 (another
 * positive value sets the threshold).
 * @module
 */

import { glibcLoaded } from './glibc';
import { settingFromEnv } from './heap';

const MMAP_THRESHOLD_KB = 128;
/** Set for the re-executed process: GLIBC_TUNABLES as it was before (empty: it was unset). */
const BEFORE = 'SVC_GLIBC_TUNABLES_BEFORE';

/** The environment to run again with, or undefined when there is nothing to tune. */
export function tunedMallocEnv(
  env: NodeJS.ProcessEnv,
  hasGlibc: () => boolean,
): NodeJS.ProcessEnv | undefined {
  if (env[BEFORE] !== undefined) return undefined;
  const own = env.GLIBC_TUNABLES ?? '';
  if (own.includes('glibc.malloc.')) return undefined;
  const kb = settingFromEnv(env.SVC_MALLOC_MMAP_THRESHOLD_KB, MMAP_THRESHOLD_KB);
  if (kb === undefined || !hasGlibc()) return undefined;
  const tunable = `glibc.malloc.mmap_threshold=${kb * 1024}`;
  return { ...env, GLIBC_TUNABLES: own ? `${own}:${tunable}` : tunable, [BEFORE]: own };
}

type Execve = (file: string, args: readonly string[], env: NodeJS.ProcessEnv) => never;

export interface ReexecProcess {
  env: NodeJS.ProcessEnv;
  platform: NodeJS.Platform;
  execPath: string;
  execArgv: readonly string[];
  argv: readonly string[];
  execve?: Execve;
}

/**
 * Set on the process once `reexecWithTunedMalloc` has run in it: bin/svc.cjs calls it from the
 * CommonJS build (src/surfaces/cli/preflight.ts) and main.ts from the ESM bundle, two copies of this module;
 * without the mark the second would find GLIBC_TUNABLES put back and run the process again.
 */
const DONE = Symbol.for('svc.malloc.reexecChecked');

/**
 * Runs the process again with its malloc tuned (above), or, in the process that was run again,
 * puts GLIBC_TUNABLES back. Returns when there is nothing to do, the re-exec failed, or it has
 * run in this process before.
 */
export function reexecWithTunedMalloc(
  proc: ReexecProcess = process as unknown as ReexecProcess,
  hasGlibc: () => boolean = glibcLoaded,
): void {
  const marked = proc as ReexecProcess & { [DONE]?: true };
  if (marked[DONE]) return;
  marked[DONE] = true;
  const before = proc.env[BEFORE];
  if (before !== undefined) {
    if (before === '') delete proc.env.GLIBC_TUNABLES;
    else proc.env.GLIBC_TUNABLES = before;
    delete proc.env[BEFORE];
    return;
  }
  if (typeof proc.execve !== 'function' || proc.platform !== 'linux') return;
  const env = tunedMallocEnv(proc.env, hasGlibc);
  if (!env) return;
  try {
    proc.execve(proc.execPath, [proc.execPath, ...proc.execArgv, ...proc.argv.slice(1)], env);
  } catch {
    // The service runs untuned: the tuning only saves memory.
  }
}
