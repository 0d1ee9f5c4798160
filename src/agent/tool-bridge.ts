/**
 * Registry tools → AI SDK tools for one run. Every call goes through the same path:
 * validate with the tool's own schema (a bad input is a tool error the model reads, the run goes
 * on), ask permission centrally for mutating tools that do not ask themselves, run with a
 * ToolContext whose `ask` is the permission service and whose `event` appends to the run ledger,
 * and turn the result (or the failure) into redacted text for the model. Calls of one step run
 * one at a time, in the order the model made them — except calls of a tool that says they may run
 * side by side (`concurrent`, e.g. `agent` under a fan_out genome): those start together after
 * the calls before them, and the next ordinary call waits for all of them.
 * @module
 */
import type { JSONSchema7, ToolSet } from 'ai';
import { z } from 'zod';
import type { App } from '../app';
import { SvcError, toSvcError } from '../errors';
import type { PermissionAskContext } from '../permissions/permission-service';
import { atomically } from '../store/db';
import type { AnyTool, PermissionRequest, ToolContext } from '../tools/core/define-tool';
import { parseToolInput } from '../tools/core/invoke';

/** Longest tool output handed to the model; the rest is cut with a note. */
export const MAX_TOOL_OUTPUT_CHARS = 100_000;

const schemaCache = new WeakMap<AnyTool, JSONSchema7>();

export interface ToolBridgeOptions {
  app: App;
  sessionId: string;
  runId: string;
  agent: string;
  signal: AbortSignal;
  permission: Omit<PermissionAskContext, 'toolCallId' | 'signal' | 'sessionId' | 'runId'>;
  /** Whether the tool is in the effective set of the current step (the funnel, re-checked per call). */
  isActive(name: string): boolean;
  /** After each call (loop detection); may stop the run. */
  onResult(call: { tool: string; input: unknown; output: string; isError: boolean }): void;
}

export interface ToolBridge {
  /** The AI SDK tool set for these registry tools (schemas cached per tool definition). */
  toolSet(ai: typeof import('ai'), tools: readonly AnyTool[]): ToolSet;
}

export function createToolBridge(options: ToolBridgeOptions): ToolBridge {
  const { app } = options;
  // `barrier`: the last one-at-a-time call; `group`: concurrent calls started after it.
  let barrier: Promise<unknown> = Promise.resolve();
  let group: Promise<unknown>[] = [];

  const execute = async (tool: AnyTool, rawInput: unknown, toolCallId: string): Promise<string> => {
    const started = app.clock.now();
    const title = titleFor(tool.name, rawInput);
    // The event and its ledger row: one commit.
    atomically(
      () => app.db,
      () => {
        app.bus.publish(options.sessionId, 'tool.started', {
          session_id: options.sessionId,
          run_id: options.runId,
          tool_call_id: toolCallId,
          tool: tool.name,
          title: app.redactor.string(title),
        });
        ledger(app, options.runId, 'tool.started', { tool_call_id: toolCallId, tool: tool.name, title });
      },
    );
    let output: string;
    let isError = false;
    let errorCode: string | undefined;
    // A tool that threw something other than an SvcError crashed (a bug, not an expected failure).
    let crashed = false;
    try {
      options.signal.throwIfAborted();
      if (!options.isActive(tool.name)) {
        throw new SvcError(
          'forbidden',
          `${tool.name} is not available in this session now (withheld by the funnel: mode, workflow phase, agent policy or disabled_tools)`,
        );
      }
      const input = parseToolInput(tool, rawInput);
      const askContext: PermissionAskContext = {
        ...options.permission,
        sessionId: options.sessionId,
        runId: options.runId,
        toolCallId,
        signal: options.signal,
      };
      let approvedCentrally = false;
      if (tool.mutates && !tool.asksPermission) {
        await app.permissions.ask(
          { tool: tool.name, title, details: { input: app.redactor.value(input) } },
          askContext,
        );
        approvedCentrally = true;
      }
      const ctx: ToolContext = {
        app,
        surface: 'agent',
        signal: options.signal,
        sessionId: options.sessionId,
        runId: options.runId,
        agent: options.agent,
        toolCallId,
        // Approved once for this call already: the tool's own asks in the same call do not prompt again.
        ask: async (request: PermissionRequest) => {
          if (!approvedCentrally) await app.permissions.ask(request, askContext);
        },
        event: (type, payload) =>
          ledger(app, options.runId, type, { tool_call_id: toolCallId, ...app.redactor.value(payload) }),
        progress: () => {},
      };
      const result = await tool.run(ctx, input);
      output = cap(app.redactor.string(toText(tool, result)));
    } catch (error) {
      const e = toSvcError(error);
      if (e.code === 'internal') app.log.error('tool failed', { tool: tool.name, error: e.cause ?? e });
      isError = true;
      errorCode = e.code;
      // A tool stopped by a cancel threw because of it: not a crash.
      crashed =
        !SvcError.is(error) &&
        e.code === 'internal' &&
        !(error instanceof ToolFailure) &&
        !options.signal.aborted;
      output = cap(app.redactor.string(`${e.code}: ${e.message}`));
    }
    const duration_ms = app.clock.now() - started;
    atomically(
      () => app.db,
      () => {
        app.bus.publish(options.sessionId, 'tool.finished', {
          session_id: options.sessionId,
          run_id: options.runId,
          tool_call_id: toolCallId,
          tool: tool.name,
          is_error: isError,
          duration_ms,
          summary: summaryOf(output),
        });
        ledger(app, options.runId, 'tool.finished', {
          tool_call_id: toolCallId,
          tool: tool.name,
          is_error: isError,
          duration_ms,
          ...(isError ? { error: summaryOf(output), error_code: errorCode } : {}),
          ...(crashed ? { crash: true } : {}),
        });
      },
    );
    options.onResult({ tool: tool.name, input: rawInput, output, isError });
    if (isError) throw new ToolFailure(output);
    return output;
  };

  const concurrent = (tool: AnyTool) => {
    try {
      return tool.concurrent?.({ app, sessionId: options.sessionId }) === true;
    } catch {
      return false;
    }
  };

  return {
    toolSet(ai, tools) {
      const set: ToolSet = {};
      for (const tool of tools) {
        set[tool.name] = ai.tool({
          description: tool.description,
          inputSchema: sdkSchemaOf(ai, tool),
          execute: (input: unknown, { toolCallId }: { toolCallId: string }) => {
            if (concurrent(tool)) {
              const next = barrier.then(() => execute(tool, input, toolCallId));
              group.push(next.catch(() => {}));
              return next;
            }
            const next = Promise.all([barrier, ...group]).then(() => execute(tool, input, toolCallId));
            barrier = next.catch(() => {});
            group = [];
            return next;
          },
        }) as ToolSet[string];
      }
      return set;
    },
  };
}

/** A tool error whose message is already the model-facing text. */
export class ToolFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolFailure';
  }
}

/** The SDK's schema object for a tool, cached per tool definition like its JSON schema. */
const sdkSchemaCache = new WeakMap<AnyTool, { ai: typeof import('ai'); schema: FlexibleSchema }>();
type FlexibleSchema = ReturnType<typeof import('ai')['jsonSchema']>;

function sdkSchemaOf(ai: typeof import('ai'), tool: AnyTool): FlexibleSchema {
  const hit = sdkSchemaCache.get(tool);
  if (hit && hit.ai === ai) return hit.schema;
  const schema = ai.jsonSchema(schemaOf(tool));
  sdkSchemaCache.set(tool, { ai, schema });
  return schema;
}

export function schemaOf(tool: AnyTool): JSONSchema7 {
  let schema = schemaCache.get(tool);
  if (!schema) {
    schema = z.toJSONSchema(tool.input, { io: 'input', unrepresentable: 'any' }) as JSONSchema7;
    delete (schema as Record<string, unknown>).$schema;
    schemaCache.set(tool, schema);
  }
  return schema;
}

function toText(tool: AnyTool, result: unknown): string {
  if (tool.toModelOutput) return tool.toModelOutput(result);
  if (typeof result === 'string') return result;
  return JSON.stringify(result ?? null);
}

function cap(text: string): string {
  if (text.length <= MAX_TOOL_OUTPUT_CHARS) return text;
  return `${text.slice(0, MAX_TOOL_OUTPUT_CHARS)}\n[output truncated: ${text.length - MAX_TOOL_OUTPUT_CHARS} more characters; narrow the request to see the rest]`;
}

/** A short human title of a call for UIs: `view src/a.ts`, `bash: npm test`. */
export function titleFor(tool: string, input: unknown): string {
  if (input && typeof input === 'object') {
    const record = input as Record<string, unknown>;
    if (typeof record.command === 'string') return `${tool}: ${oneLine(record.command, 100)}`;
    for (const key of [
      'path',
      'file_path',
      'url',
      'pattern',
      'query',
      'description',
      'session_id',
      'run_id',
      'action',
    ]) {
      if (typeof record[key] === 'string') return `${tool} ${oneLine(record[key] as string, 100)}`;
    }
  }
  return tool;
}

export function summaryOf(output: string): string {
  return oneLine(output, 200);
}

function oneLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function ledger(app: App, runId: string, type: string, payload: Record<string, unknown>) {
  try {
    app.runs.append(runId, type, payload);
  } catch (error) {
    app.log.warn('run ledger append failed', { run_id: runId, type, error });
  }
}
