// The generated tool input schemas (src/tools/core/input-schemas.generated.json, ~90 KB) bundled
// as one JSON text per tool instead of an object literal (issue 17, start-up): the literal built
// every schema's objects (thousands) when the tools chunk loaded, and kept them alive through
// start-up, while `svc run` offers a dozen tools. `registerGeneratedSchemas` parses a tool's text
// on its first use (src/tools/core/input-schema.ts). Tests import the JSON file itself (objects).
import { readFileSync } from 'node:fs';

/** ES module text: the default export maps each key of the JSON object to its value's JSON text. */
export function jsonTextModule(json: string): string {
  const value = JSON.parse(json) as Record<string, unknown>;
  const entries = Object.entries(value).map(
    ([key, entry]) => `  ${JSON.stringify(key)}: ${JSON.stringify(JSON.stringify(entry))},`,
  );
  return `export default {\n${entries.join('\n')}\n};\n`;
}

/** The rolldown plugin: the JSON files matching `file` loaded as `jsonTextModule`. */
export function jsonText(file: RegExp): {
  name: string;
  load: { order: 'pre'; handler(id: string): { code: string; moduleType: 'js' } | null };
} {
  return {
    name: 'svc-json-text',
    load: {
      order: 'pre',
      handler(id: string) {
        if (!file.test(id)) return null;
        return { code: jsonTextModule(readFileSync(id, 'utf8')), moduleType: 'js' };
      },
    },
  };
}
