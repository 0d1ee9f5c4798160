/**
 * glibc's `malloc_trim(0)` for the quiet trim of a long-lived process (issue 17, item 4).
 *
 * glibc's malloc keeps what is freed in its arenas: only an arena's top goes back to the OS when
 * it is freed, and the blocks in the middle stay resident until `malloc_trim` hands their whole
 * pages back (`madvise`). On Node the memory freed this way is V8's compiler zones (malloc'ed on
 * its worker threads, each with an arena of its own) and the backing stores of freed buffers: the
 * idle service kept several MB in the arenas after a load (docs/performance.md). Called through
 * ./glibc.ts; a no-op off Linux with glibc and with `SVC_MALLOC_TRIM=0`.
 * @module
 */
import { type LibcBinding, libc, withLibc } from './glibc';

/**
 * Hands the free pages of every malloc arena back to the OS; true when glibc released some.
 * Called by the quiet trim (`trimWhenIdle` in ./heap.ts) right after its full GC, which frees the
 * buffers and zones whose memory it returns. Never throws.
 */
export function releaseFreedMalloc(
  env: NodeJS.ProcessEnv = process.env,
  binding: () => LibcBinding = libc,
): boolean {
  if (env.SVC_MALLOC_TRIM === '0') return false;
  return withLibc(binding, (c) => c.malloc_trim(0) === 1);
}
