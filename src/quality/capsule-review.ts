/**
 * Reviewing and reverting an edit capsule: its diff, and writing its files back through the one
 * mutation path when every file is still as the run left it.
 * @module
 */
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Clock } from '../util/ids';
import type { OpContext } from '../workspace/context';
import { unifiedDiff } from '../workspace/diff';
import type { ChangeCommitter, PendingChange } from '../workspace/file-changes';
import type { FileHistory } from '../workspace/file-history';
import { fileOnDisk, sha256 } from '../workspace/file-io';
import type { PathResolver } from '../workspace/paths';
import type { CapsuleRepository } from './capsule-repository';
import type { CapsuleDetail, EditCapsule, RevertResult } from './capsule-types';

export interface CapsuleReviewDeps {
  get(id: string): Promise<EditCapsule>;
  repo: Pick<CapsuleRepository, 'markReverted'>;
  clock: Clock;
  bus: EventBus;
  history: FileHistory;
  changes: ChangeCommitter;
  paths: PathResolver;
}

/** A capsule with the diff of its files. */
export async function showCapsule(deps: CapsuleReviewDeps, id: string): Promise<CapsuleDetail> {
  const capsule = await deps.get(id);
  const diffs: string[] = [];
  for (const file of capsule.files) {
    const first = await deps.history.get(file.first_history_id);
    const last = await deps.history.get(file.last_history_id);
    if (!first || !last || !file.revertible) {
      diffs.push(`(no stored content for ${file.path}: ${file.change}, binary or over 1 MiB)\n`);
      continue;
    }
    diffs.push((await unifiedDiff(file.path, first.before ?? '', last.after ?? '')).diff);
  }
  return {
    ...capsule,
    diff: diffs.join(''),
    restore_hint:
      capsule.status === 'reverted'
        ? 'already reverted'
        : `revert_edit_capsule ${capsule.id} writes the files back${capsule.checkpoint_id ? `; checkpoint_restore ${capsule.checkpoint_id} restores the whole workspace to before the run` : ''}`,
  };
}

/** Writes the capsule's files back to their content before the run, when none changed since. */
export async function revertCapsule(
  deps: CapsuleReviewDeps,
  id: string,
  ctx: OpContext,
): Promise<RevertResult> {
  const capsule = await deps.get(id);
  if (capsule.status !== 'open') {
    throw new SvcError(
      'conflict',
      capsule.status === 'reverted'
        ? `capsule_id: edit capsule ${id} was already reverted`
        : `capsule_id: edit capsule ${id} is still recording (its run ${capsule.run_id} has not finished)`,
      { details: { capsule_id: id, status: capsule.status } },
    );
  }
  const pending: PendingChange[] = [];
  const conflicts: string[] = [];
  const missing: string[] = [];
  for (const file of capsule.files) {
    const first = await deps.history.get(file.first_history_id);
    const last = await deps.history.get(file.last_history_id);
    if (!first || !last || !file.revertible) {
      missing.push(file.path);
      continue;
    }
    const target = deps.paths.resolve(file.path, 'capsule_id');
    const disk = onDisk(target.abs);
    if (disk.sha !== last.after_sha) conflicts.push(file.path);
    pending.push({
      target,
      before: disk.buffer,
      after: first.before_sha === null ? null : (first.before ?? ''),
    });
  }
  const restore = capsule.checkpoint_id
    ? ` (checkpoint_restore ${capsule.checkpoint_id} restores the whole workspace to before the run)`
    : '';
  if (missing.length) {
    throw new SvcError(
      'conflict',
      `capsule_id: edit capsule ${id} cannot be reverted file by file: the file history has no content for ${missing.join(', ')} (binary or over 1 MiB)${restore}. Nothing was written`,
      { details: { capsule_id: id, reason: 'content_not_stored', paths: missing } },
    );
  }
  if (conflicts.length) {
    throw new SvcError(
      'conflict',
      `capsule_id: ${conflicts.join(', ')} changed after run ${capsule.run_id} (a later edit or outside svc), so edit capsule ${id} cannot be reverted safely; revert later capsules first${restore}. Nothing was written`,
      { details: { capsule_id: id, reason: 'changed_since', paths: conflicts } },
    );
  }
  const applied = await deps.changes.commit(pending, ctx, {
    title: `revert edit capsule ${id} (run ${capsule.run_id}, ${pending.length} file${pending.length === 1 ? '' : 's'})`,
    scope: id,
    details: { capsule_id: id, run_id: capsule.run_id, checkpoint_id: capsule.checkpoint_id },
  });
  const historyIds = applied.map((a) => a.history_id);
  await deps.repo.markReverted(id, deps.clock.now(), ctx.sessionId ?? null, historyIds);
  deps.bus.publish(capsule.session_id, 'edit_capsule.reverted', {
    session_id: capsule.session_id,
    capsule_id: id,
    run_id: capsule.run_id,
    files: applied.length,
    ...(ctx.sessionId ? { by_session_id: ctx.sessionId } : {}),
  });
  return {
    capsule: await deps.get(id),
    files: applied.map((a) => ({
      path: a.path,
      change: a.change,
      additions: a.additions,
      deletions: a.deletions,
      history_id: a.history_id,
    })),
    diff: applied.map((a) => a.diff).join(''),
  };
}

/**
 * What is at `abs` now and its hash: nothing (null); a directory, FIFO or device there is no file
 * the capsule wrote (a conflict), never a read that waits for a writer.
 */
function onDisk(abs: string): { buffer: Buffer | null; sha: string | null } {
  const now = fileOnDisk(abs);
  if (now.kind === 'none') return { buffer: null, sha: null };
  if (now.kind === 'other') return { buffer: null, sha: `not a regular file: ${now.what}` };
  return { buffer: now.buffer, sha: sha256(now.buffer) };
}
