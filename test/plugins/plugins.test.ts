/**
 * Plugins. Pins:
 * - TOOLS-57: plugin_list, plugin_install, plugin_update, plugin_remove are registered;
 * - TOOLS-58: install, update and remove ask for approval with the manifest summary, and a denial
 *   changes nothing (no files, no record, no config);
 * - a plugin installs from a local directory and from a local git repository (file://), and its
 *   pieces are discovered: MCP servers and agent kinds in the config (also in a fresh App over the
 *   same data dir), packs in the packs discovery, recipes and commands as contributions;
 * - update swaps in the new version; uninstall removes files, config pieces and packs; every
 *   change is recorded.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allTools } from '../../src/tools/index';
import { makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { toolHarness } from '../tools/harness';

function manifest(version: string, extra = '') {
  return `name = "review-kit"
version = "${version}"
description = "Code review helpers"

[mcp.reviewer]
command = "node"
args = ["\${SVC_PLUGIN_DIR}/server.js", "--strict"]
disabled = true

[agents.reviewer]
description = "Reviews diffs"
read_only = true
mode = "primary"
${extra}`;
}

const PLUGIN_FILES = (version: string) => ({
  'svc-plugin.toml': manifest(version),
  'server.js': '// an MCP server would live here\n',
  'packs/careful/pack.toml': 'name = "careful"\ndescription = "Careful review pack"\n',
  'recipes/review.toml': 'name = "review"\n',
  'commands/review.md': 'Review the current diff.\n',
});

describe('plugins', () => {
  it('TOOLS-57: the plugin tools are registered', () => {
    const names = allTools.map((t) => t.name);
    for (const name of ['plugin_list', 'plugin_install', 'plugin_update', 'plugin_remove'])
      expect(names).toContain(name);
  });

  it('TOOLS-58: installs from a local directory after approval; its pieces are discovered', async () => {
    const source = tmpWorkspace({ files: PLUGIN_FILES('1.0.0') });
    const h = await toolHarness({ config: { options: { operating_packs: true } } });
    const installed = await h.call('plugin_install', { source });
    const dir = join(h.app.dataDir, 'plugins', 'review-kit');
    expect(h.asks).toEqual([
      {
        tool: 'plugin_install',
        title: `install plugin "review-kit" 1.0.0 from ${source}`,
        scope: 'plugin_install:review-kit',
        details: {
          name: 'review-kit',
          version: '1.0.0',
          description: 'Code review helpers',
          source,
          source_type: 'path',
          commit: null,
          provides: {
            mcp_servers: ['reviewer'],
            agents: ['reviewer'],
            packs: ['careful'],
            recipes: ['review.toml'],
            commands: ['review'],
          },
          // What it runs (finding: the prompt named the servers only).
          command: `mcp reviewer: node ${dir}/server.js --strict (disabled)`,
          mcp_servers: {
            reviewer: {
              type: 'stdio',
              command: 'node',
              args: [`${dir}/server.js`, '--strict'],
              command_line: `node ${dir}/server.js --strict`,
              disabled: true,
            },
          },
          agents: {
            reviewer: {
              description: 'Reviews diffs',
              mode: 'primary',
              read_only: true,
              tools: 'default',
              prompt_chars: 0,
            },
          },
        },
      },
    ]);
    expect(installed).toMatchObject({
      action: 'install',
      name: 'review-kit',
      version: '1.0.0',
      warnings: [],
    });

    expect(h.app.config.mcp.reviewer).toEqual({
      command: 'node',
      args: [`${dir}/server.js`, '--strict'],
      disabled: true,
    });
    expect(h.app.agent.kinds().find((k) => k.id === 'reviewer')).toMatchObject({
      description: 'Reviews diffs',
      read_only: true,
    });
    expect(h.app.packs?.discover().packs.find((p) => p.name === 'careful')).toMatchObject({
      source: 'plugin',
      valid: true,
    });
    expect(h.app.plugins.contributions('commands')).toEqual([
      { plugin: 'review-kit', dir: join(dir, 'commands') },
    ]);
    expect(h.app.plugins.contributions('recipes')).toEqual([
      { plugin: 'review-kit', dir: join(dir, 'recipes') },
    ]);
    expect(h.app.loaded.provenance.get('mcp.reviewer.command')).toMatchObject({
      kind: 'plugin',
      label: 'plugin review-kit',
    });

    const listed = await h.call('plugin_list', {});
    expect(listed.plugins).toEqual([
      expect.objectContaining({
        name: 'review-kit',
        version: '1.0.0',
        status: 'installed',
        source: { type: 'path', location: source, commit: null },
        dir,
      }),
    ]);
    expect(listed.recent_changes).toEqual([
      expect.objectContaining({
        name: 'review-kit',
        action: 'install',
        by: 'agent',
        session_id: h.sessionId,
      }),
    ]);

    // A fresh App over the same data dir loads the plugin's config layer at start-up.
    const fresh = await makeTestApp({ workspace: h.app.workspace });
    expect(fresh.config.mcp.reviewer?.args).toEqual([`${dir}/server.js`, '--strict']);
    expect(fresh.agent.kinds().map((k) => k.id)).toContain('reviewer');

    await expect(h.call('plugin_install', { source })).rejects.toThrow(
      /already installed; use plugin_update/,
    );
  });

  it('TOOLS-58: a denied install, update or removal changes nothing', async () => {
    const source = tmpWorkspace({ files: PLUGIN_FILES('1.0.0') });
    const h = await toolHarness();
    h.denyAll();
    await expect(h.call('plugin_install', { source })).rejects.toThrow(/denied/);
    expect(h.asks).toHaveLength(1);
    expect((await h.call('plugin_list', {})).plugins).toEqual([]);
    expect(readdirSync(join(h.app.dataDir, 'plugins'))).toEqual([]); // no staging leftovers
    expect(h.app.config.mcp.reviewer).toBeUndefined();

    // Installed by the operator from the CLI surface (their own call), then denied to the agent.
    await h.app.plugins.install({ source }, { ask: async () => {}, by: 'cli' });
    writeFileSync(join(source, 'svc-plugin.toml'), manifest('2.0.0'));
    await expect(h.call('plugin_update', { name: 'review-kit' })).rejects.toThrow(/denied/);
    await expect(h.call('plugin_remove', { name: 'review-kit' })).rejects.toThrow(/denied/);
    expect(h.asks.map((a) => a.tool)).toEqual(['plugin_install', 'plugin_update', 'plugin_remove']);
    expect((await h.call('plugin_list', {})).plugins).toEqual([
      expect.objectContaining({ name: 'review-kit', version: '1.0.0', status: 'installed' }),
    ]);
    expect(h.app.config.mcp.reviewer).toBeDefined();
  });

  it('installs from a local git repository (file://), updates to a new commit, and uninstalls cleanly', async () => {
    const repo = tmpWorkspace({ git: true, files: PLUGIN_FILES('1.0.0') }); // committed as the initial commit
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd: repo, stdio: 'pipe' }).toString().trim();
    const first = git('rev-parse', 'HEAD');
    const h = await toolHarness({ config: { options: { operating_packs: true } } });

    const installed = await h.call('plugin_install', { source: `file://${repo}` });
    expect(installed).toMatchObject({
      action: 'install',
      name: 'review-kit',
      version: '1.0.0',
      source: `file://${repo}`,
    });
    // Asked before the clone (nothing fetched yet), then with what was fetched.
    expect(h.asks[0]).toMatchObject({
      tool: 'plugin_install',
      scope: `plugin_install:clone file://${repo}`,
      details: { source: `file://${repo}`, source_type: 'git', step: 'clone' },
    });
    expect(h.asks[1].details).toMatchObject({ source_type: 'git', commit: first });
    const dir = join(h.app.dataDir, 'plugins', 'review-kit');
    expect(existsSync(join(dir, '.git'))).toBe(true);

    writeFileSync(
      join(repo, 'svc-plugin.toml'),
      manifest('1.1.0').replace('Reviews diffs', 'Reviews diffs, twice'),
    );
    git('commit', '-q', '-am', 'plugin 1.1.0');
    const second = git('rev-parse', 'HEAD');
    const updated = await h.call('plugin_update', { name: 'review-kit' });
    expect(updated).toMatchObject({ action: 'update', version: '1.1.0', previous_version: '1.0.0' });
    expect(h.asks[2]).toMatchObject({ tool: 'plugin_update', details: { step: 'clone' } });
    expect(h.asks[3]).toMatchObject({
      tool: 'plugin_update',
      title: `update plugin "review-kit" 1.0.0 → 1.1.0 from file://${repo}`,
    });
    expect(h.asks[3].details).toMatchObject({ commit: second, previous_commit: first });
    expect(h.app.agent.kinds().find((k) => k.id === 'reviewer')?.description).toBe('Reviews diffs, twice');
    expect((await h.call('plugin_list', {})).plugins[0].source).toEqual({
      type: 'git',
      location: `file://${repo}`,
      commit: second,
    });

    const removed = await h.call('plugin_remove', { name: 'review-kit' });
    expect(removed).toMatchObject({ action: 'remove', name: 'review-kit', version: '1.1.0' });
    expect(h.asks.map((a) => a.tool)).toEqual([
      'plugin_install',
      'plugin_install',
      'plugin_update',
      'plugin_update',
      'plugin_remove',
    ]);
    expect(existsSync(dir)).toBe(false);
    expect(h.app.config.mcp.reviewer).toBeUndefined();
    expect(h.app.agent.kinds().map((k) => k.id)).not.toContain('reviewer');
    expect(h.app.packs?.discover().packs.map((p) => p.name)).not.toContain('careful');
    expect(h.app.plugins.contributions('commands')).toEqual([]);
    const listed = await h.call('plugin_list', {});
    expect(listed.plugins).toEqual([]);
    expect(
      listed.recent_changes.map((c: { action: string; version: string }) => [c.action, c.version]),
    ).toEqual([
      ['remove', '1.1.0'],
      ['update', '1.1.0'],
      ['install', '1.0.0'],
    ]);
  });

  it('refuses bad manifests and clashes with configured pieces, naming the field', async () => {
    const h = await toolHarness({ config: { mcp: { reviewer: { command: 'other' } } } });
    const clash = tmpWorkspace({ files: PLUGIN_FILES('1.0.0') });
    await expect(h.call('plugin_install', { source: clash })).rejects.toThrow(
      /mcp server "reviewer" is already defined by .*svc\.toml/,
    );
    const noName = tmpWorkspace({ files: { 'svc-plugin.toml': 'version = "1"\n' } });
    await expect(h.call('plugin_install', { source: noName })).rejects.toThrow(/svc-plugin.toml: name:/);
    const unknownKey = tmpWorkspace({ files: { 'svc-plugin.toml': 'name = "x"\nhooks = 1\n' } });
    await expect(h.call('plugin_install', { source: unknownKey })).rejects.toThrow(/unknown key\(s\) hooks/);
    const empty = tmpWorkspace();
    await expect(h.call('plugin_install', { source: empty })).rejects.toThrow(/no svc-plugin.toml/);
    await expect(h.call('plugin_install', { source: join(empty, 'missing') })).rejects.toThrow(
      /no directory/,
    );
    await expect(h.call('plugin_remove', { name: 'ghost' })).rejects.toThrow(/no installed plugin "ghost"/);
    expect(h.asks).toEqual([]);
  });
});
