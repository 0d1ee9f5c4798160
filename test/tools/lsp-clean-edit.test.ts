/**
 * Diagnostics after an edit that leaves a TypeScript file without problems, with the real
 * typescript-language-server. The server publishes nothing when a kind's list was empty and stays
 * empty, so before, such an edit waited out the whole diagnostics wait and noted "did not finish
 * in time". Pins:
 * - clean → clean answers complete, without notes, and says no errors (edit, again, and the
 *   diagnostics tool after a change made outside svc);
 * - clean → broken still reports the new error; broken → clean reports none; all complete;
 * - a rename through the same server still works on a document opened again this way.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toolHarness } from './harness';

const FILES = {
  'package.json': '{ "name": "demo", "private": true }\n',
  'tsconfig.json':
    '{ "compilerOptions": { "strict": true, "noEmit": true, "target": "ES2022" }, "include": ["src"] }\n',
  'src/a.ts': 'export const count: number = 1;\n',
  'src/b.ts': "import { count } from './a';\nexport const doubled: number = count * 2;\n",
};

// Long enough that a loaded machine starts the server in time; a clean edit that waited for a
// publish that never comes would wait all of it and answer complete: false.
const config = { options: { lsp: { diagnostics_wait_seconds: 30 } } };

type After = {
  files: { path: string; complete: boolean; counts: { error: number }; diagnostics: unknown[] }[];
  notes: string[];
};

describe('a clean TypeScript edit (real typescript-language-server)', { timeout: 180_000 }, () => {
  it('LSP-30: clean → clean answers complete with no notes; clean → broken reports the error; broken → clean none', async () => {
    const h = await toolHarness({ files: FILES, config });
    const first = await h.call('diagnostics', { path: 'src/b.ts', wait_seconds: 30 });
    expect(first).toMatchObject({ complete: true, diagnostics: [] });

    await h.call('view', { path: 'src/b.ts' });
    const clean = await h.call('edit', {
      path: 'src/b.ts',
      old_string: 'count * 2',
      new_string: 'count * 3',
    });
    const cleanAfter = clean.diagnostics as After;
    expect(cleanAfter.notes).toEqual([]);
    expect(cleanAfter.files).toEqual([
      expect.objectContaining({
        path: 'src/b.ts',
        complete: true,
        counts: expect.objectContaining({ error: 0 }),
      }),
    ]);
    expect(h.modelText('edit', clean)).toContain('Diagnostics: no errors in src/b.ts.');

    // Twice in a row: the document opened again is as silent for an unchanged empty list.
    const again = await h.call('edit', {
      path: 'src/b.ts',
      old_string: 'count * 3',
      new_string: 'count * 4',
    });
    expect((again.diagnostics as After).notes).toEqual([]);
    expect((again.diagnostics as After).files[0]).toMatchObject({ complete: true, diagnostics: [] });

    const broken = await h.call('edit', {
      path: 'src/b.ts',
      old_string: 'doubled: number',
      new_string: 'doubled: string',
    });
    const brokenAfter = broken.diagnostics as After;
    expect(brokenAfter.notes).toEqual([]);
    expect(brokenAfter.files[0]).toMatchObject({ complete: true, counts: { error: 1 } });
    expect(brokenAfter.files[0].diagnostics[0]).toMatchObject({
      line: 2,
      severity: 'error',
      message: expect.stringContaining("Type 'number' is not assignable to type 'string'"),
    });

    const fixed = await h.call('edit', {
      path: 'src/b.ts',
      old_string: 'doubled: string',
      new_string: 'doubled: number',
    });
    expect((fixed.diagnostics as After).notes).toEqual([]);
    expect((fixed.diagnostics as After).files[0]).toMatchObject({ complete: true, diagnostics: [] });
  });

  it('LSP-31: the diagnostics tool after a clean change made outside svc answers complete; a rename still works', async () => {
    const h = await toolHarness({ files: FILES, config });
    expect(await h.call('diagnostics', { path: 'src/a.ts', wait_seconds: 30 })).toMatchObject({
      complete: true,
      diagnostics: [],
    });
    writeFileSync(join(h.app.workspace, 'src/a.ts'), 'export const count: number = 2;\n');
    expect(await h.call('diagnostics', { path: 'src/a.ts', wait_seconds: 30 })).toMatchObject({
      complete: true,
      diagnostics: [],
    });
    // A clean → broken change outside svc is reported too.
    writeFileSync(join(h.app.workspace, 'src/a.ts'), 'export const count: number = "2";\n');
    const broken = await h.call('diagnostics', { path: 'src/a.ts', wait_seconds: 30 });
    expect(broken).toMatchObject({ complete: true, counts: { error: 1 } });
    writeFileSync(join(h.app.workspace, 'src/a.ts'), 'export const count: number = 3;\n');
    expect(await h.call('diagnostics', { path: 'src/a.ts', wait_seconds: 30 })).toMatchObject({
      complete: true,
      diagnostics: [],
    });

    const renamed = await h.call('edit', {
      mode: 'rename_symbol',
      name_path: 'count',
      path: 'src/a.ts',
      new_name: 'total',
    });
    expect(renamed).toMatchObject({ engine: 'lsp', server: 'typescript', replacements: 3 });
    expect(h.read('src/a.ts')).toBe('export const total: number = 3;\n');
    expect(h.read('src/b.ts')).toBe(
      "import { total } from './a';\nexport const doubled: number = total * 2;\n",
    );
  });
});
