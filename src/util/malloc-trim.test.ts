import { describe, expect, it } from 'vitest';
import { bindLibc, glibcLoaded, type Libc } from './glibc';
import { releaseFreedMalloc } from './malloc-trim';

describe('malloc_trim for the quiet trim', () => {
  it('COMPAT-PERF-508: glibc bound through koffi on Linux with glibc, not off Linux or off glibc; SVC_MALLOC_TRIM=0 calls nothing', () => {
    // The CI boxes and this project's machines are Linux with glibc: the binding must be there.
    expect(glibcLoaded()).toBe(true);
    expect(bindLibc()).toEqual({ mallopt: expect.any(Function), malloc_trim: expect.any(Function) });
    expect(bindLibc('darwin')).toEqual({ unavailable: 'no glibc on darwin' });
    expect(bindLibc('linux', () => false)).toEqual({ unavailable: 'not glibc' });
    const calls: number[] = [];
    const recording = (): Libc => ({
      mallopt: () => 1,
      malloc_trim: (pad) => {
        calls.push(pad);
        return 1;
      },
    });
    expect(releaseFreedMalloc({ SVC_MALLOC_TRIM: '0' }, recording)).toBe(false);
    expect(calls).toEqual([]);
    expect(releaseFreedMalloc({}, recording)).toBe(true);
    expect(calls).toEqual([0]);
    // Without the functions, or when the call throws: false, never a throw.
    expect(releaseFreedMalloc({}, () => ({ unavailable: 'not glibc' }))).toBe(false);
    const throwing = (): Libc => ({
      mallopt: () => 1,
      malloc_trim: () => {
        throw new Error('boom');
      },
    });
    expect(releaseFreedMalloc({}, throwing)).toBe(false);
  });
});
