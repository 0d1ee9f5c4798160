/**
 * The workspace and context readouts. Pins:
 * - describe_context computes the codebase summary once and caches it; refresh_codebase_context
 *   recomputes it (TOOLS-38), at most once per options.codebase_context.min_refresh_interval_seconds:
 *   a second refresh inside the interval is not rerun and says when the next is allowed (LIM-03);
 * - the cached summary reaches the agent's system prompt;
 * - commands come from the manifests (package.json scripts with the lockfile's package manager,
 *   Makefile targets, Cargo, pyproject);
 * - workspace_snapshot reports git and files as they change, and environment fields only when
 *   options.workspace_environment_fields is set, env vars by name only (CFG-29);
 * - get_repo_preflight_status passes, warns and fails on real repository states.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gitSummary } from '../../src/agent/environment';
import type { App } from '../../src/app';
import { invokeTool } from '../../src/tools/core/call-tool';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { isolatedEnv, makeTestApp, type TestClock, testClock } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';

const call = (app: App, name: string, input: Record<string, unknown> = {}) =>
  invokeTool(app, name, input, { surface: 'agent' }) as Promise<any>;

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, { cwd, stdio: 'pipe', encoding: 'utf8' }).trim();

const PACKAGE = JSON.stringify({
  scripts: { test: 'vitest run', lint: 'biome check .', build: 'tsdown', dev: 'x' },
});

describe('describe_context', () => {
  it('TOOLS-38, LIM-03: refresh recomputes the summary, at most once per the minimum interval', async () => {
    const clock: TestClock = testClock();
    const app = await makeTestApp({
      clock,
      files: { 'package.json': PACKAGE, 'src/a.ts': 'export const a = 1;\n', 'AGENTS.md': 'Rules.\n' },
      config: { options: { codebase_context: { min_refresh_interval_seconds: 60 } } },
    });
    const first = await call(app, 'describe_context');
    expect(first.context_files.found).toEqual([
      {
        path: 'AGENTS.md',
        chars: 7,
        truncated: false,
        sha256_prefix: expect.stringMatching(/^[0-9a-f]{16}$/),
      },
    ]);
    expect(first.codebase_context).toMatchObject({
      available: true,
      computations: 1,
      min_refresh_interval_seconds: 60,
      refresh: { requested: false, performed: false },
      summary: {
        files: { total: 4, truncated: false },
        primary_language: 'TypeScript',
        manifests: [{ path: 'package.json', kind: 'npm' }],
      },
    });
    const typescript = (r: any) =>
      r.codebase_context.summary.languages.find((l: any) => l.language === 'TypeScript');
    expect(typescript(first).files).toBe(1);

    writeFileSync(join(app.workspace, 'src', 'b.ts'), 'export const b = 2;\n');
    // Without refresh: the cached summary, unchanged.
    expect(typescript(await call(app, 'describe_context')).files).toBe(1);

    clock.advance(61_000);
    const refreshed = await call(app, 'describe_context', { refresh_codebase_context: true });
    expect(refreshed.codebase_context).toMatchObject({
      computations: 2,
      computed_at: clock.now(),
      refresh: {
        requested: true,
        performed: true,
        reason: 'refreshed',
        next_allowed_at: clock.now() + 60_000,
      },
    });
    expect(typescript(refreshed).files).toBe(2);

    writeFileSync(join(app.workspace, 'src', 'c.ts'), 'export const c = 3;\n');
    clock.advance(10_000);
    const limited = await call(app, 'describe_context', { refresh_codebase_context: true });
    expect(limited.codebase_context).toMatchObject({
      computations: 2,
      age_seconds: 10,
      refresh: {
        requested: true,
        performed: false,
        reason: 'rate_limited',
        next_allowed_at: clock.now() + 50_000,
        retry_after_seconds: 50,
      },
    });
    expect(typescript(limited).files).toBe(2);
    expect(limited.warnings).toEqual([expect.stringMatching(/^codebase_context_rate_limited: .*in 50s/)]);

    clock.advance(50_000);
    const again = await call(app, 'describe_context', { refresh_codebase_context: true });
    expect(again.codebase_context).toMatchObject({ computations: 3, refresh: { performed: true } });
    expect(typescript(again).files).toBe(3);
  });

  it('puts the cached summary into the agent prompt, and the prompt stack shows it', async () => {
    const { app, provider } = await agentApp([reply().text('first'), reply().text('second')], {
      files: { 'package.json': PACKAGE, 'pnpm-lock.yaml': 'lockfileVersion: 9\n', 'lib/x.py': 'x = 1\n' },
    });
    const before = await app.agent.run({ prompt: 'one' });
    expect(provider.requests[0].body.messages[0].content).not.toContain('# Codebase summary');
    const described = await call(app, 'describe_context');
    expect(described.codebase_context.summary.commands).toMatchObject({
      test: [{ command: 'pnpm test', source: 'package.json scripts.test' }],
      lint: [{ command: 'pnpm run lint', source: 'package.json scripts.lint' }],
      build: [{ command: 'pnpm run build', source: 'package.json scripts.build' }],
    });
    await app.agent.run({ sessionId: before.session_id, prompt: 'two' });
    const system = provider.requests[1].body.messages[0].content as string;
    expect(system).toContain('# Codebase summary (cached 2026-11-22 12:00 UTC');
    expect(system).toContain('Commands: test `pnpm test`; lint `pnpm run lint`; build `pnpm run build`');
    const status = await call(app, 'get_prompt_stack_status', { session_id: before.session_id });
    expect(status.last_build.sections.map((s: any) => s.source)).toContain('codebase_context');
    expect(status.stability.changed_sections).toMatchObject({ extension: 1 });
  });

  it('detects commands from Makefile targets, Cargo and pyproject', async () => {
    const app = await makeTestApp({
      files: {
        Makefile: 'build:\n\tcc x.c\ntest: build\n\t./run\nlint:\n\tclang-tidy x.c\nVAR := 1\n',
        'Cargo.toml': '[package]\nname = "x"\n',
        'pyproject.toml':
          '[build-system]\nrequires = []\n[tool.ruff]\nline-length = 100\n[tool.pytest.ini_options]\n',
        'x.c': 'int main(){}\n',
      },
    });
    const { commands, manifests } = (await call(app, 'describe_context')).codebase_context.summary;
    expect(manifests.map((m: any) => [m.path, m.kind])).toEqual([
      ['Cargo.toml', 'cargo'],
      ['Makefile', 'make'],
      ['pyproject.toml', 'python'],
    ]);
    expect(commands.test.map((c: any) => c.command)).toEqual(['make test', 'cargo test', 'pytest']);
    expect(commands.lint.map((c: any) => c.command)).toEqual(['make lint', 'cargo clippy', 'ruff check .']);
    expect(commands.build.map((c: any) => c.command)).toEqual([
      'make build',
      'cargo build',
      'python -m build',
    ]);
    expect(commands.format.map((c: any) => c.command)).toEqual(['cargo fmt', 'ruff format .']);
  });

  it("GEN-09: describe_context reads the workspace's git status now, not the summary a run read in the last second", async () => {
    const app = await makeTestApp({ git: true, files: { 'package.json': PACKAGE } });
    const before = (await call(app, 'describe_context')).environment.git.changed_paths;
    // A run's prompt reads the shared summary (kept for a second); then a file appears.
    await gitSummary(app.workspace);
    writeFileSync(join(app.workspace, 'new-file.md'), '# new\n');
    expect((await call(app, 'describe_context')).environment.git.changed_paths).toBe(before + 1);
  });
});

describe('workspace_snapshot', () => {
  it('CFG-29: environment fields only when options.workspace_environment_fields is set, env vars by name', async () => {
    const plain = await makeTestApp({ files: { 'a.ts': 'x\n' } });
    const unset = await call(plain, 'workspace_snapshot');
    expect(unset).not.toHaveProperty('environment');

    const workspace = tmpWorkspace({ files: { 'a.ts': 'x\n' } });
    const env = isolatedEnv(workspace, {
      SHELL: '/bin/zsh',
      CI: 'true',
      DEPLOY_TOKEN: 'tok-very-secret-1234',
    });
    const configured = await makeTestApp({
      workspace,
      env,
      config: {
        options: {
          workspace_environment_fields: { cpu_count: false, env_vars: ['DEPLOY_TOKEN', 'CI', 'NOT_SET'] },
        },
      },
    });
    const snapshot = await call(configured, 'workspace_snapshot');
    expect(snapshot.environment).toEqual({
      platform: process.platform,
      arch: process.arch,
      node_version: process.versions.node,
      shell: 'zsh',
      env_vars: [
        { name: 'CI', set: true },
        { name: 'DEPLOY_TOKEN', set: true },
        { name: 'NOT_SET', set: false },
      ],
    });
    expect(JSON.stringify(snapshot)).not.toContain('tok-very-secret-1234');

    const empty = await makeTestApp({ config: { options: { workspace_environment_fields: {} } } });
    expect(Object.keys((await call(empty, 'workspace_snapshot')).environment)).toEqual([
      'platform',
      'arch',
      'node_version',
      'shell',
      'cpu_count',
    ]);
  });

  it("accepts the docs' workspace_environment_fields example (docs/readouts.md)", async () => {
    const readme = readFileSync(new URL('../../docs/readouts.md', import.meta.url), 'utf8');
    const example = readme.split('```toml\n[options.workspace_environment_fields]')[1]?.split('```')[0];
    expect(example).toBeDefined();
    const workspace = tmpWorkspace();
    writeFileSync(join(workspace, 'svc.toml'), `[options.workspace_environment_fields]${example}`);
    const app = await makeTestApp({ workspace, env: isolatedEnv(workspace, { CI: '1' }) });
    const snapshot = await call(app, 'workspace_snapshot');
    expect(snapshot.environment).toMatchObject({
      total_memory_mb: expect.any(Number),
      env_vars: [
        { name: 'CI', set: true },
        { name: 'EDITOR', set: false },
      ],
    });
  });

  it('follows git and the files as they change', async () => {
    const app = await makeTestApp({
      git: true,
      files: { '.gitignore': '.svc/\n.home/\nbuild/\n', 'src/a.ts': 'a\n', 'README.md': '# x\n' },
    });
    const clean = await call(app, 'workspace_snapshot');
    expect(clean.git).toMatchObject({
      is_repo: true,
      branch: 'main',
      head: git(app.workspace, 'rev-parse', 'HEAD'),
      dirty: false,
      changed: 0,
      untracked: 0,
    });
    expect(clean.files).toMatchObject({ total: 3, directories: 1, truncated: false });
    expect(clean.primary_language).toBe('TypeScript');

    writeFileSync(join(app.workspace, 'src', 'a.ts'), 'changed\n');
    writeFileSync(join(app.workspace, 'src', 'b.py'), 'b = 1\n');
    mkdirSync(join(app.workspace, 'build'));
    writeFileSync(join(app.workspace, 'build', 'out.js'), 'ignored\n');
    git(app.workspace, 'add', 'src/a.ts');
    const dirty = await call(app, 'workspace_snapshot');
    expect(dirty.git).toMatchObject({ dirty: true, staged: 1, unstaged: 0, changed: 1, untracked: 1 });
    expect(dirty.files.total).toBe(4);
    expect(dirty.languages.map((l: any) => l.language)).toEqual(
      expect.arrayContaining(['Python', 'TypeScript']),
    );

    git(app.workspace, 'checkout', '-qb', 'feature');
    expect((await call(app, 'workspace_snapshot')).git.branch).toBe('feature');
  });
});

describe('get_repo_preflight_status', () => {
  const statusOf = (result: any) => Object.fromEntries(result.checks.map((c: any) => [c.id, c.status]));

  it('a repository git cannot read is a failed working tree, not a clean one', async () => {
    const app = await makeTestApp({ files: { 'a.txt': 'a\n' }, git: true });
    // Every object overwritten: `git status` fails ("inflate: data stream error").
    const objects = join(app.workspace, '.git', 'objects');
    for (const dir of readdirSync(objects).filter((d) => /^[0-9a-f]{2}$/.test(d)))
      for (const file of readdirSync(join(objects, dir))) {
        const path = join(objects, dir, file);
        chmodSync(path, 0o644);
        writeFileSync(path, 'garbage');
      }
    const result = await call(app, 'get_repo_preflight_status');
    expect(result.status).toBe('fail');
    const tree = result.checks.find((c: any) => c.id === 'working_tree');
    expect(tree.status).toBe('fail');
    expect(tree.summary).toMatch(
      /^git cannot read the working tree \(git status failed: .+\); the repository may be damaged: run git fsck$/,
    );
    const snapshot = await call(app, 'workspace_snapshot');
    expect(snapshot.git.reason).toMatch(/^git status failed: /);
  });

  it('fails outside a git repository', async () => {
    const app = await makeTestApp({ files: { 'a.txt': 'a\n' } });
    const result = await call(app, 'get_repo_preflight_status');
    expect(result.status).toBe('fail');
    expect(statusOf(result)).toMatchObject({
      git_repository: 'fail',
      large_files: 'pass',
      working_tree: 'warn',
    });
    expect(result.checks.find((c: any) => c.id === 'working_tree').summary).toBe(
      'skipped: not a git repository',
    );
  });

  it('passes a clean repository in sync with its upstream, and warns and fails as it drifts', async () => {
    const app = await makeTestApp({ git: true, files: { '.gitignore': '.svc/\n.home/\n', 'a.txt': 'a\n' } });
    const ws = app.workspace;
    git(ws, 'branch', 'upstream-main');
    git(ws, 'branch', '--set-upstream-to=upstream-main');
    const clean = await call(app, 'get_repo_preflight_status');
    expect(clean).toMatchObject({ status: 'pass', counts: { pass: 8, warn: 0, fail: 0 } });
    expect(clean.checks.map((c: any) => c.id)).toEqual([
      'git_repository',
      'working_tree',
      'branch',
      'upstream',
      'operation_in_progress',
      'untracked_files',
      'large_files',
      'data_dir_ignored',
    ]);
    expect(clean.checks.find((c: any) => c.id === 'upstream').summary).toBe('up to date with upstream-main');

    // Behind the upstream, a dirty tree and a 6 MiB file.
    git(ws, 'checkout', '-q', 'upstream-main');
    writeFileSync(join(ws, 'b.txt'), 'b\n');
    git(ws, 'add', 'b.txt');
    git(ws, 'commit', '-qm', 'upstream work');
    git(ws, 'checkout', '-q', 'main');
    writeFileSync(join(ws, 'a.txt'), 'changed\n');
    writeFileSync(join(ws, 'big.bin'), '');
    truncateSync(join(ws, 'big.bin'), 6 * 1024 * 1024);
    const drifted = await call(app, 'get_repo_preflight_status');
    expect(drifted.status).toBe('warn');
    expect(statusOf(drifted)).toMatchObject({ working_tree: 'warn', upstream: 'warn', large_files: 'warn' });
    expect(drifted.checks.find((c: any) => c.id === 'upstream').detail).toEqual({
      upstream: 'upstream-main',
      ahead: 0,
      behind: 1,
    });
    expect(drifted.checks.find((c: any) => c.id === 'large_files').detail.files).toEqual([
      { path: 'big.bin', bytes: 6 * 1024 * 1024 },
    ]);

    // A conflicting merge in progress fails.
    git(ws, 'checkout', '-q', '--', 'a.txt');
    git(ws, 'checkout', '-qb', 'other');
    writeFileSync(join(ws, 'a.txt'), 'other\n');
    git(ws, 'commit', '-qam', 'other side');
    git(ws, 'checkout', '-q', 'main');
    writeFileSync(join(ws, 'a.txt'), 'main side\n');
    git(ws, 'commit', '-qam', 'main side');
    try {
      git(ws, 'merge', 'other');
    } catch {
      // the conflict is the point
    }
    const merging = await call(app, 'get_repo_preflight_status');
    expect(merging.status).toBe('fail');
    expect(statusOf(merging)).toMatchObject({ operation_in_progress: 'fail', working_tree: 'fail' });
    expect(merging.checks.find((c: any) => c.id === 'operation_in_progress').detail).toEqual({
      operations: ['merge'],
    });
  });

  it('warns when svc data directory inside the repository is not ignored', async () => {
    const app = await makeTestApp({ git: true, files: { 'a.txt': 'a\n' } });
    const result = await call(app, 'get_repo_preflight_status');
    expect(result.checks.find((c: any) => c.id === 'data_dir_ignored')).toEqual({
      id: 'data_dir_ignored',
      status: 'warn',
      summary:
        '.svc/ is not ignored by git: svc.db and logs would show as untracked; add ".svc/" to .gitignore',
      detail: { data_dir: '.svc/', inside_repository: true, ignored: false },
    });
  });
});
