/**
 * Where checkpoints are kept: a commit object per checkpoint under `refs/svc/checkpoints/<id>`,
 * its metadata a JSON line in the commit message, written with svc's own identity so the user's
 * config never matters. Listing reads the refs; a foreign or damaged ref is skipped.
 * @module
 */
import { SvcError } from '../errors';
import type { Clock } from '../util/ids';
import { type GitRunner, repoInfo } from './git';

export const REF_PREFIX = 'refs/svc/checkpoints/';
const META_PREFIX = 'svc-checkpoint ';

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

export interface Meta {
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

export interface CheckpointRefs {
  /** A checkpoint commit of `tree` (parent: HEAD at creation) carrying `meta`; returns its hash. */
  writeCommit(tree: string, parent: string | null, meta: Meta): Promise<string>;
  /** Every checkpoint, newest first. */
  list(): Promise<Checkpoint[]>;
  /** One checkpoint, or invalid_input / not_found naming what exists. */
  find(id: string): Promise<Checkpoint>;
}

export function createCheckpointRefs(deps: { git: GitRunner; clock: Clock }): CheckpointRefs {
  const { git } = deps;
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

  return { writeCommit, list, find };
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

export function metaOf(c: Checkpoint): Meta {
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
