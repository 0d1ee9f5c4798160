/**
 * Plugin staging: what is fetched, and when. Pins:
 * - a local source without svc-plugin.toml is refused before anything is copied;
 * - a local copy is refused at the size and file-count caps (naming the cap, nothing written),
 *   refuses FIFOs and symlinks that leave the plugin (naming the file), and keeps symlinks that
 *   stay inside;
 * - a source that holds the data dir, or lies inside it, is refused with a clear error;
 * - staging folders older than an hour are removed when the plugin service is made;
 * - a git source is asked for before it is cloned: a denial clones nothing;
 * - loadManifest refuses a piece folder that is a symlink out of the plugin (no names listed).
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SvcError } from '../../src/errors';
import { copyPluginTree } from '../../src/plugins/copy-plugin';
import { fetchSource } from '../../src/plugins/fetch-source';
import { loadManifest } from '../../src/plugins/manifest';
import { makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { until } from '../helpers/until';
import { toolHarness } from '../tools/harness';

const MANIFEST = 'name = "kit"\nversion = "1.0.0"\n';

describe('plugin staging', () => {
  it('refuses a directory without a manifest before copying anything', async () => {
    const h = await toolHarness();
    const source = tmpWorkspace({ files: { 'big.txt': 'x'.repeat(1000), 'a/b/c.txt': 'c' } });
    await expect(h.call('plugin_install', { source })).rejects.toThrow(/no svc-plugin\.toml at the root of/);
    expect(existsSync(join(h.app.dataDir, 'plugins'))).toBe(false); // not even a staging folder
  });

  it('stops a copy at the size and file-count caps, naming the cap', async () => {
    const source = tmpWorkspace({
      files: { 'svc-plugin.toml': MANIFEST, 'a.bin': 'x'.repeat(600), 'b/c.bin': 'x'.repeat(600) },
    });
    const out = tmpWorkspace();
    await expect(
      copyPluginTree(source, join(out, 'one'), { limits: { bytes: 1000, entries: 100 } }),
    ).rejects.toThrow(/more than 1000 bytes of files \(the limit of a plugin\)/);
    await expect(
      copyPluginTree(source, join(out, 'two'), { limits: { bytes: 10_000, entries: 2 } }),
    ).rejects.toThrow(/more than 2 files and folders \(the limit of a plugin\)/);
    // Checked before anything is written.
    expect(readdirSync(out)).toEqual([]);
    await copyPluginTree(source, join(out, 'three'), { limits: { bytes: 10_000, entries: 10 } });
    expect(readFileSync(join(out, 'three', 'b', 'c.bin'), 'utf8')).toHaveLength(600);
  });

  it('reports a file system error of the copy clearly, not as an internal error', async () => {
    const source = tmpWorkspace({ files: { 'svc-plugin.toml': MANIFEST } });
    const error = await fetchSource({ type: 'path', location: source }, join(tmpWorkspace(), 'gone', 'to'), {
      env: {},
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SvcError);
    expect((error as SvcError).code).toBe('unavailable');
    expect((error as SvcError).message).toMatch(
      /^source: could not copy .*: ENOENT: no such file or directory/,
    );
  });

  it('refuses a FIFO and a symlink out of the plugin, naming them; keeps a symlink inside', async () => {
    const h = await toolHarness();
    const outside = tmpWorkspace({ files: { id_rsa: 'PRIVATE' } });

    const fifo = tmpWorkspace({ files: { 'svc-plugin.toml': MANIFEST } });
    execFileSync('mkfifo', [join(fifo, 'pipe')]);
    await expect(h.call('plugin_install', { source: fifo })).rejects.toThrow(
      /source: pipe is a FIFO \(named pipe\); a plugin holds only files, folders and symlinks/,
    );

    const leaking = tmpWorkspace({ files: { 'svc-plugin.toml': MANIFEST } });
    symlinkSync(outside, join(leaking, 'recipes'));
    await expect(h.call('plugin_install', { source: leaking })).rejects.toThrow(
      /the symlink recipes → .* points outside the plugin/,
    );
    const dangling = tmpWorkspace({ files: { 'svc-plugin.toml': MANIFEST } });
    symlinkSync(join(outside, 'gone'), join(dangling, 'x'));
    await expect(h.call('plugin_install', { source: dangling })).rejects.toThrow(
      /the symlink x → .* points to nothing/,
    );
    expect(readdirSync(join(h.app.dataDir, 'plugins'))).toEqual([]); // no staging leftovers
    expect(h.asks).toEqual([]);

    const inside = tmpWorkspace({ files: { 'svc-plugin.toml': MANIFEST, 'recipes/review.toml': 'r' } });
    symlinkSync(join(inside, 'recipes', 'review.toml'), join(inside, 'recipes', 'alias.toml'));
    await h.call('plugin_install', { source: inside });
    const dir = join(h.app.dataDir, 'plugins', 'kit');
    expect(readlinkSync(join(dir, 'recipes', 'alias.toml'))).toBe('review.toml');
    expect(readFileSync(join(dir, 'recipes', 'alias.toml'), 'utf8')).toBe('r');
  });

  it('refuses a source that holds the data dir or lies inside it', async () => {
    const workspace = tmpWorkspace({ files: { 'svc-plugin.toml': MANIFEST } });
    const h = await toolHarness({ workspace });
    await expect(h.call('plugin_install', { source: '.' })).rejects.toThrow(
      /source: .* holds svc's data dir .*; move the plugin into a directory of its own/,
    );
    const nested = join(h.app.dataDir, 'nested');
    mkdirSync(nested, { recursive: true });
    writeFileSync(join(nested, 'svc-plugin.toml'), MANIFEST);
    await expect(h.call('plugin_install', { source: nested })).rejects.toThrow(
      /source: .* is inside svc's data dir/,
    );
  });

  it('removes staging folders older than an hour when the plugin service is made', async () => {
    const workspace = tmpWorkspace();
    const root = join(workspace, '.svc', 'plugins');
    const old = join(root, '.staging-0123456789ab');
    const fresh = join(root, '.staging-ba9876543210');
    const oldSwap = join(root, '.old-0123456789ab');
    for (const dir of [old, fresh, oldSwap]) mkdirSync(join(dir, 'inner'), { recursive: true });
    const hoursAgo = new Date(Date.now() - 2 * 3600 * 1000);
    utimesSync(old, hoursAgo, hoursAgo);
    utimesSync(oldSwap, hoursAgo, hoursAgo);
    await makeTestApp({ workspace });
    await until(() => !existsSync(old) && !existsSync(oldSwap), 'the stale folders to go');
    expect(existsSync(fresh)).toBe(true); // another process may be staging there now
  });

  it('asks before cloning a git source: a denial clones nothing', async () => {
    const repo = tmpWorkspace({ git: true, files: { 'svc-plugin.toml': MANIFEST } });
    const h = await toolHarness();
    const root = join(h.app.dataDir, 'plugins');
    const seen: string[][] = [];
    const ask = async (request: { details?: Record<string, unknown> }) => {
      seen.push(existsSync(root) ? readdirSync(root) : []);
      if (request.details?.step === 'clone') throw new Error('permission denied: clone');
    };
    await expect(h.call('plugin_install', { source: `file://${repo}` }, { ask })).rejects.toThrow(
      /denied: clone/,
    );
    expect(seen).toEqual([[]]); // asked once, before anything was fetched
    expect(existsSync(root) ? readdirSync(root) : []).toEqual([]);
  });

  it('loadManifest refuses a piece folder that is a symlink out of the plugin', () => {
    const secrets = tmpWorkspace({ files: { id_rsa: 'PRIVATE' } });
    const plugin = tmpWorkspace({ files: { 'svc-plugin.toml': MANIFEST } });
    symlinkSync(secrets, join(plugin, 'recipes'));
    expect(() => loadManifest(plugin)).toThrow(/recipes: a symlink that leaves the plugin/);
    const entry = tmpWorkspace({ files: { 'svc-plugin.toml': MANIFEST, 'commands/a.md': 'a' } });
    symlinkSync(join(secrets, 'id_rsa'), join(entry, 'commands', 'id_rsa.md'));
    expect(() => loadManifest(entry)).toThrow(/commands\/id_rsa\.md: a symlink that leaves the plugin/);
  });
});
