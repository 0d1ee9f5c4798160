/**
 * The one call path. Every surface (HTTP, CLI, MCP, the agent, ACP, both TUI clients, the
 * scheduler) calls a tool through `callTool`: resolve the name (or migration alias) → gate (is it
 * registered; then the surface's own gate: `mcpGate` for MCP, the funnel for the agent) → input
 * validation (one message format everywhere, see input-issues.ts) → the central permission ask
 * of a mutating tool that does not ask itself → run → redaction → error mapping. It never throws:
 * it returns one `CallOutcome`, and each surface maps the outcome in one place.
 * @module
 */
import { SvcError, toSvcError } from '../../errors';
import { callTitle } from '../../permissions/tool-policy';
import { CONFIG_TOOL_ALIASES } from './aliases';
import { inputIssues, invalidInput } from './input-issues';
import type {
  AnyTool,
  CallContext,
  CallOutcome,
  InputIssue,
  PermissionRequest,
  ToolContext,
  ToolHost,
} from './types';

export interface CallOptions {
  /** The definition a surface bound (an HTTP route, a CLI command); default: resolved by name. */
  tool?: AnyTool;
  /** Run even when the registry's gate is closed (a CLI command that reports the closed state). */
  ungated?: boolean;
  /** The surface's own gate, checked once the tool is registered: an error refuses the call. */
  gate?: (tool: AnyTool) => SvcError | undefined;
  /**
   * Build the raw input once the tool is known and passed its gates (HTTP: path params, query
   * coerced by the tool's field types, the JSON body). Replaces `rawInput`; an error it throws is
   * an input failure (a malformed body or path segment).
   */
  assemble?: (tool: AnyTool) => unknown | Promise<unknown>;
  /**
   * The field an invalid-input message names first, from the issues (HTTP: a bad query
   * parameter, `invalid recent_runs_limit: …`, spec DASH-58).
   */
  leadField?: (issues: InputIssue[]) => string | undefined;
}

/** Call a tool by name; never throws. */
export async function callTool(
  host: ToolHost,
  name: string,
  rawInput: unknown,
  context: CallContext,
  options: CallOptions = {},
): Promise<CallOutcome> {
  const resolved = resolve(host, name, options);
  if (!resolved.ok) return resolved;
  const { tool } = resolved;
  const refused = surfaceGate(tool, options);
  if (refused) return { ok: false, tool, stage: 'gate', error: redacted(host, refused) };

  let raw: unknown;
  try {
    raw = withAlias(name, (options.assemble ? await options.assemble(tool) : rawInput) ?? {});
  } catch (thrown) {
    return { ok: false, tool, stage: 'input', error: redacted(host, toSvcError(thrown)) };
  }
  // jitless: zod would compile a parser for each tool's schema on its first call, which costs
  // more than the few calls a process makes of most tools (issue 17).
  const parsed = tool.input.safeParse(raw, { jitless: true });
  if (!parsed.success) {
    const issues = inputIssues(parsed.error, raw);
    const error = invalidInput(tool.name, issues, options.leadField?.(issues));
    return { ok: false, tool, stage: 'input', error: redacted(host, error) };
  }

  const run = async (): Promise<CallOutcome> => {
    try {
      const value = await tool.run(await contextFor(host, tool, raw, parsed.data, context), parsed.data);
      // A tool may answer with a ready HTTP response (its own status and body): it passes as it is.
      const shown = value instanceof Response ? value : host.redactor.value(value);
      return { ok: true, tool, input: parsed.data, value: shown };
    } catch (thrown) {
      const error = redacted(host, toSvcError(thrown));
      return { ok: false, tool, stage: 'run', error, crashed: !SvcError.is(thrown) };
    }
  };
  // One span and one latency/outcome sample per tool call (src/telemetry/service.ts).
  return host.telemetry.tool(
    {
      tool: tool.name,
      surface: context.surface,
      // A surface may bind its session lazily (MCP creates it when a tool first reads it): the
      // span takes the id only when it is already there, and never creates one.
      sessionId: settledValue(context, 'sessionId'),
      runId: context.runId,
      toolCallId: context.toolCallId,
      input: parsed.data,
    },
    run,
    (outcome) => (outcome.ok ? { output: outcome.value } : { error: outcome.error.code }),
  );
}

/** An own data property's value; undefined for a getter (reading it may have effects). */
function settledValue<T extends object, K extends keyof T>(object: T, key: K): T[K] | undefined {
  const descriptor = Object.getOwnPropertyDescriptor(object, key);
  return descriptor && 'value' in descriptor ? (descriptor.value as T[K]) : undefined;
}

/** callTool for in-process callers that want the value or a thrown SvcError (tests, scripts). */
export async function invokeTool(
  host: ToolHost,
  name: string,
  rawInput: unknown,
  context: CallContext,
  options: CallOptions = {},
): Promise<unknown> {
  const outcome = await callTool(host, name, rawInput, context, options);
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

/** Old config tool names call `config` with their action filled in. */
export function withAlias(name: string, rawInput: unknown): unknown {
  const action = CONFIG_TOOL_ALIASES[name];
  if (!action) return rawInput;
  return { ...(typeof rawInput === 'object' && rawInput !== null ? rawInput : {}), action };
}

function resolve(
  host: ToolHost,
  name: string,
  options: CallOptions,
): { ok: true; tool: AnyTool } | Extract<CallOutcome, { ok: false }> {
  const bound = options.tool;
  const live = host.tools.get(bound?.name ?? name);
  if (live) return { ok: true, tool: live };
  if (bound && options.ungated) return { ok: true, tool: bound };
  const gate = host.tools.gates().find((g) => g.tool.name === (bound?.name ?? name));
  if (gate) {
    const reason = gate.reason ?? 'gate closed';
    return {
      ok: false,
      tool: gate.tool,
      stage: 'gate',
      error: new SvcError('not_found', `tool ${gate.tool.name} is not registered: ${reason}`, {
        details: { tool: gate.tool.name, reason },
      }),
    };
  }
  return {
    ok: false,
    stage: 'unknown',
    error: new SvcError('not_found', `no tool named ${name}; see list_tool_capabilities`, {
      details: { tool: name },
    }),
  };
}

function surfaceGate(tool: AnyTool, options: CallOptions): SvcError | undefined {
  if (!options.gate) return undefined;
  try {
    return options.gate(tool);
  } catch (error) {
    return new SvcError('unavailable', `${tool.name} is not available: ${toSvcError(error).message}`);
  }
}

/**
 * The context the tool runs with. A mutating tool that does not ask for itself is asked for here,
 * once, through the caller's `ask` (the agent's permission service; a no-op for an operator's own
 * call); its own asks in the same call then do not prompt again.
 */
async function contextFor(
  host: ToolHost,
  tool: AnyTool,
  raw: unknown,
  input: unknown,
  context: CallContext,
): Promise<ToolContext> {
  const ask = context.ask;
  let approved = false;
  if (ask && tool.mutates && !tool.asksPermission) {
    await ask({
      tool: tool.name,
      title: callTitle(tool.name, raw),
      details: { input: host.redactor.value(input) },
    });
    approved = true;
  }
  // The caller's fields copied as they are: a getter (a session the MCP server creates on first
  // read) stays a getter instead of being read here.
  const out = Object.defineProperties({}, Object.getOwnPropertyDescriptors(context)) as ToolContext;
  return Object.assign(out, {
    app: host,
    // Defaults last: a caller's explicit `signal: undefined` must not erase them.
    signal: context.signal ?? new AbortController().signal,
    // Direct calls from an authenticated surface (CLI, HTTP, MCP) are the operator's own.
    ask: async (request: PermissionRequest) => {
      if (ask && !approved) await ask(request);
    },
  });
}

/** The error as it leaves svc: its message through the redactor. */
function redacted(host: ToolHost, error: SvcError): SvcError {
  const message = host.redactor.string(error.message);
  if (message === error.message) return error;
  return new SvcError(error.code, message, {
    status: error.status,
    details: error.details ? host.redactor.value(error.details) : undefined,
    cause: error.cause,
    retryable: error.retryable,
    retryAfterMs: error.retryAfterMs,
  });
}
