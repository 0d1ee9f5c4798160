/**
 * The agent's port to the tools: what a run needs of the tool registry, declared here so the
 * agent (a domain) never imports the tool layer. `tools/core/agent-toolbox.ts` implements it over
 * the registry, the funnel and `callTool` (the one call path every surface uses); `createApp`
 * wires it.
 * @module
 */
import type { JSONSchema7 } from 'ai';
import type { SvcError } from '../errors';
import type { PermissionRequest } from '../permissions/permission-service';
import type { FunnelContext } from '../permissions/tool-policy';

/** A tool as the agent offers it to the model. One object per tool definition (cache key). */
export interface AgentToolSpec {
  name: string;
  /** Family from native-tools.tsv (core-files, …); `mcp:<server>` for an MCP server's tool. */
  family: string;
  description: string;
  /** The input's JSON Schema, as the model and MCP clients see it. */
  inputSchema: JSONSchema7;
  /** The tool changes nothing at all (the definition's audited `readsOnly`). */
  readsOnly?: true;
}

/** Who calls, for one call of a run. */
export interface AgentCallContext {
  sessionId: string;
  runId: string;
  /** The agent kind running the tool (build, plan, …). */
  agent: string;
  toolCallId: string;
  signal: AbortSignal;
  /** Ask the operator (the permission service with the run's ask context). */
  ask(request: PermissionRequest): Promise<void>;
  /** Append an event to the run's ledger (`local_shell_started`, …). */
  event(type: string, payload: Record<string, unknown>): Promise<void>;
  /** The run's own gate (the funnel of the current step): an error refuses the call. */
  gate?(name: string): SvcError | undefined;
  /**
   * The call runs while its step's first statement (this promise) is in flight (PostgreSQL, a
   * `readsOnly` tool): its reads of the run's own session (`sessionId`) see the row as that
   * statement will store it (`SessionStore.pending`), or, when this process does not know it, wait
   * for the statement and read it then (kept in memory by its answer): never a round trip more.
   * No other session's row, no other reader.
   */
  ahead?: Promise<void>;
}

/** A call's answer: the text the model reads, or the failure (its message already redacted). */
export type AgentCallResult =
  | { ok: true; text: string }
  | {
      ok: false;
      error: SvcError;
      /** The tool threw something other than an SvcError (a bug, not an expected failure). */
      crashed: boolean;
    };

export interface AgentToolbox {
  /**
   * The effective tools of a session context (the funnel), in registry order. The array may be
   * shared between calls with the same registry state, config and context: do not change it.
   */
  effective(context: FunnelContext): readonly AgentToolSpec[];
  /**
   * Every registered tool (the model's calls are parsed against the whole set). The array is
   * shared while the registry's state stays: do not change it.
   */
  registered(): readonly AgentToolSpec[];
  /** A registered tool by name. */
  get(name: string): AgentToolSpec | undefined;
  /** Calls of this tool in one step may run side by side (the `agent` tool under fan_out). */
  concurrent(name: string, sessionId: string): Promise<boolean>;
  call(name: string, input: unknown, context: AgentCallContext): Promise<AgentCallResult>;
}
