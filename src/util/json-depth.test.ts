import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from './json-depth';

const nested = (levels: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = i % 2 ? [value] : { a: value };
  return value;
};

describe('nestsDeeperThan', () => {
  it('counts object and array levels, scalars as none, without recursion', () => {
    expect(nestsDeeperThan('text', 0)).toBe(false);
    expect(nestsDeeperThan({}, 0)).toBe(true);
    expect(nestsDeeperThan({}, 1)).toBe(false);
    expect(nestsDeeperThan(nested(64), 64)).toBe(false);
    expect(nestsDeeperThan(nested(65), 64)).toBe(true);
    expect(nestsDeeperThan({ a: 1, b: [1, 2, { c: null }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: 1, b: [1, 2, { c: {} }] }, 3)).toBe(true);
    // Deeper than JSON.stringify can go (it overflows the stack at a few thousand levels).
    const deep = nested(200_000);
    expect(() => JSON.stringify(deep)).toThrow(RangeError);
    expect(nestsDeeperThan(deep, 100)).toBe(true);
  });
});
