/**
 * Unified diffs of file changes, for permission prompts, tool results and file history.
 * The diff library loads on first use; a diff that takes too long degrades to a summary.
 * @module
 */

export interface DiffResult {
  /** Unified diff text with `a/` and `b/` headers; a one-line summary when it could not be computed. */
  diff: string;
  additions: number;
  deletions: number;
  /** True when `diff` was cut to MAX_DIFF characters. */
  truncated: boolean;
}

const MAX_DIFF = 50_000;
const DIFF_TIMEOUT_MS = 2_000;

export async function unifiedDiff(path: string, before: string, after: string): Promise<DiffResult> {
  const { structuredPatch, formatPatch } = await import('diff');
  const patch = structuredPatch(`a/${path}`, `b/${path}`, before, after, undefined, undefined, {
    context: 3,
    timeout: DIFF_TIMEOUT_MS,
  });
  if (!patch) {
    const a = countLines(before);
    const b = countLines(after);
    return {
      diff: `(diff of ${path} too large to compute: ${a} → ${b} lines)`,
      additions: b,
      deletions: a,
      truncated: true,
    };
  }
  let additions = 0;
  let deletions = 0;
  for (const hunk of patch.hunks) {
    for (const line of hunk.lines) {
      if (line.startsWith('+')) additions++;
      else if (line.startsWith('-')) deletions++;
    }
  }
  let text = formatPatch(patch).replace(/^=+\n/, '');
  const truncated = text.length > MAX_DIFF;
  if (truncated) text = `${text.slice(0, MAX_DIFF)}\n… (diff truncated)\n`;
  return { diff: text, additions, deletions, truncated };
}

function countLines(text: string): number {
  if (text === '') return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}
