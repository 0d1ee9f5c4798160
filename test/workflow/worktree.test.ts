/**
 * spawn_worktree_override. Pins: the sub-agent's tools, shell and system prompt see a git
 * worktree under the data dir, never the user's checkout; the user's files and git status are
 * untouched; the sub-agent's changes are committed on svc/worktree/<id> with diff and merge
 * instructions; the worktree is removed afterwards (kept on request), and a branch without
 * changes is deleted; the run is a child of the calling run; a workspace outside git is refused.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { childRuns, lastToolResult, systemOf, toolResults, toolsOf } from './helpers';

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' });
/** The user's view of the checkout: git status without svc's data dir and the test's HOME. */
const userStatus = (cwd: string) =>
  git(cwd, 'status', '--porcelain', '--untracked-files=all')
    .split('\n')
    .filter((line) => line && !/^\?\? \.(svc|home)\//.test(line))
    .join('\n');

describe('spawn_worktree_override', () => {
  it("runs the sub-agent in its own worktree; the user's tree stays untouched and the work lands on a branch", async () => {
    const { app, provider } = await agentApp(
      [
        reply().toolCall('spawn_worktree_override', {
          prompt: 'Change a.txt and add feature.txt',
          description: 'feature work',
        }),
        reply().toolCall('bash', { command: 'pwd' }),
        reply().toolCall('view', { path: 'a.txt' }),
        reply().toolCall('write', { path: 'a.txt', content: 'changed in the worktree\n' }),
        reply().toolCall('write', { path: 'feature.txt', content: 'new\n' }),
        reply().text('changed a.txt, added feature.txt'),
        reply().text('The worktree agent is done.'),
      ],
      { git: true, files: { 'a.txt': 'original\n', 'src/keep.ts': 'export const x = 1;\n' } },
    );
    const statusBefore = userStatus(app.workspace);
    expect(statusBefore).toBe('?? svc.toml');
    const parent = await app.agent.run({ prompt: 'do it in a worktree', yolo: true });
    expect(parent).toMatchObject({ status: 'completed', text: 'The worktree agent is done.' });

    // The user's checkout: same files, same status, no new file.
    expect(readFileSync(join(app.workspace, 'a.txt'), 'utf8')).toBe('original\n');
    expect(existsSync(join(app.workspace, 'feature.txt'))).toBe(false);
    expect(userStatus(app.workspace)).toBe(statusBefore);

    const override = (await app.workflows.worktrees.list())[0];
    const branch = override.branch;
    expect(branch).toMatch(/^svc\/worktree\/wt_/);
    expect(override.path.startsWith(join(app.dataDir, 'worktrees'))).toBe(true);
    // The sub-agent's shell and prompt saw the worktree.
    expect(lastToolResult(provider.requests[2])).toContain(override.path);
    expect(systemOf(provider.requests[1])).toContain(`Working directory (workspace root): ${override.path}`);
    expect(toolsOf(provider.requests[1])).not.toContain('checkpoint_restore');

    // The work is on the branch; the worktree is gone.
    expect(git(app.workspace, 'show', `${branch}:a.txt`)).toBe('changed in the worktree\n');
    expect(git(app.workspace, 'show', `${branch}:feature.txt`)).toBe('new\n');
    expect(existsSync(override.path)).toBe(false);
    expect(git(app.workspace, 'worktree', 'list', '--porcelain').match(/^worktree /gm)).toHaveLength(1);
    expect(override).toMatchObject({ status: 'removed', files_changed: 2 });

    // The report the parent read, and the lineage.
    const [result] = await toolResults(app, parent.session_id);
    expect(result.output).toContain(`Changes on branch ${branch} (2 file(s))`);
    expect(result.output).toContain(`Merge: git merge --no-ff ${branch}`);
    const [childRun] = await childRuns(app, parent.run_id);
    expect(childRun).toMatchObject({
      origin: 'subagent',
      status: 'completed',
      family_session_id: parent.session_id,
      id: override.run_id,
    });
    expect((await app.sessions.require(childRun.session_id)).metadata).toMatchObject({
      worktree_override: override.id,
      workspace_root: override.path,
    });
  });

  it('deletes a branch that holds no changes, keeps the worktree when asked, and refuses outside git', async () => {
    const { app } = await agentApp([reply().text('nothing to change'), reply().text('kept one')], {
      git: true,
      files: { 'a.txt': 'a\n' },
    });
    const call = (input: Record<string, unknown>) =>
      invokeTool(app, 'spawn_worktree_override', input, { surface: 'cli' }) as Promise<any>;
    const empty = await call({ prompt: 'look around' });
    expect(empty).toMatchObject({
      status: 'completed',
      branch: null,
      files_changed: [],
      kept: false,
      instructions: null,
      answer: 'nothing to change',
    });
    expect(git(app.workspace, 'branch', '--list', 'svc/*')).toBe('');

    const kept = await call({ prompt: 'look again', keep_worktree: true });
    expect(kept).toMatchObject({ kept: true, branch: expect.stringMatching(/^svc\/worktree\//) });
    expect(existsSync(join(kept.worktree_path, 'a.txt'))).toBe(true);
    expect(kept.instructions.cleanup).toBe(
      `git worktree remove ${kept.worktree_path} && git branch -D ${kept.branch}`,
    );
    // Called from the CLI: a new top-level session holds the sub-agent.
    expect((await app.sessions.require(kept.parent_session_id)).parent_id).toBeNull();

    const plain = await makeTestApp({ files: { 'a.txt': 'a\n' } });
    await expect(
      invokeTool(plain, 'spawn_worktree_override', { prompt: 'x' }, { surface: 'cli' }),
    ).rejects.toThrow(/is not in a git repository/);
    await expect(call({ prompt: 'x', base: 'no-such-ref' })).rejects.toThrow(
      'base: "no-such-ref" is not a commit of this repository',
    );
  });
});
