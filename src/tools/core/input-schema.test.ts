import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { jsonTextModule } from '../../../build/json-text';
import { defineTool } from './define-tool';
import { inputSchemaOf, registerGeneratedSchemas } from './input-schema';

function tool(name: string, onBuild: () => void = () => {}) {
  return defineTool({
    name,
    family: 'test',
    tag: 'primitive',
    description: name,
    input: () => {
      onBuild();
      return z.strictObject({ path: z.string() });
    },
    mutates: false,
    run: () => 1,
  });
}

const SCHEMA = {
  type: 'object',
  properties: { path: { type: 'string', description: 'a path \u2192 here' } },
  required: ['path'],
  additionalProperties: false,
};

describe('ENGINE-SCHEMA: generated input schemas', () => {
  it('ENGINE-SCHEMA-1 a schema registered as JSON text is parsed on first use, once; its zod schema is never built', () => {
    let built = 0;
    const t = tool('t_text', () => built++);
    registerGeneratedSchemas([t], { t_text: JSON.stringify(SCHEMA) });
    const first = inputSchemaOf(t);
    expect(first).toEqual(SCHEMA);
    expect(inputSchemaOf(t)).toBe(first);
    expect(built).toBe(0);
  });

  it('ENGINE-SCHEMA-1 a schema registered as an object is used as it is; an unregistered tool is converted', () => {
    const t = tool('t_object');
    registerGeneratedSchemas([t], { t_object: SCHEMA });
    expect(inputSchemaOf(t)).toBe(SCHEMA);
    const other = tool('t_none');
    registerGeneratedSchemas([other], {});
    expect(inputSchemaOf(other)).toMatchObject({ type: 'object', required: ['path'] });
  });

  it('ENGINE-SCHEMA-2 the build module gives each key its value as JSON text (build/json-text.ts)', async () => {
    const json = JSON.stringify({ view: SCHEMA, 'odd "name"': { type: 'object' } }, null, 2);
    const code = jsonTextModule(json);
    const url = `data:text/javascript;base64,${Buffer.from(code).toString('base64')}`;
    const mod = (await import(/* @vite-ignore */ url)) as { default: Record<string, unknown> };
    expect(Object.keys(mod.default)).toEqual(['view', 'odd "name"']);
    for (const value of Object.values(mod.default)) expect(typeof value).toBe('string');
    expect(JSON.parse(mod.default.view as string)).toEqual(SCHEMA);
  });
});
