/**
 * Diffs for the transcript and the permission dialog: found in a tool's permission details or
 * result (`diff`/`patch`, or old/new text, or the content of a new file), rendered as colored
 * unified-diff lines.
 * @module
 */
import chalk from 'chalk';
import { createTwoFilesPatch } from 'diff';

/** A unified diff for what a tool changes, when its details say enough to show one. */
export function diffFromDetails(details: unknown): string | undefined {
  if (typeof details !== 'object' || details === null) return undefined;
  const d = details as Record<string, unknown>;
  for (const key of ['diff', 'patch', 'unified_diff']) {
    if (typeof d[key] === 'string' && (d[key] as string).trim()) return d[key] as string;
  }
  const path = String(d.path ?? d.file_path ?? d.file ?? 'file');
  const before = d.old_string ?? d.before ?? d.old_content;
  const after = d.new_string ?? d.after ?? d.new_content;
  if (typeof before === 'string' && typeof after === 'string')
    return stripHeader(createTwoFilesPatch(path, path, before, after, '', '', { context: 3 }));
  if (typeof d.content === 'string' && (d.path || d.file_path))
    return stripHeader(createTwoFilesPatch('/dev/null', path, '', d.content, '', '', { context: 3 }));
  return undefined;
}

function stripHeader(patch: string): string {
  // createTwoFilesPatch opens with a `===` rule line; keep the ---/+++ headers and the hunks.
  return patch
    .split('\n')
    .filter((line) => !/^={10,}$/.test(line))
    .join('\n')
    .replace(/\n+$/, '');
}

export interface DiffStats {
  added: number;
  removed: number;
}

export function diffStats(diff: string): DiffStats {
  let added = 0;
  let removed = 0;
  for (const line of diff.split('\n')) {
    if (line.startsWith('+++') || line.startsWith('---')) continue;
    if (line.startsWith('+')) added++;
    else if (line.startsWith('-')) removed++;
  }
  return { added, removed };
}

/** Colored lines, at most `maxLines` (the rest summarized in one line). */
export function renderDiff(diff: string, maxLines = Number.POSITIVE_INFINITY): string[] {
  const lines = diff.split('\n');
  const shown = lines.slice(0, maxLines).map((line) => {
    if (line.startsWith('+++') || line.startsWith('---')) return chalk.bold(line);
    if (line.startsWith('@@')) return chalk.cyan(line);
    if (line.startsWith('+')) return chalk.green(line);
    if (line.startsWith('-')) return chalk.red(line);
    if (line.startsWith('\\')) return chalk.gray(line);
    return line;
  });
  if (lines.length > maxLines) shown.push(chalk.gray(`… ${lines.length - maxLines} more diff lines`));
  return shown;
}
