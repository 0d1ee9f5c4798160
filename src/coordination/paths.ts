/**
 * Workspace path scopes for claims and markers: workspace-relative, `/`-separated; a directory
 * scope (`src/`) covers everything under it; `.` covers the whole workspace.
 * @module
 */
import { isAbsolute, relative, resolve } from 'node:path';
import { SvcError } from '../errors';

export function normalizeScope(workspace: string, path: string): string {
  const trimmed = path.trim();
  if (trimmed === '' || trimmed === '.' || trimmed === './') return '.';
  const absolute = isAbsolute(trimmed) ? trimmed : resolve(workspace, trimmed);
  const rel = relative(workspace, absolute).split('\\').join('/');
  if (rel.startsWith('..')) throw new SvcError('invalid_input', `paths: ${path} is outside the workspace`);
  if (rel === '') return '.';
  return trimmed.endsWith('/') ? `${rel}/` : rel;
}

/** Whether two scopes overlap: equal, or one is a directory containing the other. */
export function overlaps(a: string, b: string): boolean {
  if (a === '.' || b === '.') return true;
  const strip = (s: string) => s.replace(/\/$/, '');
  const x = strip(a);
  const y = strip(b);
  return x === y || y.startsWith(`${x}/`) || x.startsWith(`${y}/`);
}
