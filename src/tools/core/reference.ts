/**
 * The tools reference (docs/tools.md), rendered from the tool definitions: per tool its family,
 * tag, whether it mutates, its gate, its input schema as a table and every surface binding. The
 * page is generated, never written by hand: `npm run docs` rewrites it and
 * test/docs/tools-reference.test.ts fails when it differs from what the registry says.
 *
 * The definition type is restated structurally (only the fields read here) so this file depends
 * on nothing but zod and the shape of a definition.
 * @module
 */
import { z } from 'zod';

type Json = Record<string, any>;

interface HttpBindingShape {
  method: string;
  path: string;
  params?: Record<string, string>;
  fixed?: Record<string, unknown>;
  status?: number;
}

interface CliBindingShape {
  command: string;
  args?: string[];
  fixed?: Record<string, unknown>;
  ungated?: boolean;
}

/** What the reference reads of a tool definition. Gates are called with a stub environment. */
export interface ReferenceTool {
  name: string;
  family: string;
  tag: string;
  description: string;
  input: z.ZodType;
  mutates: boolean;
  asksPermission?: boolean;
  gate?: (env: never) => true | string;
  surfaces?: {
    http?: HttpBindingShape | HttpBindingShape[];
    mcp?: string;
    mcpGate?: (app: never) => true | string;
    cli?: CliBindingShape | CliBindingShape[];
  };
}

export interface ReferenceOptions {
  /**
   * The configuration a fresh workspace gets (the config schema's defaults). Gates are evaluated
   * against it, with an empty environment, to say in words what closes them.
   */
  defaultConfig: unknown;
}

const HEADER = `# Tools reference

<!-- Generated from the tool registry (src/tools/index.ts) by \`npm run docs\`. Do not edit by hand:
test/docs/tools-reference.test.ts fails when this page differs from the registry. -->

Every capability of svc is a tool, defined once in \`src/tools/\` and served from that one
definition to the agent, over HTTP, over MCP and as a CLI command. This page lists every built-in
tool with its family, its tag, whether it mutates (mutating tools ask permission, are withheld in
plan mode and the planning phase, and honour hard workspace claims), its gate, its input and every
surface binding. Tools of connected MCP servers (\`mcp_<id>_<tool>\`) are added at run time and are
not listed here.

- **HTTP**: the route serves the tool; the request is its input (path, query or JSON body) and the
  response is exactly the JSON the tool returns. A route whose tool is gated off answers 404.
  See [http.md](http.md).
- **MCP**: the tool name on \`svc service start mcp\`, served when it is listed in
  \`services.mcp.exposed_tools\` (unset: the read-only default set). See [mcp.md](mcp.md).
- **CLI**: the command; every input field not taken as an argument is an option
  (\`session_id\` → \`--session-id <value>\`), and \`--json\` prints the same payload as HTTP and MCP.
  See [cli.md](cli.md).
- **Gate**: the tool is registered only while its gate is open; the text is what the gate says
  with the default configuration. \`svc tools --json\` says, for a given session, which funnel
  stage removed a tool ([agent.md](agent.md#the-tool-funnel)).
`;

/** docs/tools.md for these tools, in registry order grouped by family. */
export function renderToolsReference(tools: readonly ReferenceTool[], options: ReferenceOptions): string {
  const families = new Map<string, ReferenceTool[]>();
  for (const tool of tools) {
    const list = families.get(tool.family) ?? [];
    list.push(tool);
    families.set(tool.family, list);
  }
  const out: string[] = [HEADER];
  out.push(`${tools.length} tools in ${families.size} families.`, '');
  out.push('| family | tools |', '| --- | --- |');
  for (const [family, list] of families) {
    out.push(`| [${family}](#${anchor(`family ${family}`)}) | ${list.map((t) => link(t.name)).join(', ')} |`);
  }
  out.push('');
  for (const [family, list] of families) {
    out.push(`## Family ${family}`, '');
    for (const tool of list) out.push(...renderTool(tool, options));
  }
  return `${out.join('\n').trimEnd()}\n`;
}

function renderTool(tool: ReferenceTool, options: ReferenceOptions): string[] {
  const out = [`### ${tool.name}`, '', escapeText(tool.description.trim()), ''];
  const mutates = tool.mutates
    ? `yes (${tool.asksPermission ? 'the tool asks permission itself' : 'asked centrally before it runs'})`
    : 'no';
  out.push(`- Family: \`${tool.family}\` · tag: \`${tool.tag}\` · mutates: ${mutates}`);
  if (tool.gate) out.push(`- Gate: ${gateText(tool.gate, { app: stubApp(options) })}`);
  const http = list(tool.surfaces?.http);
  for (const binding of http) out.push(`- HTTP: ${httpText(binding)}`);
  const mcp = tool.surfaces?.mcp;
  if (mcp) {
    const gate = tool.surfaces?.mcpGate;
    out.push(`- MCP: \`${mcp}\`${gate ? ` (MCP gate ${gateText(gate, stubApp(options))})` : ''}`);
  }
  for (const binding of list(tool.surfaces?.cli)) out.push(`- CLI: ${cliText(binding)}`);
  if (!http.length && !mcp && !list(tool.surfaces?.cli).length) out.push('- Surfaces: the agent only');
  out.push('', ...inputTable(tool.input), '');
  return out;
}

function stubApp(options: ReferenceOptions): Json {
  return { config: options.defaultConfig, env: {} };
}

/** What a gate says with the default configuration, in words. */
function gateText(gate: (env: never) => true | string, env: unknown): string {
  let outcome: true | string;
  try {
    outcome = gate(env as never);
  } catch {
    return 'gated by the runtime (what it needs is not in the configuration); see the family page';
  }
  return outcome === true
    ? 'open with the default configuration (it can close at run time; see the family page)'
    : `closed by default: ${escapeText(outcome)}`;
}

function httpText(binding: HttpBindingShape): string {
  const path = binding.path.replace(/:([A-Za-z_]+)/g, '{$1}');
  const notes: string[] = [];
  for (const [param, field] of Object.entries(binding.params ?? {})) {
    if (param !== field) notes.push(`\`{${param}}\` is \`${field}\``);
  }
  for (const [field, value] of Object.entries(binding.fixed ?? {})) {
    notes.push(`\`${field}\` = \`${JSON.stringify(value)}\``);
  }
  if (binding.status && binding.status !== 200) notes.push(`answers ${binding.status}`);
  return `\`${binding.method} ${path}\`${notes.length ? ` (${notes.join(', ')})` : ''}`;
}

function cliText(binding: CliBindingShape): string {
  const args = (binding.args ?? []).map((a) => (a.endsWith('?') ? `[${a.slice(0, -1)}]` : `<${a}>`));
  const notes: string[] = [];
  for (const [field, value] of Object.entries(binding.fixed ?? {})) {
    notes.push(`\`${field}\` = \`${JSON.stringify(value)}\``);
  }
  if (binding.ungated) notes.push('runs with the gate closed and reports that state');
  const command = ['svc', binding.command, ...args].join(' ');
  return `\`${command}\`${notes.length ? ` (${notes.join(', ')})` : ''}`;
}

/** The input as a table: one row per field, nested object fields as `parent.child`. */
function inputTable(input: z.ZodType): string[] {
  let schema: Json;
  try {
    schema = z.toJSONSchema(input, { io: 'input', unrepresentable: 'any' }) as Json;
  } catch {
    return ['Input: not representable as JSON Schema.'];
  }
  const rows: string[] = [];
  addRows(rows, schema, schema.$defs ?? {}, '', 0);
  if (!rows.length) return ['Input: none.'];
  return ['| field | type | required | default | description |', '| --- | --- | --- | --- | --- |', ...rows];
}

function addRows(rows: string[], schema: Json, defs: Json, prefix: string, depth: number): void {
  const properties = (schema.properties ?? {}) as Record<string, Json>;
  const required = new Set<string>(schema.required ?? []);
  for (const [name, raw] of Object.entries(properties)) {
    const property = resolve(raw, defs);
    const field = `${prefix}${name}`;
    const cells = [
      `\`${field}\``,
      cell(typeText(property, defs)),
      required.has(name) ? 'yes' : '',
      property.default === undefined ? '' : cell(`\`${JSON.stringify(property.default)}\``),
      cell(escapeText(String(property.description ?? raw.description ?? ''))),
    ];
    rows.push(`| ${cells.join(' | ')} |`);
    if (depth >= 2) continue;
    const object = nestedObject(property, defs);
    if (object) addRows(rows, object.schema, defs, `${field}${object.suffix}.`, depth + 1);
  }
}

/** The object schema under a field (itself, or the items of an array), for nested rows. */
function nestedObject(property: Json, defs: Json): { schema: Json; suffix: string } | undefined {
  if (property.properties) return { schema: property, suffix: '' };
  const items = property.items ? resolve(property.items, defs) : undefined;
  if (items?.properties) return { schema: items, suffix: '[]' };
  return undefined;
}

function resolve(schema: Json, defs: Json): Json {
  const ref = typeof schema.$ref === 'string' ? /^#\/\$defs\/(.+)$/.exec(schema.$ref) : null;
  return ref && defs[ref[1]] ? { ...defs[ref[1]], ...schema, $ref: undefined } : schema;
}

function typeText(schema: Json, defs: Json): string {
  const resolved = resolve(schema, defs);
  const variants = resolved.anyOf ?? resolved.oneOf;
  if (Array.isArray(variants)) {
    return [...new Set(variants.map((v: Json) => typeText(v, defs)))].join(' | ');
  }
  if (resolved.const !== undefined) return `\`${JSON.stringify(resolved.const)}\``;
  if (Array.isArray(resolved.enum))
    return resolved.enum.map((v: unknown) => `\`${JSON.stringify(v)}\``).join(' | ');
  const type = resolved.type;
  if (Array.isArray(type)) return type.join(' | ');
  if (type === 'array') {
    const items = resolved.items ? typeText(resolved.items, defs) : 'any';
    return `${items.includes(' ') ? `(${items})` : items}[]${bounds(resolved, 'minItems', 'maxItems', ' items')}`;
  }
  if (type === 'object') {
    const extra = resolved.additionalProperties;
    if (!resolved.properties && extra && typeof extra === 'object') return `map of ${typeText(extra, defs)}`;
    return 'object';
  }
  if (type === 'string') {
    // A bare minimum length of 1 (non-empty) is noise in a table of ids and names.
    const min = resolved.minLength === 1 && resolved.maxLength === undefined ? {} : resolved;
    return `string${bounds(min, 'minLength', 'maxLength', ' chars')}`;
  }
  if (type === 'integer' || type === 'number') {
    return `${type}${bounds(resolved, 'minimum', 'maximum', '')}`;
  }
  if (typeof type === 'string') return type;
  return 'any';
}

function bounds(schema: Json, low: string, high: string, unit: string): string {
  const min = schema[low] ?? (low === 'minimum' ? schema.exclusiveMinimum : undefined);
  const max = schema[high] ?? (high === 'maximum' ? schema.exclusiveMaximum : undefined);
  const lowText = typeof min === 'number' && Math.abs(min) < 1e15 ? String(min) : undefined;
  const highText = typeof max === 'number' && Math.abs(max) < 1e15 ? String(max) : undefined;
  if (lowText === undefined && highText === undefined) return '';
  if (lowText !== undefined && highText !== undefined) return ` (${lowText}–${highText}${unit})`;
  return lowText !== undefined ? ` (≥ ${lowText}${unit})` : ` (≤ ${highText}${unit})`;
}

function list<T>(value: T | T[] | undefined): T[] {
  return Array.isArray(value) ? value : value ? [value] : [];
}

function link(name: string): string {
  return `[\`${name}\`](#${anchor(name)})`;
}

/** GitHub's heading anchor: lowercase, punctuation other than `-` and `_` dropped, spaces to `-`. */
function anchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/**
 * Markdown-safe prose: outside code spans, `<` would open an HTML tag (`[lsp.<id>]`) and `*`
 * would start emphasis (`"*.ts"`).
 */
function escapeText(text: string): string {
  return text
    .split(/(`[^`\n]*`)/)
    .map((part, index) => (index % 2 === 1 ? part : part.replace(/</g, '&lt;').replace(/\*/g, '\\*')))
    .join('');
}

/** A table cell: one line, pipes escaped. */
function cell(text: string): string {
  return text.replace(/\r?\n+/g, ' ').replace(/\|/g, '\\|');
}
