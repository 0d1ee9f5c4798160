/**
 * The MCP surface's one mapping (STYLE.md, "One error, three surfaces"): an unknown tool or bad
 * input is a protocol error (InvalidParams); a failure inside the tool is an `isError: true`
 * result whose text the model can read. Results are the JSON text of the same payload the HTTP
 * route serves, redacted the same way.
 * @module
 */
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { App } from '../../app';
import { SvcError } from '../../errors';
import { callTool as callThrough } from '../../tools/core/call-tool';
import { inputSchemaOf } from '../../tools/core/input-schema';
import type { AnyTool, CallContext } from '../../tools/core/types';
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
  return mcpGateReason(app, tool);
}

/** The exposed tools that can be served now. */
export function listTools(app: App, exposed: readonly ExposedTool[]): McpToolListing[] {
  return exposed
    .filter(({ tool }) => unavailableReason(app, tool) === undefined)
    .map(({ mcpName, tool }) => ({
      name: mcpName,
      description: tool.description,
      inputSchema: { ...(inputSchemaOf(tool) as Record<string, unknown>), type: 'object' },
      annotations: tool.mutates ? { readOnlyHint: false } : { readOnlyHint: true },
    }));
}

export interface CallOptions {
  signal: AbortSignal;
  /** The MCP-bound session: tools with an optional `session_id` default to it (a function: read lazily). */
  sessionId?: string | (() => string);
}

export async function callTool(
  app: App,
  exposed: readonly ExposedTool[],
  name: string,
  args: unknown,
  options: CallOptions,
): Promise<McpCallResult> {
  const entry = exposed.find((e) => e.mcpName === name);
  if (!entry) throw protocolError(ErrorCode.InvalidParams, `unknown tool ${name}`);
  const outcome = await callThrough(app, entry.tool.name, args, boundContext(options), {
    tool: entry.tool,
    gate: (tool) => mcpGateError(app, tool),
  });
  if (outcome.ok) {
    let result: unknown = outcome.value;
    if (result instanceof Response) {
      const text = await result.text();
      if (!result.ok) return errorResult(app.redactor.string(text));
      result = parseMaybeJson(text);
    }
    return { content: [{ type: 'text', text: JSON.stringify(result ?? null) }] };
  }
  const e = outcome.error;
  switch (outcome.stage) {
    case 'unknown':
    case 'gate': {
      // A defined, exposed tool whose gate is closed: the MCP tool fails closed (spec, OPMODE-51).
      const reason = e.details?.reason;
      return errorResult(
        `unavailable: ${name} is not available: ${typeof reason === 'string' ? reason : 'not registered'}`,
      );
    }
    case 'input':
      throw protocolError(ErrorCode.InvalidParams, e.message, e.details);
    case 'run': {
      if (e.code === 'internal') app.log.error('mcp tool failed', { tool: name, error: e.cause ?? e });
      let message = e.message;
      // spec, Errors → Dashboard route: an unwired provider answers a text error containing "not available".
      if (e.code === 'unavailable' && !message.includes('not available')) {
        message = `${name} is not available: ${message}`;
      }
      return errorResult(`${e.code}: ${message}`);
    }
    default: {
      const exhaustive: never = outcome.stage;
      throw protocolError(ErrorCode.InternalError, `unknown call stage ${String(exhaustive)}`);
    }
  }
}

/**
 * The call context. A lazy session is a getter: the session is created only when the tool reads
 * `ctx.sessionId` (a status readout that needs no session creates none).
 */
function boundContext(options: CallOptions): CallContext {
  const { sessionId, signal } = options;
  if (typeof sessionId !== 'function') return { surface: 'mcp', signal, sessionId };
  return Object.defineProperty({ surface: 'mcp', signal } as CallContext, 'sessionId', {
    get: sessionId,
    enumerable: true,
  });
}

/** Why the tool's `mcpGate` does not offer it over MCP now, or undefined when it does. */
function mcpGateReason(app: App, tool: AnyTool): string | undefined {
  let offered: true | string;
  try {
    offered = tool.surfaces?.mcpGate?.(app) ?? true;
  } catch (error) {
    offered = `mcp gate failed: ${(error as Error).message}`;
  }
  return offered === true ? undefined : offered;
}

/** The tool's `mcpGate` as the call's surface gate. */
function mcpGateError(app: App, tool: AnyTool): SvcError | undefined {
  const reason = mcpGateReason(app, tool);
  if (reason === undefined) return undefined;
  return new SvcError('unavailable', `${tool.name} is not offered over MCP: ${reason}`, {
    details: { tool: tool.name, reason },
  });
}

/**
 * A JSON-RPC error for the SDK to answer with: its code, data and the message as it is. (An
 * `McpError` carries `MCP error <code>: ` in its message, which went onto the wire and was
 * prefixed again by the client: `MCP error -32602: MCP error -32602: …`.)
 */
function protocolError(
  code: number,
  message: string,
  data?: unknown,
): Error & { code: number; data?: unknown } {
  return Object.assign(new Error(message), { code, ...(data !== undefined ? { data } : {}) });
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
