/**
 * glibc's malloc functions svc calls in its long-lived processes (./malloc.ts holds the mmap
 * threshold, ./malloc-trim.ts hands free pages back): Node has no API for them, so they are called
 * through koffi, a C FFI whose npm packages carry its prebuilt binaries (no compiler, no download).
 * koffi loads on first use only (≈ 15–25 ms, ≈ 2 MB of RSS): a service's start, the TUI's once its
 * first frame is up, else a quiet trim.
 * @module
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

/** The functions bound (glibc's names and C signatures). */
export interface Libc {
  mallopt(param: number, value: number): number;
  malloc_trim(pad: number): number;
}

/** The binding, or why there is none. */
export type LibcBinding = Libc | { unavailable: string };

/** Whether glibc's libc is mapped into this process (a musl or static build maps none). */
export function glibcLoaded(): boolean {
  try {
    return /\/libc(\.so\.6|-2\.\d+\.so)$/m.test(readFileSync('/proc/self/maps', 'utf8'));
  } catch {
    return false;
  }
}

/** glibc's functions through koffi: only on Linux with glibc (musl has neither function). */
export function bindLibc(
  platform: NodeJS.Platform = process.platform,
  hasGlibc: () => boolean = glibcLoaded,
): LibcBinding {
  if (platform !== 'linux') return { unavailable: `no glibc on ${platform}` };
  if (!hasGlibc()) return { unavailable: 'not glibc' };
  try {
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
    const lib = koffi.load('libc.so.6');
    return {
      mallopt: lib.func('int mallopt(int, int)') as Libc['mallopt'],
      malloc_trim: lib.func('int malloc_trim(size_t)') as Libc['malloc_trim'],
    };
  } catch (error) {
    return { unavailable: error instanceof Error ? error.message : String(error) };
  }
}

let bound: LibcBinding | undefined;

/** `bindLibc()` once a process. */
export function libc(): LibcBinding {
  bound ??= bindLibc();
  return bound;
}

/** Runs `call` with the bound functions; false without them or when it throws. Never throws. */
export function withLibc(binding: () => LibcBinding, call: (c: Libc) => boolean): boolean {
  const c = binding();
  if ('unavailable' in c) return false;
  try {
    return call(c);
  } catch {
    return false;
  }
}
