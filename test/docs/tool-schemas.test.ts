/**
 * The built-in tools' input JSON Schemas are generated ahead of time (issue 17: ~30 ms of every
 * `svc run` went to converting them) into src/tools/core/input-schemas.generated.json. This test
 * fails when the file differs from a fresh conversion of every definition; `npm run docs`
 * rewrites it. What surfaces serve is the generated schema, identical to the fresh one.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { convertInputSchema, inputSchemaOf, staleGeneratedSchemas } from '../../src/tools/core/input-schema';
import generated from '../../src/tools/core/input-schemas.generated.json';
import { allTools } from '../../src/tools/index';

const fresh = Object.fromEntries(
  [...allTools]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((t) => [t.name, convertInputSchema(t.input)]),
);

describe('generated tool input schemas', () => {
  it('are up to date with the definitions (run `npm run docs` to regenerate them)', async () => {
    await expect(`${JSON.stringify(fresh, null, 2)}\n`).toMatchFileSnapshot(
      '../../src/tools/core/input-schemas.generated.json',
    );
  });

  it('every built-in tool is served its generated schema, equal to a fresh conversion', () => {
    for (const tool of allTools) {
      expect(inputSchemaOf(tool)).toEqual(fresh[tool.name]);
      // The very object from the generated file: no conversion happened at run time.
      expect(inputSchemaOf(tool)).toBe((generated as Record<string, unknown>)[tool.name]);
    }
  });

  it('no built-in tool is stale: each generated schema equals its definition (start-up does not check)', () => {
    // Start-up registers the generated schemas as they are, so this is where a stale one is caught.
    expect(
      staleGeneratedSchemas(allTools, generated as Record<string, unknown>),
      'generated tool schemas are stale: run `npm run docs` to regenerate them',
    ).toEqual([]);
  });

  it('a generated schema whose fields differ from the definition is reported stale', () => {
    const tool = { ...allTools[0], input: z.strictObject({ only: z.string() }) };
    expect(staleGeneratedSchemas([tool], { [tool.name]: fresh[allTools[0].name] })).toEqual([tool.name]);
    expect(staleGeneratedSchemas([tool], {})).toEqual([tool.name]);
  });
});
