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
 * (Node 20 ≈ 27). `mallopt(M_MMAP_THRESHOLD)` holds it at 128 KB (setting it also turns the raising
 * off, as the `glibc.malloc.mmap_threshold` tunable does): with the quiet trim, the idle service
 * on Node 20 91–92 → 81–82 MB; on Node 24 95–96, as with the tunable, and 140–142 before either
 * (docs/performance.md).
 *
 * The TUI holds it too, once its first frame is up (koffi's load is then not in its start,
 * src/surfaces/cli/commands/tui.ts): on Node 24 its RSS after a 200-message session fell ≈ 8–10 MB,
 * after 30 s idle ≈ 13 MB; on Node 20 ≈ 2 MB.
 *
 * Set as a service starts, before the CLI loads (main.ts), through ./glibc.ts. Until 2026-12-05
 * the service ran itself again with `GLIBC_TUNABLES` (`process.execve`, Node 22.15+ only, one more
 * Node start); `mallopt` does the same in the running process, on every Node line. Nothing is done
 * off Linux with glibc, when the operator's GLIBC_TUNABLES sets the threshold itself, or with
 * SVC_MALLOC_MMAP_THRESHOLD_KB=0 (another positive value sets another threshold).
 * @module
 */
import { type LibcBinding, libc, withLibc } from './glibc';
import { settingFromEnv } from './heap';

const MMAP_THRESHOLD_KB = 128;
/** glibc's malloc.h. */
const M_MMAP_THRESHOLD = -3;

/** The threshold to hold, bytes; undefined when svc leaves it alone. */
export function mmapThresholdBytes(env: NodeJS.ProcessEnv): number | undefined {
  if ((env.GLIBC_TUNABLES ?? '').includes('glibc.malloc.mmap_threshold')) return undefined;
  const kb = settingFromEnv(env.SVC_MALLOC_MMAP_THRESHOLD_KB, MMAP_THRESHOLD_KB);
  return kb === undefined ? undefined : kb * 1024;
}

/** Holds glibc's mmap threshold (above) in this process; true when glibc took it. Never throws. */
export function holdMmapThreshold(
  env: NodeJS.ProcessEnv = process.env,
  binding: () => LibcBinding = libc,
): boolean {
  const bytes = mmapThresholdBytes(env);
  if (bytes === undefined) return false;
  return withLibc(binding, (c) => c.mallopt(M_MMAP_THRESHOLD, bytes) === 1);
}
