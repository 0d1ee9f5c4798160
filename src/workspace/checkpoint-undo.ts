/**
 * `checkpoint_undo`: hard-reset HEAD by n commits, after the guards, the approval (with what the
 * reset discards) and a safety checkpoint, so the undo itself can be restored.
 * @module
 */
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Checkpoint } from './checkpoint-refs';
import { approve, type MutationGuard, type OpContext } from './context';
import { type GitRunner, repoInfo } from './git';
import { lstatNoFollow } from './safe-path';

const MAX_HISTORY_FILES = 200;

export interface UndoResult {
  head_before: string;
  head_after: string;
  undone: { commit: string; subject: string }[];
  safety_checkpoint: string;
}

export interface UndoDeps {
  git: GitRunner;
  root: string;
  bus: EventBus;
  guards: () => readonly MutationGuard[];
  /** Take the automatic safety checkpoint, named for what follows. */
  safety(name: string): Promise<Checkpoint>;
}

export async function undoCommits(
  deps: UndoDeps,
  input: { n: number; confirm: boolean },
  ctx: OpContext,
): Promise<UndoResult> {
  const { git } = deps;
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
  for (const guard of deps.guards())
    await guard({ tool: ctx.tool, sessionId: ctx.sessionId, paths: touched });
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
  const safety = await deps.safety(`before undoing ${input.n} commit${input.n === 1 ? '' : 's'}`);
  await git.run(['reset', '--hard', '-q', target]);
  if (ctx.sessionId) {
    for (const path of touched.slice(0, MAX_HISTORY_FILES)) {
      deps.bus.publish(ctx.sessionId, 'file.changed', {
        session_id: ctx.sessionId,
        ...(ctx.runId ? { run_id: ctx.runId } : {}),
        tool: ctx.tool,
        path,
        change: lstatNoFollow(deps.root, path) ? 'modify' : 'delete',
      });
    }
  }
  return { head_before: repo.head, head_after: target, undone, safety_checkpoint: safety.id };
}
