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
import type { AnyTool } from '../../tools/core/define-tool';
import { formatIssues } from '../../tools/core/invoke';
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

/**
 * Why an exposed tool cannot be served now, or undefined when it can: its gate (registered at
 * all?) or its `mcpGate` (offered over MCP?, e.g. stigmergy read tools). Both are read per
 * request, so a config reload opens or closes them.
 */
export function unavailableReason(app: App, tool: AnyTool): string | undefined {
  if (!app.tools.get(tool.name)) {
    const gate = app.tools.gates().find((g) => g.tool.name === tool.name);
    return gate?.reason ?? 'not registered';
  }
  let offered: true | string;
  try {
    offered = tool.surfaces?.mcpGate?.(app) ?? true;
  } catch (error) {
    offered = `mcp gate failed: ${(error as Error).message}`;
  }
  return offered === true ? undefined : offered;
}

/** The exposed tools that can be served now. */
export function listTools(app: App, exposed: readonly ExposedTool[]): McpToolListing[] {
  return exposed
    .filter(({ tool }) => unavailableReason(app, tool) === undefined)
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
  // A defined, exposed tool whose gate is closed: the MCP tool fails closed (spec, OPMODE-51).
  const reason = unavailableReason(app, entry.tool);
  if (reason !== undefined) return errorResult(`unavailable: ${name} is not available: ${reason}`);
  const live = app.tools.get(entry.tool.name)!;
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
