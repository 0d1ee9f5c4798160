/**
 * The toolbox's tools → AI SDK tools for one run. Every call goes through the one call path
 * (`AgentToolbox.call`, over `callTool`): the funnel of the current step as the gate, validation
 * with the tool's own schema (a bad input is a tool error the model reads, the run goes on), the
 * central permission ask of a mutating tool that does not ask itself, the run with `ask` through
 * the permission service and `event` into the run ledger; the result (or the failure) becomes
 * redacted text for the model, with tool.started/tool.finished events around it. Calls of one step run
 * one at a time, in the order the model made them — except calls of a tool that says they may run
 * side by side (`concurrent`, e.g. `agent` under a fan_out genome): those start together after
 * the calls before them, and the next ordinary call waits for all of them.
 * @module
 */
import type { ToolSet } from 'ai';
import { SvcError, toSvcError } from '../errors';
import type { PermissionAskContext } from '../permissions/permission-service';
import { callTitle, oneLine } from '../permissions/tool-policy';
import { sameItems } from '../util/arrays';
import { type CallStartOptions, ledger, ledgerAnnounced, startOf } from './call-start';
import type { AgentHost } from './deps';
import { classifySandboxDenial, classifyToolError, type Failure } from './failure';
import type { FinishedWrite } from './step-recorder';
import type { AgentCallResult, AgentToolbox, AgentToolSpec } from './toolbox';

/** Longest tool output handed to the model; the rest is cut with a note. */
export const MAX_TOOL_OUTPUT_CHARS = 100_000;

export interface ToolBridgeOptions extends CallStartOptions {
  app: AgentHost;
  /** The tools, through the agent's port (registry, funnel, the one call path). */
  toolbox: AgentToolbox;
  sessionId: string;
  runId: string;
  agent: string;
  signal: AbortSignal;
  permission: Omit<PermissionAskContext, 'toolCallId' | 'signal' | 'sessionId' | 'runId'>;
  /** Whether the tool is in the effective set of the current step (the funnel, re-checked per call). */
  isActive(name: string): boolean;
  /**
   * Before a call starts: the run records the call in the assistant message first, so every
   * surface sees the message that holds a call before the call's `tool.started` (the AI SDK may
   * run a tool before the stream's `tool-call` part reaches the run's reader).
   */
  beforeCall?(call: { tool_call_id: string; tool: string; input: unknown }): void | Promise<void>;
  /**
   * After a call, before `onResult`, where the ledger can carry a run event in another statement
   * (PostgreSQL): records the result in the step's tool message with its `tool.finished`
   * (`finished`) in that message's INSERT, one statement (p-pgstep7). False: not recorded so (not
   * the step's first result, a call that stops the run, a failed write); the bridge writes the
   * event itself and the stream's part records the result, as before.
   */
  recordResult?(
    call: { tool_call_id: string; tool: string; input: unknown; output: string; isError: boolean },
    finished: FinishedWrite,
  ): Promise<boolean | 'held'>;
  /** After each call (loop detection); may stop the run. */
  onResult(call: { tool: string; input: unknown; output: string; isError: boolean }): Promise<void>;
}

export interface ToolBridge {
  /**
   * The AI SDK tool set for these tools: one shared object per tool set (sharedToolSet), whose
   * calls reach this bridge through the stream's `experimental_context` (`context`).
   */
  toolSet(ai: typeof import('ai'), tools: readonly AgentToolSpec[]): ToolSet;
  /** What `streamText` gets as `experimental_context`, so the shared tool set calls this run. */
  readonly context: BridgeContext;
  /** One call in this run's order (what the model's tool call runs). */
  call(name: string, input: unknown, toolCallId: string): Promise<string>;
}

/** The run a shared tool set's call belongs to (the stream's `experimental_context`). */
export interface BridgeContext {
  svcToolBridge: ToolBridge;
}

export function createToolBridge(options: ToolBridgeOptions): ToolBridge {
  const { app, toolbox } = options;
  // `barrier`: the last one-at-a-time call; `group`: concurrent calls started after it.
  let barrier: Promise<unknown> = Promise.resolve();
  let group: Promise<unknown>[] = [];

  const execute = async (name: string, rawInput: unknown, toolCallId: string): Promise<string> => {
    const started = app.clock.now();
    const title = callTitle(name, rawInput);
    await options.beforeCall?.({ tool_call_id: toolCallId, tool: name, input: rawInput });
    // The event and its ledger row: one commit on SQLite, one statement on PostgreSQL where it can
    // (with the step's model call riding along, ./held-calls.ts, and its held message: p-pgride).
    // A call that changes nothing runs while that statement is in flight (p-readonly, `stored`).
    // A call whose start is held for its step end (p-heldstep) writes nothing before it runs.
    const start = await startOf(app, options, { tool_call_id: toolCallId, tool: name, title });
    const askContext: PermissionAskContext = {
      ...options.permission,
      sessionId: options.sessionId,
      runId: options.runId,
      toolCallId,
      signal: options.signal,
    };
    let output: string;
    let isError = false;
    let errorCode: string | undefined;
    let failure: Failure | undefined;
    // The OS sandbox stopped part of a command that otherwise ran (src/sandbox/denials.ts).
    let denial: Record<string, unknown> | undefined;
    // A tool that threw something other than an SvcError crashed (a bug, not an expected failure).
    let crashed = false;
    let result: AgentCallResult = options.signal.aborted
      ? { ok: false, error: toSvcError(options.signal.reason), crashed: false }
      : await toolbox.call(name, rawInput, {
          sessionId: options.sessionId,
          runId: options.runId,
          agent: options.agent,
          toolCallId,
          signal: options.signal,
          ...(start.ahead ? { ahead: start.ahead } : {}),
          ask: async (request) => {
            if (start.wait) await start.wait();
            await app.permissions.ask(request, askContext);
          },
          event: async (type, payload) => {
            if (start.wait) await start.wait();
            if (type === 'sandbox_denied') denial ??= payload;
            await ledger(app, options.runId, type, {
              tool_call_id: toolCallId,
              ...app.redactor.value(payload),
            });
          },
          gate: (tool) =>
            options.isActive(tool)
              ? undefined
              : new SvcError(
                  'forbidden',
                  `${tool} is not available in this session now (withheld by the funnel: mode, workflow phase, agent policy or disabled_tools)`,
                ),
        });
    const startWrite = start.written();
    if (startWrite) {
      // Run ahead: as if run after its start's statement (`startedAhead`).
      await startWrite;
      if (options.signal.aborted)
        result = { ok: false, error: toSvcError(options.signal.reason), crashed: false };
    }
    if (result.ok) {
      output = cap(app.redactor.string(result.text));
    } else {
      const e = result.error;
      if (e.code === 'internal') app.log.error('tool failed', { tool: name, error: e.cause ?? e });
      isError = true;
      errorCode = e.code;
      failure = classifyToolError(name, e);
      // A tool stopped by a cancel threw because of it: not a crash.
      crashed = result.crashed && !(e.cause instanceof ToolFailure) && !options.signal.aborted;
      output = cap(app.redactor.string(`${e.code}: ${e.message}`));
    }
    failure ??= denial ? classifySandboxDenial(name, denial) : undefined;
    if (failure) {
      failure = app.redactor.value(failure);
      app.log.warn('tool refused', {
        run_id: options.runId,
        code: failure.code,
        summary: failure.summary,
        next: failure.next,
      });
    }
    const duration_ms = app.clock.now() - started;
    const finished = {
      tool_call_id: toolCallId,
      tool: name,
      is_error: isError,
      duration_ms,
      ...(isError ? { error: summaryOf(output), error_code: errorCode } : {}),
      ...(failure ? { failure } : {}),
      ...(crashed ? { crash: true } : {}),
    };
    const event = {
      session_id: options.sessionId,
      run_id: options.runId,
      tool_call_id: toolCallId,
      tool: name,
      is_error: isError,
      duration_ms,
      summary: summaryOf(output),
      ...(failure ? { failure } : {}),
    };
    const call = { tool_call_id: toolCallId, tool: name, input: rawInput, output, isError };
    if (!(await recordedWithResult(app, options, call, finished, event))) {
      // Its result not held with its held start (a call that stops the run, a cancel): the start first.
      await start.beforeAlone();
      await app.store.transactions.togetherWith(async () =>
        ledgerAnnounced(app, options.runId, finished, options.sessionId, 'tool.finished', event),
      );
    }
    await options.onResult({ tool: name, input: rawInput, output, isError });
    if (isError) throw new ToolFailure(output);
    return output;
  };

  const bridge: ToolBridge = {
    toolSet: (ai, tools) => sharedToolSet(ai, tools),
    get context() {
      return context;
    },
    async call(name, input, toolCallId) {
      if (await toolbox.concurrent(name, options.sessionId)) {
        const next = barrier.then(() => execute(name, input, toolCallId));
        group.push(next.catch(() => {}));
        return next;
      }
      // No concurrent calls before it (the common step): after the barrier alone, without the two
      // promises Promise.all adds.
      const before = group.length === 0 ? barrier : Promise.all([barrier, ...group]);
      const next = before.then(() => execute(name, input, toolCallId));
      barrier = next.catch(() => {});
      group = [];
      return next;
    },
  };
  const context: BridgeContext = { svcToolBridge: bridge };
  return bridge;
}

/**
 * The AI SDK tool sets built so far, per SDK module and tool set (the names in order, then the
 * spec objects compared one by one): a run, a compat request or a sub-agent with the same tools as
 * an earlier one reuses its tool set, descriptions and JSON Schemas included, instead of building
 * ~150 tool objects again. Bounded: a changed tool set (an MCP server connecting, a reload)
 * replaces the oldest entries.
 */
const toolSets = new WeakMap<
  typeof import('ai'),
  Map<string, { specs: readonly AgentToolSpec[]; set: ToolSet }>
>();
const MAX_TOOL_SETS = 32;
/** The entry `sharedToolSet` returned last, per SDK module (valid while the map still holds it). */
const lastToolSet = new WeakMap<
  typeof import('ai'),
  { key: string; entry: { specs: readonly AgentToolSpec[]; set: ToolSet } }
>();

let toolSetBuilds = 0;

/** How many AI SDK tool sets were built since start (a cache miss each): for tests and benches. */
export function toolSetBuildCount(): number {
  return toolSetBuilds;
}

export function sharedToolSet(ai: typeof import('ai'), tools: readonly AgentToolSpec[]): ToolSet {
  let cache = toolSets.get(ai);
  if (!cache) {
    cache = new Map();
    toolSets.set(ai, cache);
  }
  // The set returned last, first (every compat request asks for the same one): the spec objects
  // compared one by one, without joining ~150 names into a key and hashing it.
  const last = lastToolSet.get(ai);
  if (last && cache.get(last.key) === last.entry && sameItems(last.entry.specs, tools)) return last.entry.set;
  const key = tools.map((t) => t.name).join('\n');
  const hit = cache.get(key);
  if (hit && sameItems(hit.specs, tools)) {
    lastToolSet.set(ai, { key, entry: hit });
    return hit.set;
  }
  toolSetBuilds++;
  const set: ToolSet = {};
  for (const tool of tools) {
    const name = tool.name;
    set[name] = ai.tool({
      description: tool.description,
      inputSchema: sdkSchemaOf(ai, tool),
      execute: async (input: unknown, { toolCallId, experimental_context }) => {
        const bridge = (experimental_context as BridgeContext | undefined)?.svcToolBridge;
        if (!bridge) throw new ToolFailure(`internal: ${name} was called outside an svc run`);
        return await bridge.call(name, input, toolCallId);
      },
    }) as ToolSet[string];
  }
  cache.delete(key);
  const entry = { specs: [...tools], set };
  cache.set(key, entry);
  lastToolSet.set(ai, { key, entry });
  if (cache.size > MAX_TOOL_SETS) cache.delete(cache.keys().next().value as string);
  return set;
}

/** A tool error whose message is already the model-facing text. */
export class ToolFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolFailure';
  }
}

/** The SDK's schema object for a tool, cached per tool spec (one spec per tool definition). */
const sdkSchemaCache = new WeakMap<AgentToolSpec, { ai: typeof import('ai'); schema: FlexibleSchema }>();
type FlexibleSchema = ReturnType<typeof import('ai')['jsonSchema']>;

function sdkSchemaOf(ai: typeof import('ai'), tool: AgentToolSpec): FlexibleSchema {
  const hit = sdkSchemaCache.get(tool);
  if (hit && hit.ai === ai) return hit.schema;
  const schema = ai.jsonSchema(tool.inputSchema);
  sdkSchemaCache.set(tool, { ai, schema });
  return schema;
}

function cap(text: string): string {
  if (text.length <= MAX_TOOL_OUTPUT_CHARS) return text;
  return `${text.slice(0, MAX_TOOL_OUTPUT_CHARS)}\n[output truncated: ${text.length - MAX_TOOL_OUTPUT_CHARS} more characters; narrow the request to see the rest]`;
}

export function summaryOf(output: string): string {
  return oneLine(output, 200);
}

/**
 * The call's `tool.finished` (its ledger row `finished`, its session event `event`) written with
 * the call's result in the step's tool message, by its INSERT (`recordResult`, p-pgstep7); false:
 * not written, the caller writes it. Not for a cancelled call: the stream records no result for it
 * (the step's end closes it as interrupted), so its event goes alone as before.
 */
async function recordedWithResult(
  app: AgentHost,
  options: ToolBridgeOptions,
  call: Parameters<NonNullable<ToolBridgeOptions['recordResult']>>[0],
  finished: Record<string, unknown>,
  event: Record<string, unknown>,
): Promise<boolean> {
  const follow = app.runs.followingEvent;
  if (!follow || !options.recordResult || options.signal.aborted) return false;
  const at = app.clock.now();
  const following = follow(options.runId, 'tool.finished', finished, at);
  const recorded = await options.recordResult(call, {
    write: following.write,
    events: [{ type: 'tool.finished', payload: event }],
    event: { type: 'tool.finished', payload: finished, created_at: at },
  });
  // The message and the session event were written, the run event not (its run's row is gone):
  // logged as the ledger's own append failure would be, not written twice.
  if (recorded === true && !following.written())
    app.log.warn('run ledger append failed', { run_id: options.runId, type: 'tool.finished' });
  // 'held': written with the step's end (p-pgtoolend), or alone before anything that needs it.
  return recorded !== false;
}
