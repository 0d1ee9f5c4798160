/**
 * How deep a parsed JSON value nests, checked without recursion: `JSON.parse` takes any depth, but
 * `JSON.stringify` (storing the value) and the recursive walks after it overflow the stack at a few
 * thousand levels, which a request can send in a few kilobytes.
 * @module
 */

/** Whether `value` nests arrays and objects more than `max` levels deep (a scalar is depth 0). */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number];
    if (current === null || typeof current !== 'object') continue;
    if (depth + 1 > max) return true;
    const children = Array.isArray(current) ? current : Object.values(current);
    for (const child of children)
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}
