/**
 * Language servers out of the box (issue 22 item 1), with the real typescript-language-server
 * spawned on a TypeScript workspace that holds a type error. Pins:
 * - without any [lsp] config the typescript server is detected (tsconfig.json), found (svc's own
 *   typescript-language-server dependency) and diagnostics is registered;
 * - diagnostics reports the type error; lsp_status / `svc config show-lsp` says found and running;
 * - write, edit and multiedit append the touched file's new diagnostics (errors first, capped),
 *   and `options.lsp.diagnostics_after_edit = false` turns that off;
 * - a server that crashed is started again on the next use; an idle one is stopped;
 * - a missing built-in names its install command.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toolHarness } from './harness';

const TS_FILES = {
  'package.json': '{ "name": "demo", "private": true }\n',
  'tsconfig.json':
    '{ "compilerOptions": { "strict": true, "noEmit": true, "target": "ES2022" }, "include": ["src"] }\n',
  'src/a.ts': 'export const count: number = 1;\n',
  'src/b.ts': "import { count } from './a';\nexport const label: string = count;\n",
};

const wait = (lsp: Record<string, unknown> = {}) => ({
  options: { lsp: { diagnostics_wait_seconds: 60, ...lsp } },
});

// The real server starts in a few seconds on an idle machine; a loaded one may need more.
describe('language servers out of the box (real typescript-language-server)', { timeout: 120_000 }, () => {
  it('LSP-01: detects TypeScript, reports the type error, and says found and running', async () => {
    const h = await toolHarness({ files: TS_FILES, config: wait() });
    expect(h.app.tools.get('diagnostics')).toBeDefined();
    const before = await h.call('lsp_status', {});
    expect(before.servers.find((s: { id: string }) => s.id === 'typescript')).toMatchObject({
      source: 'builtin',
      state: 'found',
      detected: true,
      running: false,
    });
    const result = await h.call('diagnostics', { path: 'src/b.ts', wait_seconds: 60 });
    expect(result.server).toBe('typescript');
    expect(result.counts.error).toBe(1);
    expect(result.diagnostics[0]).toMatchObject({
      line: 2,
      severity: 'error',
      message: expect.stringContaining("Type 'number' is not assignable to type 'string'"),
    });
    const after = await h.call('lsp_status', {});
    expect(after.servers.find((s: { id: string }) => s.id === 'typescript')).toMatchObject({ running: true });
    const text = h.app.tools.require('lsp_status').surfaces?.cli;
    const render = (Array.isArray(text) ? text[0] : text)?.text?.(after, {});
    expect(render).toMatch(/typescript\s+builtin .*found: .*--stdio \(running\)/);
  });

  it('LSP-02: write and edit append the new diagnostics of the touched file; fixing it says no errors', async () => {
    const h = await toolHarness({ files: TS_FILES, config: wait() });
    const written = await h.call('write', {
      path: 'src/c.ts',
      content:
        'export function twice(x: number): number {\n  return x * 2;\n}\nexport const bad: number = twice("2");\n',
    });
    expect(written.diagnostics.files[0]).toMatchObject({ path: 'src/c.ts', server: 'typescript' });
    expect(written.diagnostics.files[0].diagnostics[0]).toMatchObject({ line: 4, severity: 'error' });
    const text = h.modelText('write', written);
    expect(text).toContain('Diagnostics after this change (1 error):');
    expect(text).toMatch(/src\/c\.ts:4:\d+ error: Argument of type 'string' is not assignable/);

    await h.call('view', { path: 'src/c.ts' });
    const fixed = await h.call('edit', {
      path: 'src/c.ts',
      old_string: 'twice("2")',
      new_string: 'twice(2)',
    });
    expect(fixed.diagnostics.files[0].counts.error).toBe(0);
    expect(h.modelText('edit', fixed)).toContain('Diagnostics: no errors in src/c.ts.');

    await h.call('view', { path: 'src/b.ts' });
    const multi = await h.call('multiedit', {
      path: 'src/b.ts',
      edits: [{ old_string: 'label: string', new_string: 'label: number' }],
    });
    expect(multi.diagnostics.files[0].counts.error).toBe(0);
  });

  it('LSP-03: caps the list (errors first) and can be turned off', async () => {
    const many = Array.from({ length: 6 }, (_, i) => `export const v${i}: string = ${i};`).join('\n');
    const h = await toolHarness({ files: TS_FILES, config: wait({ max_diagnostics: 2 }) });
    const written = await h.call('write', { path: 'src/many.ts', content: `${many}\n` });
    expect(written.diagnostics.files[0].diagnostics).toHaveLength(2);
    expect(written.diagnostics.files[0].counts.error).toBe(6);
    expect(written.diagnostics.omitted).toBe(4);
    expect(h.modelText('write', written)).toContain('… 4 more (run diagnostics on the file for all of them)');

    const off = await toolHarness({ files: TS_FILES, config: wait({ diagnostics_after_edit: false }) });
    const plain = await off.call('write', { path: 'src/many.ts', content: `${many}\n` });
    expect(plain.diagnostics).toBeUndefined();
    expect(off.modelText('write', plain)).not.toContain('Diagnostics');
  });

  it('LSP-04: a crashed server is started again on the next use; an idle one is stopped', async () => {
    const h = await toolHarness({ files: TS_FILES, config: wait({ idle_minutes: 0.05 }) });
    const first = await h.call('diagnostics', { path: 'src/b.ts', wait_seconds: 60 });
    expect(first.counts.error).toBe(1);
    const pid = h.app.ws.lsp.status().find((s) => s.id === 'typescript')?.running;
    expect(pid).toBe(true);
    const target = h.app.ws.paths.resolve('src/b.ts');
    const client = (await h.app.ws.lsp.withClient(target, h.read('src/b.ts'), async (lsp) => lsp.client))!;
    process.kill(client.pid!, 'SIGKILL');
    await new Promise<void>((resolve) => {
      const check = () => (client.exited ? resolve() : setTimeout(check, 20));
      check();
    });
    const again = await h.call('diagnostics', { path: 'src/b.ts', wait_seconds: 60 });
    expect(again.counts.error).toBe(1);
    expect(h.app.ws.lsp.status().find((s) => s.id === 'typescript')).toMatchObject({
      running: true,
      restarts: 1,
    });
    // idle_minutes 0.05 = 3 s without use: the server is stopped.
    await new Promise<void>((resolve) => {
      const check = () =>
        h.app.ws.lsp.status().find((s) => s.id === 'typescript')?.running
          ? setTimeout(check, 100)
          : resolve();
      check();
    });
    expect(h.app.ws.lsp.status().find((s) => s.id === 'typescript')?.running).toBe(false);
  });

  it('LSP-37: the real server answers tsserver’s three lists on request, as diagnostics asks for them', async () => {
    const h = await toolHarness({ files: TS_FILES, config: wait() });
    const target = h.app.ws.paths.resolve('src/b.ts');
    const lists = await h.app.ws.lsp.withClient(target, h.read('src/b.ts'), async ({ client, uri }) => {
      expect(client.asksTsserver()).toBe(true);
      const ask = (command: string) =>
        client.request(
          'workspace/executeCommand',
          { command: 'typescript.tsserverRequest', arguments: [command, { file: uri }] },
          60_000,
        ) as Promise<{ body: Array<{ start: { line: number }; text: string; category: string }> }>;
      return Promise.all(
        ['syntacticDiagnosticsSync', 'semanticDiagnosticsSync', 'suggestionDiagnosticsSync'].map(ask),
      );
    });
    expect(lists?.map((list) => list.body.length)).toEqual([0, 1, 0]);
    expect(lists?.[1].body[0]).toMatchObject({
      start: { line: 2 },
      category: 'error',
      text: expect.stringContaining("Type 'number' is not assignable to type 'string'"),
    });
  });

  it('LSP-05: a language the workspace uses without its server installed is missing, with the install command', async () => {
    const h = await toolHarness({ files: { 'go.mod': 'module demo\n', 'main.go': 'package main\n' } });
    const status = await h.call('lsp_status', {});
    const go = status.servers.find((s: { id: string }) => s.id === 'go');
    // gopls may be installed on a developer machine; the test machine's PATH is the isolated one.
    if (go.state === 'found') expect(go.command).toMatch(/gopls$/);
    else
      expect(go).toMatchObject({ state: 'missing', install: 'go install golang.org/x/tools/gopls@latest' });
    expect(status.servers.find((s: { id: string }) => s.id === 'rust')).toMatchObject({
      state: 'not_needed',
    });
  });

  it('LSP-07: the TypeScript server installs no typings off the network (no npm run, no npm cache in HOME)', async () => {
    // A JavaScript file requiring a package the workspace does not have: with tsserver's
    // automatic typing acquisition on, its typings installer runs `npm install types-registry`
    // and `@types/lodash` with the run's HOME, writing `$HOME/.npm`.
    const h = await toolHarness({
      files: {
        'package.json': '{ "name": "demo", "private": true, "dependencies": { "lodash": "^4.0.0" } }\n',
        'src/x.js': "const _ = require('lodash');\nmodule.exports = _.chunk([1, 2, 3], 2);\n",
      },
      config: wait(),
    });
    const result = await h.call('diagnostics', { path: 'src/x.js', wait_seconds: 60 });
    expect(result.server).toBe('typescript');
    // The installer starts within a second of the project opening; give it five.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const home = h.app.env.HOME as string;
    expect(existsSync(join(home, '.npm')), `${home}/.npm`).toBe(false);
    await h.app.close();
  });
});
