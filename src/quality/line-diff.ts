/**
 * Line counts of a diff, computed synchronously (Myers' greedy shortest edit script, distance
 * only): the edit capsule of a run is built inside the `run.finished` listener, so its stats must
 * not wait for the lazily loaded diff library. Past MAX_EDITS the counts degrade to "every line
 * removed and added", which is still an honest upper bound.
 * @module
 */

const MAX_EDITS = 4000;

export interface LineCounts {
  additions: number;
  deletions: number;
}

export function lineCounts(before: string, after: string): LineCounts {
  const a = splitLines(before);
  const b = splitLines(after);
  // Common prefix and suffix cost nothing and shrink the search.
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const n = endA - start;
  const m = endB - start;
  if (n === 0 || m === 0) return { additions: m, deletions: n };
  const distance = editDistance(a, b, start, n, m);
  if (distance === undefined) return { additions: m, deletions: n };
  // distance = deletions + additions; the common subsequence is (n + m - distance) / 2.
  const common = (n + m - distance) / 2;
  return { additions: m - common, deletions: n - common };
}

function editDistance(a: string[], b: string[], offset: number, n: number, m: number): number | undefined {
  const max = Math.min(n + m, MAX_EDITS);
  const size = 2 * max + 1;
  const v = new Int32Array(size + 2);
  for (let d = 0; d <= max; d++) {
    for (let k = -d; k <= d; k += 2) {
      const index = k + max;
      let x = k === -d || (k !== d && v[index - 1] < v[index + 1]) ? v[index + 1] : v[index - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[offset + x] === b[offset + y]) {
        x++;
        y++;
      }
      v[index] = x;
      if (x >= n && y >= m) return d;
    }
  }
  return undefined;
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}
