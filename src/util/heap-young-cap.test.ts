import { describe, expect, it } from 'vitest';
import { capYoungGeneration, isolatedGc, memoryReducingGc, semiSpaceCapacity } from './heap';

const MB = 1024 * 1024;

describe('capYoungGeneration', () => {
  it('COMPAT-PERF-458: stops the growth once one more doubling would take a semi-space past 16 MB, lets it grow again once it fits; stop() puts V8’s factor back', () => {
    const flags: string[] = [];
    let semiSpace = 8 * MB;
    const cap = capYoungGeneration(
      {},
      [],
      (f) => flags.push(f),
      () => semiSpace,
    );
    if (!cap) throw new Error('no cap');
    cap.check();
    // 8 → 16 MB still fits.
    expect(flags).toEqual([]);
    // Node 20 and 22 report a 16 MB semi-space as 15.73 MB (page headers): held there too.
    semiSpace = 15.73 * MB;
    cap.check();
    cap.check();
    expect(flags).toEqual(['--semi-space-growth-factor=1']);
    // V8 shrank it after a quiet spell (to twice what lived, so no power of two): it may grow again.
    semiSpace = 5.25 * MB;
    cap.check();
    expect(flags).toEqual(['--semi-space-growth-factor=1', '--semi-space-growth-factor=2']);
    // 10.5 → 21 would pass the cap: held one step early.
    semiSpace = 10.5 * MB;
    cap.check();
    cap.stop();
    expect(flags.slice(2)).toEqual(['--semi-space-growth-factor=1', '--semi-space-growth-factor=2']);
  });

  it('COMPAT-PERF-458: SVC_MAX_SEMI_SPACE_MB moves the cap; 0 or no positive integer sets nothing; an operator’s own young-generation flag wins', () => {
    const held = (env: NodeJS.ProcessEnv, execArgv: string[] = [], semiSpace = 4 * MB) => {
      const flags: string[] = [];
      const cap = capYoungGeneration(
        env,
        execArgv,
        (f) => flags.push(f),
        () => semiSpace,
      );
      cap?.check();
      cap?.stop();
      return cap ? flags : undefined;
    };
    expect(held({ SVC_MAX_SEMI_SPACE_MB: '4' })).toEqual([
      '--semi-space-growth-factor=1',
      '--semi-space-growth-factor=2',
    ]);
    expect(held({ SVC_MAX_SEMI_SPACE_MB: '8' })).toEqual([]);
    expect(held({ SVC_MAX_SEMI_SPACE_MB: '' })).toEqual([]);
    for (const value of ['0', '-1', '1.5', 'abc'])
      expect(held({ SVC_MAX_SEMI_SPACE_MB: value })).toBeUndefined();
    expect(held({ NODE_OPTIONS: '--max-old-space-size=512 --max-semi-space-size=64' })).toBeUndefined();
    expect(held({ NODE_OPTIONS: '--max_semi_space_size=64' })).toBeUndefined();
    expect(held({}, ['--semi-space-growth-factor=4'])).toBeUndefined();
    expect(held({ NODE_OPTIONS: '--max-old-space-size=512' })).toEqual([]);
  });

  it('COMPAT-PERF-459: in this process, objects that survive scavenges grow a semi-space to the cap and no further (V8 alone doubles it to 16 MB on Node 20 and 22, 32–64 MB on Node 24)', async () => {
    const gc = isolatedGc();
    if (!gc) throw new Error('no gc');
    // On Node 22 and 24 a memory-reducing GC shrinks the young generation to V8's initial size (1 MB
    // a semi-space); Node 20's keeps what loading this file grew it to (4 MB).
    memoryReducingGc(gc);
    const start = semiSpaceCapacity();
    // One doubling from where it is, and no more: V8 alone goes on to 16 MB or more.
    const capMb = 2 * Math.max(1, Math.round(start / MB));
    const cap = capYoungGeneration({ SVC_MAX_SEMI_SPACE_MB: String(capMb) }, []);
    if (!cap) throw new Error('no cap');
    const turn = async (count: number, keep: object[]) => {
      for (let i = 0; i < count; i++) keep.push({ a: i, b: `x${i}`, c: [i, count] });
      await new Promise((resolve) => setImmediate(resolve));
    };
    let window: object[] = [];
    let grown = 0;
    try {
      // The turns keep ≈ 100k small objects alive across collections (what makes V8 grow it),
      // each yielding so the GC observer runs, as it does between a service's requests. A turn
      // allocates ≈ 0.5 MB, less than the smallest semi-space: the observer, a turn or two late,
      // sees each growth before the next (with 2 MB turns, a 1 MB semi-space grew twice first).
      for (let i = 0; i < 600; i++) {
        await turn(5_000, window);
        if (window.length > 100_000) window = window.slice(50_000);
      }
      // The capacity V8 grew it to: two scavenges give back the pages Node 24 hands the young
      // generation beyond its capacity while a full GC marks (not the growth the cap holds).
      gc({ type: 'minor', execution: 'sync' });
      gc({ type: 'minor', execution: 'sync' });
      grown = semiSpaceCapacity();
    } finally {
      cap.stop();
    }
    expect(window.length).toBeGreaterThan(0);
    expect(start).toBeLessThanOrEqual(4 * MB);
    expect(grown).toBeGreaterThan(0);
    expect(grown).toBeLessThanOrEqual(capMb * MB);
  });
});
