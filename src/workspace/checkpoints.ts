/**
 * Checkpoints: git-backed snapshots of the workspace's working tree (untracked files included,
 * ignored ones and svc's data dir excluded). A checkpoint is a commit object under the private ref
 * `refs/svc/checkpoints/<id>` whose message carries its metadata, so the user's index, HEAD and
 * branch never move and checkpoints live with the repository. Restore and undo first take an
 * automatic safety checkpoint, so both can themselves be undone.
 * @module
 */
import { existsSync, readdirSync, readFileSync, rmdirSync, statSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Clock, Ids } from '../util/ids';
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

const REF_PREFIX = 'refs/svc/checkpoints/';
const META_PREFIX = 'svc-checkpoint ';
const MAX_HISTORY_FILES = 200;
const MAX_HISTORY_BYTES = 1024 * 1024;

export interface Checkpoint {
  id: string;
  name: string;
  description: string | null;
  /** The snapshot commit (parent: HEAD at creation). */
  commit: string;
  tree: string;
  /** HEAD and branch when the checkpoint was taken. */
  head: string | null;
  branch: string | null;
  session_id: string | null;
  /** Made by svc before a restore or an undo. */
  automatic: boolean;
  created_at: number;
  updated_at: number;
}

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

export interface UndoResult {
  head_before: string;
  head_after: string;
  undone: { commit: string; subject: string }[];
  safety_checkpoint: string;
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

interface Meta {
  id: string;
  name: string;
  description: string | null;
  session_id: string | null;
  head: string | null;
  branch: string | null;
  automatic: boolean;
  created_at: number;
  updated_at: number;
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
  const excludes = () => {
    const data = insideRel(deps.root, deps.dataDir);
    return data ? [data] : [];
  };
  const identity = () => {
    const date = `${Math.floor(deps.clock.now() / 1000)} +0000`;
    return {
      GIT_AUTHOR_NAME: 'svc',
      GIT_AUTHOR_EMAIL: 'svc@localhost',
      GIT_COMMITTER_NAME: 'svc',
      GIT_COMMITTER_EMAIL: 'svc@localhost',
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_DATE: date,
    };
  };

  const writeCommit = async (tree: string, parent: string | null, meta: Meta) => {
    const message = `svc checkpoint: ${meta.name}\n\n${META_PREFIX}${JSON.stringify(meta)}\n`;
    const args = ['commit-tree', tree, ...(parent ? ['-p', parent] : []), '-F', '-'];
    return (await git.run(args, { env: identity(), input: message })).stdout.trim();
  };

  const list = async (): Promise<Checkpoint[]> => {
    await repoInfo(git);
    const out = await git.run([
      'for-each-ref',
      '--format=%(objectname)%00%(tree)%00%(contents)%1e',
      REF_PREFIX,
    ]);
    const checkpoints: Checkpoint[] = [];
    for (const record of out.stdout.split('\x1e')) {
      const [commit, tree, contents] = record.replace(/^\n/, '').split('\0');
      if (!commit || !tree) continue;
      const meta = parseMeta(contents ?? '');
      if (meta) checkpoints.push({ ...meta, commit, tree });
    }
    return checkpoints.sort((a, b) => b.created_at - a.created_at || b.id.localeCompare(a.id));
  };

  const find = async (id: string): Promise<Checkpoint> => {
    if (!/^[A-Za-z0-9_-]+$/.test(id))
      throw new SvcError('invalid_input', `id: "${id}" is not a checkpoint id`);
    const all = await list();
    const found = all.find((c) => c.id === id);
    if (!found) {
      throw new SvcError(
        'not_found',
        `id: no checkpoint "${id}"${all.length ? `; see checkpoint_list (${all.length} exist)` : '; none exist yet (checkpoint_create makes one)'}`,
      );
    }
    return found;
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
      for (const guard of deps.guards()) guard({ tool: ctx.tool, sessionId: ctx.sessionId, paths });
      const diff = await git.run(['diff', '--relative', '--stat', now, checkpoint.tree]);
      await approve(ctx, {
        title: `restore checkpoint ${checkpoint.name} (${changes.length} file${changes.length === 1 ? '' : 's'})`,
        scope: id,
        details: { id, name: checkpoint.name, restore, delete: remove, stat: diff.stdout.trim() },
      });
      for (const guard of deps.guards()) guard({ tool: ctx.tool, sessionId: ctx.sessionId, paths });
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
      for (const change of changes) {
        const kind = change.status === 'A' ? 'delete' : change.status === 'D' ? 'create' : 'modify';
        if (before.has(change.path)) {
          const prior = before.get(change.path) ?? null;
          const after = kind === 'delete' ? null : readSmall(join(deps.root, change.path));
          deps.history.record({
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
      return { checkpoint, restored: restore, deleted: remove, safety_checkpoint: safety.id };
    },

    async undo(input, ctx) {
      if (input.confirm !== true) {
        throw new SvcError(
          'invalid_input',
          `confirm: checkpoint_undo hard-resets HEAD by ${input.n} commit${input.n === 1 ? '' : 's'} and discards uncommitted changes; call it again with confirm: true to proceed`,
        );
      }
      const repo = await repoInfo(git);
      if (!repo.head) throw new SvcError('conflict', 'checkpoint_undo: the repository has no commits yet');
      const count = Number((await git.run(['rev-list', '--count', 'HEAD'])).stdout.trim());
      if (input.n >= count) {
        throw new SvcError(
          'invalid_input',
          `n: HEAD has ${count} commit${count === 1 ? '' : 's'}; at most ${count - 1} can be undone (the first commit stays)`,
        );
      }
      const log = await git.run(['log', '-z', '--format=%H%x1f%s', '-n', String(input.n), 'HEAD']);
      const undone = log.stdout
        .split('\0')
        .filter(Boolean)
        .map((line) => {
          const [commit, subject] = line.split('\x1f');
          return { commit, subject: subject ?? '' };
        });
      const target = (await git.run(['rev-parse', `HEAD~${input.n}`])).stdout.trim();
      const touched = (await git.run(['diff', '--relative', '--name-only', target])).stdout
        .split('\n')
        .filter(Boolean);
      for (const guard of deps.guards()) guard({ tool: ctx.tool, sessionId: ctx.sessionId, paths: touched });
      await approve(ctx, {
        title: `checkpoint_undo: git reset --hard HEAD~${input.n}`,
        scope: `undo:${input.n}`,
        details: {
          n: input.n,
          head: repo.head,
          target,
          branch: repo.branch,
          undone,
          files: touched,
          note: 'Uncommitted changes are discarded; a safety checkpoint is taken first.',
        },
      });
      const safety = await create(
        { name: `before undoing ${input.n} commit${input.n === 1 ? '' : 's'}` },
        ctx,
        true,
      );
      await git.run(['reset', '--hard', '-q', target]);
      if (ctx.sessionId) {
        for (const path of touched.slice(0, MAX_HISTORY_FILES)) {
          deps.bus.publish(ctx.sessionId, 'file.changed', {
            session_id: ctx.sessionId,
            ...(ctx.runId ? { run_id: ctx.runId } : {}),
            tool: ctx.tool,
            path,
            change: existsSync(join(deps.root, path)) ? 'modify' : 'delete',
          });
        }
      }
      return { head_before: repo.head, head_after: target, undone, safety_checkpoint: safety.id };
    },
  };
}

function parseMeta(contents: string): Meta | undefined {
  const line = contents.split('\n').find((l) => l.startsWith(META_PREFIX));
  if (!line) return undefined;
  try {
    const meta = JSON.parse(line.slice(META_PREFIX.length)) as Partial<Meta>;
    if (typeof meta.id !== 'string' || typeof meta.name !== 'string') return undefined;
    return {
      id: meta.id,
      name: meta.name,
      description: meta.description ?? null,
      session_id: meta.session_id ?? null,
      head: meta.head ?? null,
      branch: meta.branch ?? null,
      automatic: meta.automatic === true,
      created_at: Number(meta.created_at) || 0,
      updated_at: Number(meta.updated_at) || Number(meta.created_at) || 0,
    };
  } catch {
    return undefined; // a foreign or damaged ref: not ours to list
  }
}

function metaOf(c: Checkpoint): Meta {
  return {
    id: c.id,
    name: c.name,
    description: c.description,
    session_id: c.session_id,
    head: c.head,
    branch: c.branch,
    automatic: c.automatic,
    created_at: c.created_at,
    updated_at: c.updated_at,
  };
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
