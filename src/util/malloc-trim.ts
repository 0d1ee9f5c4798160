/**
 * glibc's `malloc_trim(0)` for the quiet trim of a long-lived process (issue 17, item 4).
 *
 * glibc's malloc keeps what is freed in its arenas: only an arena's top goes back to the OS when
 * it is freed, and the blocks in the middle stay resident until `malloc_trim` hands their whole
 * pages back (`madvise`). On Node the memory freed this way is V8's compiler zones (malloc'ed on
 * its worker threads, each with an arena of its own) and the backing stores of freed buffers: the
 * idle service kept tens of MB in the arenas after a load (docs/performance.md). Node has no API
 * for it, so it is called through koffi (a C FFI with prebuilt binaries in its npm packages),
 * loaded the first time it is needed: never on a command that does not go quiet after work.
 *
 * Only on Linux with glibc (musl has no `malloc_trim`); a no-op when koffi or the symbol cannot be
 * loaded, and with `SVC_MALLOC_TRIM=0`.
 * @module
 */
import { createRequire } from 'node:module';
import { glibcLoaded } from './glibc';

type Trim = (pad: number) => number;

/** What `releaseFreedMalloc` binds to: the symbol, or why it is not there (kept for the tests). */
export type MallocTrim = { trim: Trim } | { unavailable: string };

let bound: MallocTrim | undefined;

/** glibc's `malloc_trim` through koffi, or why it is not there (off Linux with glibc, koffi not loaded). */
export function bindMallocTrim(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  hasGlibc: () => boolean = glibcLoaded,
): MallocTrim {
  if (env.SVC_MALLOC_TRIM === '0') return { unavailable: 'SVC_MALLOC_TRIM=0' };
  if (platform !== 'linux') return { unavailable: `no glibc on ${platform}` };
  if (!hasGlibc()) return { unavailable: 'not glibc' };
  try {
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
    const trim = koffi.load('libc.so.6').func('int malloc_trim(size_t)') as Trim;
    return { trim };
  } catch (error) {
    return { unavailable: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * Hands the free pages of every malloc arena back to the OS; true when glibc released some.
 * Called by the quiet trim (`trimWhenIdle` in ./heap.ts) right after its full GC, which frees the
 * buffers and zones whose memory it returns. Never throws.
 */
export function releaseFreedMalloc(): boolean {
  bound ??= bindMallocTrim();
  if (!('trim' in bound)) return false;
  try {
    return bound.trim(0) === 1;
  } catch {
    bound = { unavailable: 'malloc_trim failed' };
    return false;
  }
}
