import { getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { tuneHeapForLongRunning } from './heap';

describe('tuneHeapForLongRunning', () => {
  it('sets the growing factor and ignores values that are no positive integer', () => {
    for (const value of [undefined, '', '0', '-5', 'abc', '1.5', '50']) {
      expect(() => tuneHeapForLongRunning({ SVC_HEAP_GROWING_PERCENT: value })).not.toThrow();
    }
    expect(getHeapStatistics().used_heap_size).toBeGreaterThan(0);
  });
});
