/**
 * Semantic edits through the language server (issue 22 item 2), with the real
 * typescript-language-server. Pins:
 * - rename_symbol across two files renames the symbol and its import and use, and leaves a
 *   same-named local in another scope alone (engine "lsp"); the server then sees the new texts;
 * - with built-in servers switched off (options.lsp.auto = false) the tree-sitter fallback answers,
 *   says engine "tree-sitter" and notes what it may get wrong (it renames the local too);
 * - search symbol-references and symbol-definition answer through the server;
 * - a rename whose edits would reach a file under node_modules or outside the workspace is
 *   refused with an error naming that file, and no file changes.
 */
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toolHarness } from './harness';

const A = 'export function total(x: number): number {\n  return x + 1;\n}\n';
const B = [
  "import { total } from './a';",
  '',
  'export const sum = total(1);',
  '',
  'export function other(): number {',
  '  const total = 2;',
  '  return total;',
  '}',
  '',
].join('\n');

const FILES = {
  'package.json': '{ "name": "demo", "private": true }\n',
  'tsconfig.json':
    '{ "compilerOptions": { "strict": true, "noEmit": true, "target": "ES2022" }, "include": ["src"] }\n',
  'src/a.ts': A,
  'src/b.ts': B,
};

const wait = { options: { lsp: { diagnostics_wait_seconds: 60 } } };
/** No built-in server is started: the tree-sitter fallback answers. */
const noServers = { options: { lsp: { auto: false } } };

describe('semantic edits through the language server (real typescript-language-server)', {
  timeout: 180_000,
}, () => {
  it('LSP-10: rename across two files leaves a same-named local alone; the fallback says tree-sitter', async () => {
    const h = await toolHarness({ files: FILES, config: wait });
    const renamed = await h.call('edit', {
      mode: 'rename_symbol',
      name_path: 'total',
      path: 'src/a.ts',
      new_name: 'grandTotal',
    });
    expect(renamed).toMatchObject({
      mode: 'rename_symbol',
      engine: 'lsp',
      server: 'typescript',
      replacements: 3,
    });
    expect(renamed.note).toBeUndefined();
    expect(renamed.files.map((f: { path: string }) => f.path)).toEqual(['src/a.ts', 'src/b.ts']);
    expect(h.read('src/a.ts')).toContain('export function grandTotal(x: number)');
    expect(h.read('src/b.ts')).toBe(
      B.replace('import { total }', 'import { grandTotal }').replace('= total(1)', '= grandTotal(1)'),
    );
    expect(h.read('src/b.ts')).toContain('  const total = 2;\n  return total;');
    expect(h.modelText('edit', renamed)).toContain('(language server typescript)');
    // The server was given the renamed texts: b.ts still type-checks against the new a.ts.
    const after = await h.call('diagnostics', { path: 'src/b.ts', wait_seconds: 60 });
    expect(after.counts.error).toBe(0);
    // What the server published after the rename's texts, not a wait run out.
    expect(after.complete).toBe(true);
    expect(renamed.diagnostics?.notes ?? []).toEqual([]);

    const off = await toolHarness({
      files: FILES,
      config: noServers,
    });
    const fallback = await off.call('edit', {
      mode: 'rename_symbol',
      name_path: 'total',
      path: 'src/a.ts',
      new_name: 'grandTotal',
    });
    expect(fallback).toMatchObject({
      engine: 'tree-sitter',
      note: expect.stringContaining('same-named identifier'),
    });
    expect(fallback.server).toBeUndefined();
    // By name: the local in another scope is renamed too, which is what the note warns about.
    expect(off.read('src/b.ts')).toContain('const grandTotal = 2;');
    expect(off.modelText('edit', fallback)).toMatch(/tree-sitter, by name\)\nNote: /);
  });

  it('LSP-11: references and definition go through the server', async () => {
    const h = await toolHarness({ files: FILES, config: wait });
    const refs = await h.call('search', { mode: 'symbol-references', name_path: 'total', path: 'src/a.ts' });
    expect(refs).toMatchObject({
      mode: 'symbol-references',
      engine: 'lsp',
      server: 'typescript',
      truncated: false,
    });
    const places = refs.references.map((r: { path: string; line: number }) => `${r.path}:${r.line}`).sort();
    expect(places).toEqual(['src/a.ts:1', 'src/b.ts:1', 'src/b.ts:3']);
    expect(h.modelText('search', refs)).toContain('3 reference(s) to total (language server typescript)');

    const definition = await h.call('search', {
      mode: 'symbol-definition',
      path: 'src/b.ts',
      line: 3,
      column: 20,
    });
    expect(definition).toMatchObject({ engine: 'lsp', name: 'total', column: 20 });
    expect(definition.definitions).toEqual([
      expect.objectContaining({ path: 'src/a.ts', line: 1, column: 17, text: A.split('\n')[0] }),
    ]);
    // The local `total` is its own definition, not a.ts's.
    const local = await h.call('search', {
      mode: 'symbol-definition',
      path: 'src/b.ts',
      line: 7,
      column: 10,
    });
    expect(local.definitions).toEqual([expect.objectContaining({ path: 'src/b.ts', line: 6 })]);

    const off = await toolHarness({
      files: FILES,
      config: noServers,
    });
    const byName = await off.call('search', {
      mode: 'symbol-references',
      name_path: 'total',
      path: 'src/a.ts',
    });
    expect(byName).toMatchObject({ engine: 'tree-sitter', note: expect.stringContaining('by name') });
    expect(byName.references).toHaveLength(5);
    const defByName = await off.call('search', {
      mode: 'symbol-definition',
      path: 'src/b.ts',
      line: 3,
      column: 20,
    });
    expect(defByName).toMatchObject({
      engine: 'tree-sitter',
      definitions: [expect.objectContaining({ path: 'src/a.ts', line: 1 })],
    });
  });

  it('LSP-12: a rename that would edit node_modules or a file outside the workspace is refused', async () => {
    const dependency = {
      ...FILES,
      'tsconfig.json':
        '{ "compilerOptions": { "strict": true, "noEmit": true, "target": "ES2022" }, "include": ["src", "node_modules/dep"] }\n',
      'node_modules/dep/index.ts': "import { total } from '../../src/a';\nexport const viaDep = total(2);\n",
    };
    const h = await toolHarness({ files: dependency, config: wait });
    await expect(
      h.call('edit', { mode: 'rename_symbol', name_path: 'total', path: 'src/a.ts', new_name: 'grandTotal' }),
    ).rejects.toThrow(
      /would also edit node_modules\/dep\/index\.ts, which is under node_modules .*nothing was changed/,
    );
    expect(h.read('src/a.ts')).toBe(A);
    expect(h.read('src/b.ts')).toBe(B);
    expect(h.asks).toHaveLength(0);

    // A server whose rename also edits a file outside the workspace (test/fixtures/coding-tools/outside-rename-lsp.mjs).
    const outside = realpathSync(mkdtempSync(join(tmpdir(), 'svc-outside-')));
    const fromOutside = "import { total } from 'demo';\nexport const far = total(3);\n";
    writeFileSync(join(outside, 'shared.ts'), fromOutside);
    const server = {
      command: process.execPath,
      args: [join(import.meta.dirname, '../fixtures/coding-tools/outside-rename-lsp.mjs')],
      extensions: ['ts'],
      env: { OUTSIDE_FILE: join(outside, 'shared.ts') },
    };
    const elsewhere = await toolHarness({ files: FILES, config: { ...wait, lsp: { typescript: server } } });
    await expect(
      elsewhere.call('edit', {
        mode: 'rename_symbol',
        name_path: 'total',
        path: 'src/a.ts',
        new_name: 'grandTotal',
      }),
    ).rejects.toThrow(new RegExp(`would also edit ${outside}/shared\\.ts, which is outside the workspace`));
    expect(readFileSync(join(outside, 'shared.ts'), 'utf8')).toBe(fromOutside);
    expect(elsewhere.read('src/a.ts')).toBe(A);
  });
});
