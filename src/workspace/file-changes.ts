/**
 * The one pipeline every file mutation goes through: mutation guards, an approval request that
 * shows the diff, a re-check that nothing changed on disk while the operator decided, the atomic
 * write, file history, read tracking and the `file.changed` event. Several files can change in
 * one approval (a rename across files).
 * @module
 */
import { statSync, unlinkSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { SessionEventPayloads } from '../events/types';
import { approve, type MutationGuard, type OpContext } from './context';
import { type DiffResult, unifiedDiff } from './diff';
import type { FileChange, FileHistory } from './file-history';
import { atomicWrite, fileOnDisk, sha256 } from './file-io';
import { type PathResolver, type ResolvedPath, realpathOfDeepest } from './paths';
import type { ReadTracker } from './read-tracker';
import { removeNoFollow, writeNoFollow } from './safe-path';

export interface PendingChange {
  target: ResolvedPath;
  /** Content on disk when the change was computed; null when the file does not exist. */
  before: Buffer | null;
  /** New content; null deletes the file. */
  after: Buffer | string | null;
  binary?: boolean;
}

export interface AppliedChange {
  path: string;
  change: 'create' | 'modify' | 'delete';
  additions: number;
  deletions: number;
  diff: string;
  history_id: number;
}

/**
 * Runs once a change set is approved and verified, right before its first write (e.g. the edit
 * capsule checkpoint taken before a run's first change). A hook that throws stops the change.
 */
export type BeforeWriteHook = (changes: readonly PendingChange[], ctx: OpContext) => Promise<void> | void;

export interface ChangeCommitter {
  /** Run guards, ask with the combined diff, verify, write, record. All-or-nothing before the writes. */
  commit(
    changes: PendingChange[],
    ctx: OpContext,
    prompt: { title: string; scope?: string; details?: Record<string, unknown> },
  ): Promise<AppliedChange[]>;
  /** Check guards for these paths without changing anything (before doing expensive work). */
  guard(tool: string, sessionId: string | undefined, paths: string[]): Promise<void>;
  /** Register a hook run before the writes of every approved change set; returns its removal. */
  beforeWrite(hook: BeforeWriteHook): () => void;
}

export function createChangeCommitter(deps: {
  guards: () => readonly MutationGuard[];
  history: FileHistory;
  reads: ReadTracker;
  bus: EventBus;
  /** Re-checks, after the approval, that a path resolved inside the workspace still is. */
  paths?: Pick<PathResolver, 'contains' | 'realRoot'>;
}): ChangeCommitter {
  const guard = async (tool: string, sessionId: string | undefined, paths: string[]) => {
    for (const check of deps.guards()) await check({ tool, sessionId, paths });
  };
  const hooks: BeforeWriteHook[] = [];

  return {
    guard,
    beforeWrite(hook) {
      hooks.push(hook);
      return () => {
        const at = hooks.indexOf(hook);
        if (at >= 0) hooks.splice(at, 1);
      };
    },
    async commit(changes, ctx, prompt) {
      const paths = changes.map((c) => c.target.rel);
      // Guards (hard workspace claims) speak workspace-relative paths; outside ones (when allowed) are not theirs.
      const guarded = changes.filter((c) => c.target.inside).map((c) => c.target.rel);
      await guard(ctx.tool, ctx.sessionId, guarded);
      const diffs: DiffResult[] = [];
      for (const change of changes) diffs.push(await diffOf(change));
      const combined = diffs.map((d) => d.diff).join('');
      await approve(ctx, {
        title: prompt.title,
        scope: prompt.scope ?? (paths.length === 1 ? paths[0] : undefined),
        details: {
          paths,
          diff: combined,
          additions: diffs.reduce((n, d) => n + d.additions, 0),
          deletions: diffs.reduce((n, d) => n + d.deletions, 0),
          ...prompt.details,
        },
      });
      for (const hook of [...hooks]) await hook(changes, ctx);
      // The operator (and the hooks) may have taken a while: hard claims could have appeared,
      // files could have moved.
      await guard(ctx.tool, ctx.sessionId, guarded);
      for (const change of changes) {
        verifyUnchanged(change);
        if (deps.paths) verifyStillInside(change, deps.paths);
      }

      const applied: AppliedChange[] = [];
      for (const [index, change] of changes.entries()) {
        const kind = change.before === null ? 'create' : change.after === null ? 'delete' : 'modify';
        writeChange(change, deps.paths);
        const record: FileChange = await deps.history.record({
          sessionId: ctx.sessionId,
          runId: ctx.runId,
          tool: ctx.tool,
          path: change.target.rel,
          change: kind,
          before: change.before,
          after: change.after,
          binary: change.binary,
        });
        if (ctx.sessionId && change.after !== null) {
          await deps.reads.record(ctx.sessionId, change.target.rel, {
            sha256: sha256(change.after),
            size: Buffer.byteLength(change.after),
            mtimeMs: statSync(change.target.abs).mtimeMs,
          });
        }
        if (ctx.sessionId) {
          const payload: SessionEventPayloads['file.changed'] = {
            session_id: ctx.sessionId,
            tool: ctx.tool,
            path: change.target.rel,
            change: kind,
            ...(ctx.runId ? { run_id: ctx.runId } : {}),
          };
          deps.bus.publish(ctx.sessionId, 'file.changed', payload);
        }
        applied.push({
          path: change.target.rel,
          change: kind,
          additions: diffs[index].additions,
          deletions: diffs[index].deletions,
          diff: diffs[index].diff,
          history_id: record.id,
        });
      }
      return applied;
    },
  };
}

async function diffOf(change: PendingChange): Promise<DiffResult> {
  const after =
    change.after === null ? null : Buffer.isBuffer(change.after) ? change.after : Buffer.from(change.after);
  if (change.binary) {
    const size = (b: Buffer | null) => (b === null ? 'absent' : `${b.length} bytes`);
    return {
      diff: `Binary file ${change.target.rel}: ${size(change.before)} → ${size(after)}\n`,
      additions: 0,
      deletions: 0,
      truncated: false,
    };
  }
  return unifiedDiff(change.target.rel, change.before?.toString('utf8') ?? '', after?.toString('utf8') ?? '');
}

/**
 * A target resolved inside the workspace before the approval must still be: a directory on its
 * path swapped for a symlink to elsewhere meanwhile would carry the write or the removal outside.
 */
function verifyStillInside(change: PendingChange, paths: Pick<PathResolver, 'contains' | 'realRoot'>): void {
  if (!change.target.inside || paths.contains(change.target.abs)) return;
  throw new SvcError(
    'conflict',
    `${change.target.rel} now resolves outside the workspace (a directory on its path became a symlink while the change was waiting for approval); nothing was written; check the directory and redo the change`,
    { details: { path: change.target.rel, reason: 'moved_outside_during_approval' } },
  );
}

/**
 * Writes (or removes) one approved change. A target inside the workspace is written at its real
 * path, found now, and reached without following a symlink: the check after the approval is one
 * moment, and a command still running (a background job) can swap a directory on the path for a
 * symlink to elsewhere after it, or between two files of one change, where a plain write would
 * follow it outside.
 */
function writeChange(
  change: PendingChange,
  paths: Pick<PathResolver, 'contains' | 'realRoot'> | undefined,
): void {
  if (!paths || !change.target.inside) {
    if (change.after === null) unlinkSync(change.target.abs);
    else atomicWrite(change.target.abs, change.after);
    return;
  }
  const real = realpathOfDeepest(change.target.abs);
  verifyStillInside({ ...change, target: { ...change.target, abs: real } }, paths);
  const rel = relative(paths.realRoot, real).split(sep).join('/');
  if (change.after === null) {
    const removed = removeNoFollow(paths.realRoot, rel);
    if (removed.status === 'skipped') throw notWritten(change, removed.reason);
    return;
  }
  const written = writeNoFollow(paths.realRoot, rel, change.after);
  if (!written.ok) throw notWritten(change, written.reason);
}

function notWritten(change: PendingChange, reason: string): SvcError {
  return new SvcError(
    'conflict',
    `${change.target.rel} was not written: ${reason} (its path changed while the change was being written); check the directory and redo the change`,
    { details: { path: change.target.rel, reason: 'path_changed_during_write' } },
  );
}

function verifyUnchanged(change: PendingChange): void {
  // What is there now; a directory, FIFO or device put in its place is a change, not something to wait on.
  const now = fileOnDisk(change.target.abs);
  const same =
    change.before === null ? now.kind === 'none' : now.kind === 'file' && now.buffer.equals(change.before);
  if (!same) {
    throw new SvcError(
      'conflict',
      `${change.target.rel} changed on disk while the change was waiting for approval; view it again and redo the change`,
      { details: { path: change.target.rel, reason: 'changed_during_approval' } },
    );
  }
}
