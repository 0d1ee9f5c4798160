import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { Libc } from './glibc';
import { holdMmapThreshold, mmapThresholdBytes } from './malloc';

describe('holdMmapThreshold', () => {
  it('COMPAT-PERF-501: mallopt(M_MMAP_THRESHOLD, 128 KB); SVC_MALLOC_MMAP_THRESHOLD_KB sets another, 0 none; the operator’s own threshold tunable wins', () => {
    const calls: [number, number][] = [];
    const recording = (): Libc => ({
      mallopt: (param, value) => {
        calls.push([param, value]);
        return 1;
      },
      malloc_trim: () => 0,
    });
    expect(holdMmapThreshold({}, recording)).toBe(true);
    expect(holdMmapThreshold({ SVC_MALLOC_MMAP_THRESHOLD_KB: '64' }, recording)).toBe(true);
    // Another malloc tunable of the operator's leaves the threshold to svc.
    expect(holdMmapThreshold({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' }, recording)).toBe(true);
    expect(calls).toEqual([
      [-3, 131_072],
      [-3, 65_536],
      [-3, 131_072],
    ]);
    expect(holdMmapThreshold({ SVC_MALLOC_MMAP_THRESHOLD_KB: '0' }, recording)).toBe(false);
    expect(holdMmapThreshold({ GLIBC_TUNABLES: 'glibc.malloc.mmap_threshold=65536' }, recording)).toBe(false);
    expect(calls).toHaveLength(3);
    expect(mmapThresholdBytes({ SVC_MALLOC_MMAP_THRESHOLD_KB: 'x' })).toBeUndefined();
    // Off glibc, glibc refusing, or a throw: false, never a throw.
    expect(holdMmapThreshold({}, () => ({ unavailable: 'not glibc' }))).toBe(false);
    expect(holdMmapThreshold({}, () => ({ mallopt: () => 0, malloc_trim: () => 0 }))).toBe(false);
    const throwing = (): Libc => ({
      mallopt: () => {
        throw new Error('boom');
      },
      malloc_trim: () => 0,
    });
    expect(holdMmapThreshold({}, throwing)).toBe(false);
  });

  it('COMPAT-PERF-510: in this process, a freed 4 MB block no longer raises the threshold: 256 KB blocks get mappings of their own', () => {
    // glibc's malloc, free and count of mmapped blocks (mallinfo2's hblks), through koffi as svc
    // binds glibc (Node 24 does not take every buffer's memory from malloc).
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
    const lib = koffi.load('libc.so.6');
    const fields = [
      'arena',
      'ordblks',
      'smblks',
      'hblks',
      'hblkhd',
      'usmblks',
      'fsmblks',
      'uordblks',
      'fordblks',
      'keepcost',
    ];
    const info = koffi.struct(Object.fromEntries(fields.map((f) => [f, 'size_t'])));
    const mallinfo2 = lib.func('mallinfo2', info, []) as () => { hblks: number };
    const malloc = lib.func('void *malloc(size_t)') as (size: number) => unknown;
    const free = lib.func('void free(void *)') as (block: unknown) => void;
    /** A 4 MB block freed (glibc's dynamic threshold rises to its size), then 40 blocks of 256 KB. */
    const mappedOf256k = (): number => {
      free(malloc(4 * 1024 * 1024));
      const before = Number(mallinfo2().hblks);
      const blocks = Array.from({ length: 40 }, () => malloc(256 * 1024));
      const mapped = Number(mallinfo2().hblks) - before;
      for (const block of blocks) free(block);
      return mapped;
    };
    // Before: the freed 4 MB block raised the threshold, so the 256 KB blocks came from an arena.
    expect(mappedOf256k()).toBeLessThan(10);
    expect(holdMmapThreshold({})).toBe(true);
    // 40 less what other threads unmapped meanwhile.
    expect(mappedOf256k()).toBeGreaterThanOrEqual(30);
  });
});
