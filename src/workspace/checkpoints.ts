/**
 * Checkpoints: git-backed snapshots of the workspace's working tree (untracked files included,
 * ignored ones and svc's data dir excluded). A checkpoint is a commit object under the private ref
 * `refs/svc/checkpoints/<id>` whose message carries its metadata, so the user's index, HEAD and
 * branch never move and checkpoints live with the repository. Restore and undo first take an
 * automatic safety checkpoint, so both can themselves be undone.
 * @module
 */
import { readdirSync, readFileSync, rmdirSync, statSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
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
      if (changes.length === 0) return { checkpoint, restored: [], deleted: [], safety_checkpoint: null };
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

      const before = new Map(
        paths.slice(0, MAX_HISTORY_FILES).map((p) => [p, readSmall(join(deps.root, p))]),
      );
      await checkoutPaths(git, checkpoint.tree, restore);
      for (const path of remove) {
        const abs = join(deps.root, path);
        try {
          unlinkSync(abs);
        } catch {
          // already gone
        }
        pruneEmptyDirs(dirname(abs), deps.root);
      }
      await recordRestored(deps, changes, before, ctx);
      return { checkpoint, restored: restore, deleted: remove, safety_checkpoint: safety.id };
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
      const after = kind === 'delete' ? null : readSmall(join(deps.root, change.path));
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

function readSmall(abs: string): Buffer | null {
  try {
    const stat = statSync(abs);
    if (!stat.isFile() || stat.size > MAX_HISTORY_BYTES) return null;
    return readFileSync(abs);
  } catch {
    return null;
  }
}

function pruneEmptyDirs(dir: string, root: string): void {
  let current = dir;
  while (current.startsWith(root) && current !== root) {
    try {
      if (readdirSync(current).length > 0) return;
      rmdirSync(current);
    } catch {
      return;
    }
    current = dirname(current);
  }
}
