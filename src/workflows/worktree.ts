/**
 * spawn_worktree_override: a sub-agent works in its own git worktree of the workspace
 * (`git worktree add -b svc/worktree/<id> <data dir>/worktrees/<id> <base>`), so its edits never
 * touch the user's tree. The override is per run: only that sub-agent's tools, shell and system
 * prompt see the worktree (runChild `workspace`). When it ends, its changes are committed on the
 * branch, the diff is reported with merge instructions, and the worktree is removed (the branch
 * stays while it holds changes; nothing else is left behind).
 * @module
 */
import { join, relative } from 'node:path';
import type { AgentService, RunResult } from '../agent/types';
import type { Config } from '../config/schema';
import { SvcError, toSvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Redactor } from '../redact';
import type { Sandbox } from '../sandbox/sandbox';
import type { CommandSpawner } from '../sandbox/spawn';
import type { Clock, Ids } from '../util/ids';
import { makeDirs } from '../util/make-dirs';
import type { MutationGuard } from '../workspace/context';
import { configuredGitLimit, createGitRunner, type GitRunner } from '../workspace/git';
import { createWorkspace } from '../workspace/workspace';
import {
  assertDepth,
  type Caller,
  type DepthDeps,
  narrowTools,
  type ParentSessionDeps,
  parentSession,
} from './lineage';
import type { ToolCatalog } from './ports';
import type { WorkflowService } from './workflow-service';
import type { WorktreeOverride } from './worktree-store';

/** Tools a worktree sub-agent does not get: checkpoints are refs shared with the user's repository. */
const WITHHELD = [
  'checkpoint_create',
  'checkpoint_update',
  'checkpoint_restore',
  'checkpoint_delete',
  'checkpoint_undo',
];

export interface WorktreeInput {
  prompt: string;
  description?: string;
  agent: string;
  tools?: string[];
  base: string;
  keep_worktree: boolean;
  max_turns?: number;
}

export interface WorktreeResult {
  override_id: string;
  status: RunResult['status'];
  run_id: string | null;
  /** The sub-agent's session (a child of the caller's). */
  session_id: string | null;
  parent_session_id: string;
  worktree_path: string;
  /** The workspace root inside the worktree (differs when the workspace is a subdirectory of the repository). */
  workspace_root: string;
  kept: boolean;
  /** The branch with the sub-agent's work, or null when it changed nothing (then the branch is deleted). */
  branch: string | null;
  base_commit: string;
  head_commit: string | null;
  files_changed: string[];
  diff_stat: string;
  answer: string;
  error: string | null;
  instructions: { diff: string; merge: string; cherry_pick: string; cleanup: string } | null;
}

/**
 * What a worktree override uses: the repository (workspace, env), the data dir that holds the
 * worktrees, what a second workspace over the worktree is built from (config, bus, clock, ids,
 * redactor, fetch, the mutation guards, the sandbox and spawner), the session tree, the tool
 * catalog and the agent that runs the sub-agent. A tool handler's `ctx.app` has all of it.
 */
export interface WorktreeDeps extends DepthDeps {
  readonly workspace: string;
  readonly dataDir: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly config: Config;
  readonly bus: EventBus;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly redactor: Redactor;
  readonly fetch: typeof fetch;
  readonly mutationGuards: readonly MutationGuard[];
  readonly sandbox: Pick<Sandbox, 'forWorkspace'>;
  readonly spawner: Pick<CommandSpawner, 'withSandbox'>;
  readonly sessions: DepthDeps['sessions'] & ParentSessionDeps['sessions'];
  readonly tools: ToolCatalog;
  readonly agent: Pick<AgentService, 'runChild'>;
}

/** The heavy git commands' memory limit as configured (src/workspace/git.ts). */
const gitLimits = (config: Config) => configuredGitLimit(() => config);

export async function spawnWorktreeOverride(
  deps: WorktreeDeps,
  workflows: Pick<WorkflowService, 'worktrees' | 'worktreeWorkspace'>,
  caller: Caller,
  input: WorktreeInput,
): Promise<WorktreeResult> {
  const git = createGitRunner(deps.workspace, deps.env, gitLimits(deps.config));
  const top = await git.run(['rev-parse', '--show-toplevel'], { allowFail: true });
  if (top.code !== 0) {
    throw new SvcError(
      'invalid_input',
      `spawn_worktree_override: ${deps.workspace} is not in a git repository; run git init (and commit) first`,
    );
  }
  const repoRoot = top.stdout.trim();
  const baseResult = await git.run(['rev-parse', '--verify', '--quiet', `${input.base}^{commit}`], {
    allowFail: true,
  });
  if (baseResult.code !== 0) {
    throw new SvcError(
      'invalid_input',
      `base: "${input.base}" is not a commit of this repository (a repository without commits needs one first)`,
    );
  }
  const baseCommit = baseResult.stdout.trim();
  const narrowed = narrowTools(deps, input.tools, caller.ceiling, 'tools');
  const allTools = narrowed.tools ?? deps.tools.registered().map((t) => t.name);
  const tools = allTools.filter((name) => !WITHHELD.includes(name));

  const parent = await parentSession(
    deps,
    caller,
    `worktree: ${input.description ?? input.prompt.split('\n')[0].slice(0, 50)}`,
  );
  await assertDepth(deps, parent.id, 'spawn_worktree_override');
  const id = deps.ids.next('wt');
  const slug = id.toLowerCase();
  const branch = `svc/worktree/${slug}`;
  const path = join(deps.dataDir, 'worktrees', slug);
  makeDirs(join(deps.dataDir, 'worktrees'));
  const repo = createGitRunner(repoRoot, deps.env, gitLimits(deps.config));
  await repo.run(['worktree', 'add', '--quiet', '-b', branch, path, baseCommit]);
  const workspaceRoot = join(path, relative(repoRoot, deps.workspace));
  makeDirs(workspaceRoot);
  let override = await workflows.worktrees.create({
    id,
    session_id: parent.id,
    path,
    workspace_root: workspaceRoot,
    branch,
    base_commit: baseCommit,
  });
  const worktreeData = join(deps.dataDir, 'worktrees', `${slug}.data`);
  // The worktree sits inside the main data dir: its sandbox keeps the rest of that dir protected.
  const sandbox = deps.sandbox.forWorkspace(workspaceRoot, worktreeData);
  const ws = createWorkspace({
    root: workspaceRoot,
    // Its own scratch (search ignore file, job logs): never the main workspace's.
    dataDir: worktreeData,
    env: deps.env,
    config: () => deps.config,
    stores: workflows.worktreeWorkspace,
    bus: deps.bus,
    clock: deps.clock,
    ids: deps.ids,
    redactor: deps.redactor,
    fetch: deps.fetch,
    guards: () => deps.mutationGuards,
    sandbox,
    spawner: deps.spawner.withSandbox(sandbox),
  });

  let run: RunResult | undefined;
  let error: string | null = null;
  try {
    run = await deps.agent.runChild({
      parentSessionId: parent.id,
      parentRunId: caller.runId,
      prompt: `${input.prompt}\n\n(You work in a separate git worktree at ${workspaceRoot} on branch ${branch}; the user's checkout is not affected. Your changes are committed on that branch when you finish.)`,
      agent: input.agent,
      title: input.description ?? `worktree: ${input.prompt.split('\n')[0].slice(0, 50)}`,
      signal: caller.signal,
      tools,
      yolo: caller.yolo,
      unattended: caller.unattended,
      maxSteps: input.max_turns,
      workspace: { root: workspaceRoot, ws },
      metadata: { worktree_override: id, worktree_branch: branch },
    });
    override = await workflows.worktrees.update(id, { child_session_id: run.session_id, run_id: run.run_id });
    if (run.status !== 'completed')
      error = `the run ended ${run.status}${run.reason ? ` (${run.reason})` : ''}${run.error ? `: ${run.error}` : ''}`;
  } catch (failure) {
    error = deps.redactor.string(toSvcError(failure).message);
  }

  // Whatever happened, keep the work: commit it on the branch, then clean up.
  const tree = createGitRunner(path, deps.env, gitLimits(deps.config));
  let head: string | null = null;
  let files: string[] = [];
  let stat = '';
  let kept = input.keep_worktree;
  try {
    await tree.run(['add', '-A']);
    const staged = await tree.run(['diff', '--cached', '--quiet'], { allowFail: true });
    if (staged.code !== 0)
      await commit(
        tree,
        `svc worktree override ${id}: ${input.description ?? input.prompt.split('\n')[0].slice(0, 60)}`,
      );
    head = (await tree.run(['rev-parse', 'HEAD'])).stdout.trim();
    files = (await tree.run(['diff', '--name-only', `${baseCommit}..${head}`])).stdout
      .split('\n')
      .filter(Boolean);
    stat = (await tree.run(['diff', '--stat', `${baseCommit}..${head}`])).stdout.trim();
  } catch (failure) {
    kept = true;
    error ??= `could not commit the worktree's changes (${toSvcError(failure).message}); the worktree is kept`;
  }
  await ws.close().catch(() => {});
  const changed = files.length > 0 || (head !== null && head !== baseCommit);
  if (!kept) {
    await repo.run(['worktree', 'remove', '--force', path], { allowFail: true });
    if (!changed) await repo.run(['branch', '-D', branch], { allowFail: true });
  }
  override = await workflows.worktrees.update(id, {
    head_commit: head,
    files_changed: files.length,
    status: error && !run ? 'failed' : kept ? 'kept' : 'removed',
    finished_at: deps.clock.now(),
  });
  return view(override, {
    run,
    parentSessionId: parent.id,
    files,
    stat,
    error,
    branchKept: kept || changed,
  });
}

async function commit(tree: GitRunner, message: string) {
  const email = await tree.run(['config', 'user.email'], { allowFail: true });
  const identity: Record<string, string> = email.stdout.trim()
    ? {}
    : {
        GIT_AUTHOR_NAME: 'svc',
        GIT_AUTHOR_EMAIL: 'svc@localhost',
        GIT_COMMITTER_NAME: 'svc',
        GIT_COMMITTER_EMAIL: 'svc@localhost',
      };
  await tree.run(['-c', 'commit.gpgsign=false', 'commit', '--quiet', '--no-verify', '-m', message], {
    env: identity,
  });
}

function view(
  override: WorktreeOverride,
  extra: {
    run?: RunResult;
    parentSessionId: string;
    files: string[];
    stat: string;
    error: string | null;
    branchKept: boolean;
  },
): WorktreeResult {
  const kept = override.status === 'kept';
  const branch = extra.branchKept ? override.branch : null;
  return {
    override_id: override.id,
    status: extra.run?.status ?? 'failed',
    run_id: extra.run?.run_id ?? null,
    session_id: extra.run?.session_id ?? null,
    parent_session_id: extra.parentSessionId,
    worktree_path: override.path,
    workspace_root: override.workspace_root,
    kept,
    branch,
    base_commit: override.base_commit,
    head_commit: override.head_commit,
    files_changed: extra.files,
    diff_stat: extra.stat,
    answer: extra.run?.text ?? '',
    error: extra.error,
    instructions: branch
      ? {
          diff: `git diff ${override.base_commit.slice(0, 12)}...${branch}`,
          merge: `git merge --no-ff ${branch}`,
          cherry_pick: `git cherry-pick ${override.base_commit.slice(0, 12)}..${branch}`,
          cleanup: kept
            ? `git worktree remove ${override.path} && git branch -D ${branch}`
            : `git branch -D ${branch}`,
        }
      : null,
  };
}
