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
});
