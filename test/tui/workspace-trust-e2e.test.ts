/**
 * Workspace trust met on a real terminal: the built `svc` under tmux against the scripted fake
 * provider, in a workspace whose svc.toml names a stdio MCP server whose command creates a marker
 * file. Before the TUI starts, the trust dialog lists the key and the command; "continue without"
 * starts the TUI without the server (a prompt runs, the marker never appears); "trust" remembers
 * the workspace in the user's config dir and the server runs on the first prompt.
 */
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { fakeProvider, reply } from '../helpers/fake-provider';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { STEP_MS, svcInTmux } from '../helpers/tmux';

async function setup() {
  const provider = await fakeProvider([reply().text('Answered.')]);
  const ws = tmpWorkspace({ files: {} });
  const marker = join(ws, 'mcp-ran');
  writeFileSync(
    join(ws, 'svc.toml'),
    stringify({
      providers: { fake: { type: 'openai-compat', base_url: provider.url } },
      models: { large: 'fake/m1' },
      mcp: { marker: { command: 'sh', args: ['-c', `touch '${marker}'`] } },
    }),
  );
  return { ws, marker };
}

describe('workspace trust dialog (tmux)', () => {
  it('continue without: the TUI starts without the workspace MCP server', {
    timeout: 4 * STEP_MS,
  }, async () => {
    const { ws, marker } = await setup();
    const t = svcInTmux({ cwd: ws, columns: 100, rows: 30 });
    const dialog = await t.until(
      (s) => s.includes('Do you trust the files in this folder?') && s.includes('t trust'),
      'the trust dialog',
    );
    expect(dialog).toContain('mcp.marker.command runs sh -c');
    t.type('c');
    await t.until((s) => s.includes('ask anything'), 'the prompt');
    t.type('hello', 'Enter');
    await t.until((s) => s.includes('Answered.'), 'the answer');
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(join(t.home, '.config', 'svc', 'trusted-workspaces.json'))).toBe(false);
  });

  it('trust: remembered, and the server runs on the first prompt', { timeout: 4 * STEP_MS }, async () => {
    const { ws, marker } = await setup();
    const t = svcInTmux({ cwd: ws, columns: 100, rows: 30 });
    await t.until((s) => s.includes('t trust'), 'the trust dialog');
    t.type('t');
    await t.until((s) => s.includes('ask anything'), 'the prompt');
    const store = JSON.parse(readFileSync(join(t.home, '.config', 'svc', 'trusted-workspaces.json'), 'utf8'));
    expect(Object.keys(store.workspaces)).toEqual([realpathSync(ws)]);
    t.type('hello', 'Enter');
    await t.until((s) => s.includes('Answered.'), 'the answer');
    expect(existsSync(marker)).toBe(true);
  });
});
