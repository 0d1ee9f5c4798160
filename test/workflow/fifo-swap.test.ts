/**
 * Workspace files the workflow tools read after a check, with a FIFO swapped in between the check
 * and the read (test/helpers/fifo-swap.ts: the stat still says "a regular file"). A blocking read
 * of the FIFO stopped svc's whole process until a writer came; now each reader opens the file
 * without waiting and checks what it opened (`readRegularFile`, src/workspace/file-io.ts):
 * analyze_ripple_impact reads no text from it, recipe_list leaves it out, recipe_validate says it
 * has no readable file there. In each the FIFO's writer is still waiting afterwards: nothing opened
 * it for a read.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { plantSwappedFifo } from '../helpers/fifo-swap';
import { makeTestApp } from '../helpers/make-test-app';

vi.mock('node:fs', async (importOriginal) =>
  (await import('../helpers/fifo-swap')).swappedFs(await importOriginal()),
);

describe.runIf(process.platform !== 'win32')('a FIFO swapped in after the check, before the read', () => {
  it('analyze_ripple_impact: a changed file that became a FIFO has no text, and is never waited on', async () => {
    const app = await makeTestApp({
      files: { 'src/user.ts': "import { pipe } from './pipe';\nexport const use = pipe;\n" },
    });
    const rescuer = plantSwappedFifo(join(app.workspace, 'src', 'pipe.ts'));
    const result = (await invokeTool(
      app,
      'analyze_ripple_impact',
      { files: ['src/pipe.ts'] },
      { surface: 'cli' },
    )) as any;
    expect(rescuer.rescued()).toBe(false);
    expect(result.changed[0]).toMatchObject({ path: 'src/pipe.ts', exported_symbols: [] });
  });

  it('recipe_list leaves out a recipe file that became a FIFO', async () => {
    const app = await makeTestApp();
    const dir = join(app.workspace, '.svc', 'recipes');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'fine.toml'), 'description = "fine"\n[[steps]]\nid = "a"\nprompt = "go"\n');
    const rescuer = plantSwappedFifo(join(dir, 'pipe.toml'));
    const listed = (await invokeTool(app, 'recipe_list', {}, { surface: 'cli' })) as {
      recipes: { name: string; source: string }[];
    };
    expect(rescuer.rescued()).toBe(false);
    const names = listed.recipes.filter((r) => r.source === 'workspace').map((r) => r.name);
    expect(names).toEqual(['fine']);
  });

  it('recipe_validate of a path that became a FIFO says it has no readable file there', async () => {
    const app = await makeTestApp();
    const rescuer = plantSwappedFifo(join(app.workspace, 'pipe.toml'));
    await expect(
      invokeTool(app, 'recipe_validate', { path: 'pipe.toml' }, { surface: 'cli' }),
    ).rejects.toMatchObject({ code: 'not_found', message: 'path: no readable file pipe.toml' });
    expect(rescuer.rescued()).toBe(false);
  });
});
