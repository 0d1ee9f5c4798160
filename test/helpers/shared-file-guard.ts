/**
 * Runs around every file of the "shared" project (vitest.config.ts), whose files share their
 * worker's module graph and process: a file that leaves process state behind changes what the
 * next file of its worker sees, and the failure shows up there, far from its cause. This fails
 * the file that left it instead, naming what: process.env changed, fake timers left on, or one of
 * svc's process-wide switches turned on (group commit, read scopes). The fix is to restore what
 * the file changed, or to list it in vitest.config.ts's `isolatedPaths`.
 */
import { afterAll, beforeAll, vi } from 'vitest';
import { groupCommitEnabled } from '../../src/store/db';
import { readScopesEnabled } from '../../src/store/read-scope';

let envBefore: Record<string, string | undefined> = {};
let switchesBefore: string[] = [];

function switchesOn(): string[] {
  const on: string[] = [];
  if (groupCommitEnabled()) on.push('group commit (src/store/db.ts enableGroupCommit)');
  if (readScopesEnabled()) on.push('read scopes (src/store/read-scope.ts enableReadScopes)');
  return on;
}

beforeAll(() => {
  envBefore = { ...process.env };
  switchesBefore = switchesOn();
});

afterAll(() => {
  const left: string[] = [];
  const keys = new Set([...Object.keys(envBefore), ...Object.keys(process.env)]);
  for (const key of keys) if (envBefore[key] !== process.env[key]) left.push(`process.env.${key} changed`);
  if (vi.isFakeTimers()) left.push('fake timers still on');
  // A switch cannot be turned off: only the file that turned it on is named.
  left.push(
    ...switchesOn()
      .filter((s) => !switchesBefore.includes(s))
      .map((s) => `${s} turned on`),
  );
  if (left.length > 0)
    throw new Error(
      `this file left process state behind for the next file of its shared worker: ${left.join('; ')}. ` +
        'Restore it, or list the file in vitest.config.ts isolatedPaths.',
    );
});
