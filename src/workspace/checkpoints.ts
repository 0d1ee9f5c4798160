/**
 * Checkpoints: git-backed snapshots of the workspace's working tree (untracked files included,
 * ignored ones and svc's data dir excluded). A checkpoint is a commit object under the private ref
 * `refs/svc/checkpoints/<id>` whose message carries its metadata, so the user's index, HEAD and
 * branch never move and checkpoints live with the repository. Restore and undo first take an
 * automatic safety checkpoint, so both can themselves be undone.
 * @module
 */
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Clock, Ids } from '../util/ids';
import { type Checkpoint, createCheckpointRefs, type Meta, metaOf, REF_PREFIX } from './checkpoint-refs';
import { type UndoResult, undoCommits } from './checkpoint-undo';
import { approve, type MutationGuard, type OpContext } from './context';
import type { FileHistory } from './file-history';
import { looksBinary } from './file-io';
import {
  checkoutPaths,
  diffTrees,
  type GitRunner,
  insideRel,
  type RepoInfo,
  repoInfo,
  snapshotTree,
} from './git';
import { pruneEmptyDirsNoFollow, readNoFollow, removeNoFollow, type SkippedPath } from './safe-path';

export type { Checkpoint, UndoResult };

const MAX_HISTORY_FILES = 200;
const MAX_HISTORY_BYTES = 1024 * 1024;

export interface CheckpointDetail extends Checkpoint {
  /** How the workspace differs from the checkpoint now (what a restore would change). */
  changed_since: { path: string; change: 'create' | 'modify' | 'delete' }[];
}

export interface RestoreResult {
  checkpoint: Checkpoint;
  /** Files written back from the checkpoint. */
  restored: string[];
  /** Files created after the checkpoint, removed. */
  deleted: string[];
  /**
   * Files to remove that were left alone: reached through a parent that had become a symlink (or
   * no directory) by the time of the removal. Nothing is ever removed through a symlink.
   */
  skipped: SkippedPath[];
  /** Taken just before the restore; restore it to go back. Null when nothing changed. */
  safety_checkpoint: string | null;
}

export interface Checkpoints {
  create(
    input: { name?: string; description?: string },
    ctx: OpContext,
    automatic?: boolean,
  ): Promise<Checkpoint>;
  list(): Promise<Checkpoint[]>;
  get(id: string): Promise<CheckpointDetail>;
  update(id: string, patch: { name?: string; description?: string }): Promise<Checkpoint>;
  delete(id: string, ctx: OpContext): Promise<{ deleted: string }>;
  restore(id: string, ctx: OpContext): Promise<RestoreResult>;
  undo(input: { n: number; confirm: boolean }, ctx: OpContext): Promise<UndoResult>;
}

export function createCheckpoints(deps: {
  git: GitRunner;
  root: string;
  dataDir: string;
  clock: Clock;
  ids: Ids;
  bus: EventBus;
  history: FileHistory;
  guards: () => readonly MutationGuard[];
}): Checkpoints {
  const { git } = deps;
  const { writeCommit, list, find } = createCheckpointRefs(deps);
  const excludes = () => {
    const data = insideRel(deps.root, deps.dataDir);
    return data ? [data] : [];
  };
  const create = async (
    input: { name?: string; description?: string },
    ctx: OpContext,
    automatic = false,
  ): Promise<Checkpoint> => {
    const repo = await repoInfo(git);
    const tree = await snapshotTree(git, repo, excludes());
    const now = deps.clock.now();
    const id = deps.ids.next('ckpt');
    const meta: Meta = {
      id,
      name: input.name?.trim() || `checkpoint ${new Date(now).toISOString()}`,
      description: input.description ?? null,
      session_id: ctx.sessionId ?? null,
      head: repo.head,
      branch: repo.branch,
      automatic,
      created_at: now,
      updated_at: now,
    };
    const commit = await writeCommit(tree, repo.head, meta);
    await git.run(['update-ref', `${REF_PREFIX}${id}`, commit, '']);
    return { ...meta, commit, tree };
  };

  const currentChanges = async (repo: RepoInfo, checkpoint: Checkpoint) => {
    const now = await snapshotTree(git, repo, excludes());
    return { now, changes: await diffTrees(git, checkpoint.tree, now) };
  };

  return {
    create,
    list,
    async get(id) {
      const checkpoint = await find(id);
      const repo = await repoInfo(git);
      const { changes } = await currentChanges(repo, checkpoint);
      return {
        ...checkpoint,
        changed_since: changes.map((c) => ({
          path: c.path,
          change: c.status === 'A' ? 'create' : c.status === 'D' ? 'delete' : 'modify',
        })),
      };
    },

    async update(id, patch) {
      if (patch.name === undefined && patch.description === undefined) {
        throw new SvcError('invalid_input', 'name: give a new name (or description) to update');
      }
      const checkpoint = await find(id);
      const parent = (
        await git.run(['rev-parse', '-q', '--verify', `${checkpoint.commit}^`], { allowFail: true })
      ).stdout.trim();
      const meta: Meta = {
        ...metaOf(checkpoint),
        ...(patch.name !== undefined ? { name: patch.name.trim() } : {}),
        ...(patch.description !== undefined ? { description: patch.description } : {}),
        updated_at: deps.clock.now(),
      };
      const commit = await writeCommit(checkpoint.tree, parent || null, meta);
      await git.run(['update-ref', `${REF_PREFIX}${id}`, commit, checkpoint.commit]);
      return { ...meta, commit, tree: checkpoint.tree };
    },

    async delete(id, ctx) {
      const checkpoint = await find(id);
      await approve(ctx, {
        title: `delete checkpoint ${checkpoint.name} (${id})`,
        scope: id,
        details: { id, name: checkpoint.name, created_at: checkpoint.created_at },
      });
      await git.run(['update-ref', '-d', `${REF_PREFIX}${id}`, checkpoint.commit]);
      return { deleted: id };
    },

    async restore(id, ctx) {
      const checkpoint = await find(id);
      const repo = await repoInfo(git);
      const { now, changes } = await currentChanges(repo, checkpoint);
      if (changes.length === 0)
        return { checkpoint, restored: [], deleted: [], skipped: [], safety_checkpoint: null };
      const restore = changes.filter((c) => c.status !== 'A').map((c) => c.path);
      const remove = changes.filter((c) => c.status === 'A').map((c) => c.path);
      const paths = changes.map((c) => c.path);
      for (const guard of deps.guards()) await guard({ tool: ctx.tool, sessionId: ctx.sessionId, paths });
      const diff = await git.run(['diff', '--relative', '--stat', now, checkpoint.tree]);
      await approve(ctx, {
        title: `restore checkpoint ${checkpoint.name} (${changes.length} file${changes.length === 1 ? '' : 's'})`,
        scope: id,
        details: { id, name: checkpoint.name, restore, delete: remove, stat: diff.stdout.trim() },
      });
      for (const guard of deps.guards()) await guard({ tool: ctx.tool, sessionId: ctx.sessionId, paths });
      const safety = await create({ name: `before restoring ${checkpoint.name}` }, ctx, true);

      // Everything below touches paths planned before the approval and the safety checkpoint:
      // the tree may have changed since, so no path component is followed through a symlink.
      const before = new Map(paths.slice(0, MAX_HISTORY_FILES).map((p) => [p, readSmall(deps.root, p)]));
      await checkoutPaths(git, checkpoint.tree, restore);
      const deleted: string[] = [];
      const skipped: SkippedPath[] = [];
      for (const path of remove) {
        const outcome = removeNoFollow(deps.root, path);
        if (outcome.status === 'skipped') {
          skipped.push({ path, reason: outcome.reason });
          continue;
        }
        deleted.push(path);
        pruneEmptyDirsNoFollow(deps.root, path.split('/').slice(0, -1).join('/'));
      }
      const left = new Set(skipped.map((s) => s.path));
      const done = changes.filter((c) => !left.has(c.path));
      await recordRestored(deps, done, before, ctx);
      return { checkpoint, restored: restore, deleted, skipped, safety_checkpoint: safety.id };
    },

    undo: (input, ctx) =>
      undoCommits(
        {
          git,
          root: deps.root,
          bus: deps.bus,
          guards: deps.guards,
          safety: (name) => create({ name }, ctx, true),
        },
        input,
        ctx,
      ),
  };
}

/** Records each restored file in the history (when its content was read before) and announces it. */
async function recordRestored(
  deps: { root: string; history: FileHistory; bus: EventBus },
  changes: readonly { path: string; status: string }[],
  before: ReadonlyMap<string, Buffer | null>,
  ctx: OpContext,
): Promise<void> {
  for (const change of changes) {
    const kind = change.status === 'A' ? 'delete' : change.status === 'D' ? 'create' : 'modify';
    if (before.has(change.path)) {
      const prior = before.get(change.path) ?? null;
      const after = kind === 'delete' ? null : readSmall(deps.root, change.path);
      await deps.history.record({
        sessionId: ctx.sessionId,
        runId: ctx.runId,
        tool: ctx.tool,
        path: change.path,
        change: kind,
        before: prior,
        after,
        binary: (prior !== null && looksBinary(prior)) || (after !== null && looksBinary(after)),
      });
    }
    if (ctx.sessionId) {
      deps.bus.publish(ctx.sessionId, 'file.changed', {
        session_id: ctx.sessionId,
        ...(ctx.runId ? { run_id: ctx.runId } : {}),
        tool: ctx.tool,
        path: change.path,
        change: kind,
      });
    }
  }
}

/** Content for the history: a small regular file's bytes, a symlink's target path, else null. */
function readSmall(root: string, path: string): Buffer | null {
  return readNoFollow(root, path, MAX_HISTORY_BYTES);
}
