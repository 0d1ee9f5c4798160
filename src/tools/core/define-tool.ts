/**
 * A tool is defined once and served everywhere: the agent gets it through the funnel, the HTTP
 * adapter mounts its `http` binding, the MCP server lists its `mcp` binding, the CLI adds its
 * `cli` command. Route-specific rules live in the binding options, never in a second handler.
 * @module
 */
import type { z } from 'zod';
import type { App } from '../../app';
import type { SvcError } from '../../errors';

export type ToolTag = 'primitive' | 'workflow';
export type Surface = 'agent' | 'http' | 'mcp' | 'cli' | 'tui';

export interface PermissionRequest {
  tool: string;
  /** What is being done, for the prompt: `write src/a.ts`, `bash: npm test`. */
  title: string;
  /** Keys a session-wide grant: same tool + same scope skips the prompt next time. */
  scope?: string;
  /** Analysis says this call only reads (e.g. `git status`): policy may skip the prompt. */
  safe?: boolean;
  /** Shown in the prompt: the diff of an edit, the command of a bash call… (metadata, redacted). */
  details?: Record<string, unknown>;
}

export interface ToolContext {
  app: App;
  surface: Surface;
  signal: AbortSignal;
  sessionId?: string;
  runId?: string;
  /** The agent kind running the tool (build, plan, …) when called by an agent. */
  agent?: string;
  toolCallId?: string;
  /** Ask the attached operator (or policy) for approval; throws a `forbidden` SvcError on deny. */
  ask(request: PermissionRequest): Promise<void>;
  /** Progress for the UI (metadata only). */
  progress?(update: Record<string, unknown>): void;
  /**
   * Append an event to the current run's ledger (e.g. `local_shell_started`,
   * `background_job_started`, `sandbox_exec_started`); a no-op outside a run.
   */
  event?(type: string, payload: Record<string, unknown>): void;
}

export interface GateEnv {
  app: App;
}

/** Where a value of the input comes from on an HTTP route. */
export interface HttpBinding {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Hono path, always under /v1/ (e.g. `/v1/sessions/:id/observability`). */
  path: string;
  /** Path parameter → input field (e.g. `{ id: 'session_id' }`). */
  params?: Record<string, string>;
  /** Constant input fields for this route (e.g. `{ action: 'list' }`). */
  fixed?: Record<string, unknown>;
  /** Success status (default 200). */
  status?: number;
  /** Error body shape; default canonical `{error:{message,type}}`. */
  errors?: 'canonical' | 'flat' | 'text';
  /** Answer 503 `App not ready` until the app is ready (default true). */
  requiresReady?: boolean;
  /** Status code overrides by error code, e.g. `{ not_found: 200 }`. */
  statusFor?: Partial<Record<string, number>>;
  /**
   * The answer when the tool is not registered (its gate is closed). Default: 404 plain text.
   * Return an error to answer with it instead (e.g. 503 when the gate is on but a service the
   * tool needs is missing), or undefined for the default.
   */
  unregistered?: (app: App) => SvcError | undefined;
  /**
   * Adjust the assembled input (path params, query or body, fixed fields) before validation, e.g.
   * accept a client's spelling of a field (`prompt` for `text`).
   */
  prepare?: (input: Record<string, unknown>) => Record<string, unknown>;
}

export interface CliBinding {
  /** Space-separated command path: `config show-config-status`. */
  command: string;
  /** Input fields taken as positional arguments, in order. `name?` marks one optional. */
  args?: string[];
  /** Human output when `--json` is not given. Default: an indented key/value rendering. */
  text?: (result: any, input: any) => string;
  description?: string;
  /** Constant input fields for this command (e.g. `{ action: 'set' }`). */
  fixed?: Record<string, unknown>;
  /** Adjust the assembled input before validation (e.g. parse a TOML value). */
  prepare?: (input: Record<string, unknown>) => Record<string, unknown>;
  /** Run even when the tool's gate is closed (the command reports the closed state itself). */
  ungated?: boolean;
  /** Exit code when the result says so (e.g. strict checks). */
  exitCode?: (result: any) => number;
  /**
   * Wrap the tool's payload with command-local fields before printing (both `--json` and text),
   * e.g. a readout inside `{ posture, …discovery }`. The payload itself stays unchanged inside.
   */
  envelope?: (result: any, context: { app: App; input: any }) => unknown;
}

export interface ToolSurfaces {
  http?: HttpBinding | HttpBinding[];
  /** MCP tool name (still needs `services.mcp.exposed_tools`). */
  mcp?: string;
  /** Offered over MCP only when this says so (e.g. stigmergy read tools enabled in config). */
  mcpGate?: (app: App) => true | string;
  cli?: CliBinding | CliBinding[];
}

export interface ToolDef<I extends z.ZodType = z.ZodType, O = unknown> {
  /** The native tool name, exact as the spec writes it. */
  name: string;
  /** Family from native-tools.tsv (core-files, runs, status, …). */
  family: string;
  tag: ToolTag;
  description: string;
  input: I;
  /**
   * Touches the workspace, processes or the outside world: asks permission, is withheld in
   * read-only modes and the planning phase, and honours hard workspace claims.
   */
  mutates: boolean;
  /**
   * The tool calls `ctx.ask` itself (with a precise title, scope, `safe` hint and details). When
   * absent, the agent loop asks once, centrally, before running a mutating tool whose permission
   * is not already allowed (allowed_tools, --yolo, a session grant).
   */
  asksPermission?: boolean;
  /**
   * Calls of this tool made in one model step may run side by side instead of one at a time
   * (the `agent` tool under a fan_out genome). Asked per call; default one at a time.
   */
  concurrent?: (env: { app: App; sessionId: string }) => boolean;
  /** Registered at all? `true`, or a string saying why not (shown by the funnel report). */
  gate?: (env: GateEnv) => true | string;
  surfaces?: ToolSurfaces;
  run(ctx: ToolContext, input: z.output<I>): Promise<O> | O;
  /**
   * Sample inputs for read tools. The parity test calls every surface with each and compares
   * the JSON; a read tool with surfaces whose empty input is invalid must give one.
   */
  examples?: z.input<I>[];
  /**
   * false: calls change state or depend on process-local state (ids created per call, in-memory
   * jobs, the network), so the parity walker does not compare surfaces for this tool.
   */
  parity?: boolean;
  /** Text the model reads; default is the JSON of the result. */
  toModelOutput?(result: O): string;
}

export type AnyTool = ToolDef<z.ZodType, any>;

export function defineTool<I extends z.ZodType, O>(def: ToolDef<I, O>): ToolDef<I, O> {
  return def;
}
