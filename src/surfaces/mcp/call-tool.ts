/**
 * The MCP surface's one mapping (STYLE.md, "One error, three surfaces"): an unknown tool or bad
 * input is a protocol error (InvalidParams); a failure inside the tool is an `isError: true`
 * result whose text the model can read. Results are the JSON text of the same payload the HTTP
 * route serves, redacted the same way.
 * @module
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { App } from '../../app';
import { toSvcError } from '../../errors';
import { formatIssues } from '../../tools/invoke';
import type { ExposedTool } from './exposed-tools';

export interface McpToolListing {
  name: string;
  description: string;
  inputSchema: { type: 'object'; [key: string]: unknown };
  annotations: { readOnlyHint: boolean; destructiveHint?: boolean };
}

export interface McpCallResult {
  content: { type: 'text'; text: string }[];
  isError?: boolean;
  [key: string]: unknown;
}

/** The exposed tools whose gate is open now (a reload can open or close one). */
export function listTools(app: App, exposed: readonly ExposedTool[]): McpToolListing[] {
  return exposed
    .filter(({ tool }) => app.tools.get(tool.name) !== undefined)
    .map(({ mcpName, tool }) => ({
      name: mcpName,
      description: tool.description,
      inputSchema: inputSchemaOf(tool.input),
      annotations: tool.mutates ? { readOnlyHint: false } : { readOnlyHint: true },
    }));
}

export function inputSchemaOf(schema: z.ZodType): McpToolListing['inputSchema'] {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return { ...json, type: 'object' };
}

export interface CallOptions {
  signal: AbortSignal;
  /** The MCP-bound session: tools with an optional `session_id` default to it. */
  sessionId?: string;
}

export async function callTool(
  app: App,
  exposed: readonly ExposedTool[],
  name: string,
  args: unknown,
  options: CallOptions,
): Promise<McpCallResult> {
  const entry = exposed.find((e) => e.mcpName === name);
  if (!entry) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${name}`);
  const live = app.tools.get(entry.tool.name);
  if (!live) {
    // A defined, exposed tool whose gate is closed (spec: the MCP tool fails closed).
    const gate = app.tools.gates().find((g) => g.tool.name === entry.tool.name);
    return errorResult(`unavailable: ${name} is not available: ${gate?.reason ?? 'not registered'}`);
  }
  const parsed = live.input.safeParse(args ?? {});
  if (!parsed.success) {
    throw new McpError(ErrorCode.InvalidParams, `${name}: ${formatIssues(parsed.error)}`);
  }
  try {
    const context = app.toolContext({ surface: 'mcp', signal: options.signal, sessionId: options.sessionId });
    let result: unknown = await live.run(context, parsed.data);
    if (result instanceof Response) {
      const text = await result.text();
      if (!result.ok) return errorResult(app.redactor.string(text));
      result = parseMaybeJson(text);
    }
    return { content: [{ type: 'text', text: JSON.stringify(app.redactor.value(result) ?? null) }] };
  } catch (error) {
    const e = toSvcError(error);
    if (e.code === 'internal') app.log.error('mcp tool failed', { tool: name, error: e.cause ?? e });
    let message = app.redactor.string(e.message);
    // spec, Errors → Dashboard route: an unwired provider answers a text error containing "not available".
    if (e.code === 'unavailable' && !message.includes('not available')) {
      message = `${name} is not available: ${message}`;
    }
    return errorResult(`${e.code}: ${message}`);
  }
}

function errorResult(text: string): McpCallResult {
  return { isError: true, content: [{ type: 'text', text }] };
}

function parseMaybeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
