import { describe, expect, it } from 'vitest';
import { glibcLoaded } from './glibc';
import { isolatedGc } from './heap';
import { bindMallocTrim, releaseFreedMalloc } from './malloc-trim';

describe('malloc_trim for the quiet trim', () => {
  it('COMPAT-PERF-508: bound through koffi on Linux with glibc; not with SVC_MALLOC_TRIM=0, off Linux or off glibc', () => {
    // The CI boxes and this project's machines are Linux with glibc: the binding must be there.
    expect(glibcLoaded()).toBe(true);
    const bound = bindMallocTrim({});
    expect(bound).toEqual({ trim: expect.any(Function) });
    expect(bindMallocTrim({ SVC_MALLOC_TRIM: '0' })).toEqual({ unavailable: 'SVC_MALLOC_TRIM=0' });
    expect(bindMallocTrim({ SVC_MALLOC_TRIM: '1' })).toEqual({ trim: expect.any(Function) });
    expect(bindMallocTrim({}, 'darwin')).toEqual({ unavailable: 'no glibc on darwin' });
    expect(bindMallocTrim({}, 'linux', () => false)).toEqual({ unavailable: 'not glibc' });
  });

  it('COMPAT-PERF-509: hands back what malloc kept of freed buffers between live ones (a full GC alone does not)', async () => {
    const gc = isolatedGc();
    if (!gc) throw new Error('no gc');
    const rssMb = () => process.memoryUsage().rss / 1024 / 1024;
    // ≈ 100 MB of 64 KB backing stores (malloc'ed: under glibc's mmap threshold), each followed by
    // a small live one, so that freeing them leaves holes in the arena rather than its top.
    let freed: Buffer[] = [];
    const kept: Buffer[] = [];
    for (let i = 0; i < 1_600; i++) {
      freed.push(Buffer.allocUnsafeSlow(65_536).fill(1));
      kept.push(Buffer.allocUnsafeSlow(1_024).fill(2));
    }
    freed = [];
    gc();
    gc();
    // The backing stores are freed by V8's sweeper, maybe on another thread: give it a moment.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const afterGc = rssMb();
    expect(releaseFreedMalloc()).toBe(true);
    const afterTrim = rssMb();
    // Measured: 150 → 55 MB on Node 20, 160 → 64 on Node 24.
    expect(afterGc - afterTrim).toBeGreaterThan(50);
    expect(kept.every((b) => b[0] === 2 && b.length === 1_024)).toBe(true);
    expect(freed).toHaveLength(0);
  });
});
