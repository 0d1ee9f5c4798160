import { getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { dropUserTimingEntries, holdYoungGeneration, trimWhenIdle, tuneHeapForLongRunning } from './heap';

describe('tuneHeapForLongRunning', () => {
  it('sets the growing factor and ignores values that are no positive integer', () => {
    for (const value of [undefined, '', '0', '-5', 'abc', '1.5', '50']) {
      expect(() => tuneHeapForLongRunning({ SVC_HEAP_GROWING_PERCENT: value })).not.toThrow();
    }
    expect(getHeapStatistics().used_heap_size).toBeGreaterThan(0);
  });
});

describe('holdYoungGeneration', () => {
  it('sets a semi-space growth factor of 1 unless SVC_SEMI_SPACE_GROWTH_FACTOR says otherwise', () => {
    const set = (value: string | undefined) => {
      const flags: string[] = [];
      holdYoungGeneration({ SVC_SEMI_SPACE_GROWTH_FACTOR: value }, (f) => flags.push(f));
      return flags;
    };
    expect(set(undefined)).toEqual(['--semi-space-growth-factor=1']);
    expect(set('')).toEqual(['--semi-space-growth-factor=1']);
    expect(set('3')).toEqual(['--semi-space-growth-factor=3']);
    for (const value of ['0', '-1', '1.5', 'abc']) expect(set(value)).toEqual([]);
  });
});

describe('dropUserTimingEntries', () => {
  it('clears the recorded measures on its interval', async () => {
    performance.measure('svc-heap-test', { start: 0, end: 1 });
    const stop = dropUserTimingEntries(5);
    await new Promise((resolve) => setTimeout(resolve, 30));
    stop();
    expect(performance.getEntriesByName('svc-heap-test')).toHaveLength(0);
  });
});

describe('trimWhenIdle', () => {
  it('collects once the process is quiet, without a global gc', async () => {
    const stop = trimWhenIdle(20);
    await new Promise((resolve) => setTimeout(resolve, 100));
    stop();
    expect('gc' in globalThis).toBe(false);
  });
});

describe('trimWhenIdle().now', () => {
  it('collects at once, without a global gc', async () => {
    const trim = trimWhenIdle(60_000);
    const ref = (() => new WeakRef({ garbage: 'x'.repeat(1000) }))();
    await new Promise((resolve) => setTimeout(resolve, 0));
    trim.now();
    trim();
    expect(ref.deref()).toBeUndefined();
    expect('gc' in globalThis).toBe(false);
  });
});
