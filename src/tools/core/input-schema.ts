/**
 * A tool's input as JSON Schema (what models, MCP clients and `list_tool_capabilities` see).
 * Converting 150 zod schemas took ~30 ms of every `svc run` (issue 17), so the built-in tools'
 * schemas are generated ahead of time into `input-schemas.generated.json` (by `npm run docs`; the
 * docs test fails when it is stale) and registered here by `tools/index.ts`. Any other tool (MCP
 * servers' tools, plugins, tests' tools) is converted on first use, once per definition.
 * @module
 */
import type { JSONSchema7 } from 'ai';
import { z } from 'zod';
import type { AnyTool } from './types';

const schemas = new WeakMap<AnyTool, JSONSchema7>();
/** Generated schemas registered as JSON text, parsed on first use. */
const generatedText = new WeakMap<AnyTool, string>();

/** Convert a zod input schema (no `$schema` key): the one conversion every surface uses. */
export function convertInputSchema(input: z.ZodType): JSONSchema7 {
  const schema = z.toJSONSchema(input, { io: 'input', unrepresentable: 'any' }) as JSONSchema7;
  delete (schema as Record<string, unknown>).$schema;
  return schema;
}

/** The JSON Schema of a tool's input: generated ahead of time for built-ins, else converted once. */
export function inputSchemaOf(tool: AnyTool): JSONSchema7 {
  let schema = schemas.get(tool);
  if (!schema) {
    const text = generatedText.get(tool);
    schema = text === undefined ? convertInputSchema(tool.input) : (JSON.parse(text) as JSONSchema7);
    schemas.set(tool, schema);
  }
  return schema;
}

/**
 * Register generated schemas for these definitions, as they are: start-up reads no definition's
 * zod schema (issue 17). That each generated schema still matches its definition is checked at
 * test time (`staleGeneratedSchemas`, test/docs/tool-schemas.test.ts; `npm run docs` regenerates).
 * A schema given as its JSON text is parsed on first use: the build writes each one so
 * (`build/json-text.ts`), and `svc run`, which offers a dozen tools, parses a dozen, not ~150.
 */
export function registerGeneratedSchemas(
  tools: readonly AnyTool[],
  generated: Readonly<Record<string, unknown>>,
): void {
  for (const tool of tools) {
    const schema = generated[tool.name];
    if (typeof schema === 'string') generatedText.set(tool, schema);
    else if (schema) schemas.set(tool, schema as JSONSchema7);
  }
}

/**
 * The names of the tools whose generated schema is missing or differs from a fresh conversion of
 * the definition (an edited tool before `npm run docs`). For tests and build checks, not start-up.
 */
export function staleGeneratedSchemas(
  tools: readonly AnyTool[],
  generated: Readonly<Record<string, unknown>>,
): string[] {
  return tools
    .filter((tool) => {
      const schema = generated[tool.name];
      return (
        schema === undefined || JSON.stringify(schema) !== JSON.stringify(convertInputSchema(tool.input))
      );
    })
    .map((tool) => tool.name);
}
