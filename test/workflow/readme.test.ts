/** The recipe example of docs/workflows.md is a valid recipe (docs that do not validate are a defect). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { invokeTool } from '../../src/tools/core/call-tool';
import { makeTestApp } from '../helpers/make-test-app';

describe('docs/workflows.md recipe example', () => {
  it('validates without problems', async () => {
    const readme = readFileSync(new URL('../../docs/workflows.md', import.meta.url), 'utf8');
    const example = readme.split('# .svc/recipes/add-endpoint.toml\n')[1]?.split('```')[0];
    expect(example).toBeDefined();
    const app = await makeTestApp();
    const result = (await invokeTool(app, 'recipe_validate', { content: example }, { surface: 'cli' })) as {
      valid: boolean;
      diagnostics: unknown[];
      recipe: { steps: { id: string }[]; parameters: { name: string }[] };
    };
    expect(result.diagnostics).toEqual([]);
    expect(result.recipe.steps.map((s) => s.id)).toEqual(['plan', 'build']);
    expect(result.recipe.parameters.map((p) => p.name)).toEqual(['route', 'test_command']);
  });
});
