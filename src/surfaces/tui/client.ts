/**
 * Everything the terminal UI needs from svc, as one interface. Two transports implement it: the
 * in-process client over the App (`local-client.ts`) and HTTP + SSE against a running
 * `svc service start http` (`http-client.ts`, `svc attach <url>`). The UI code is the same for
 * both, so whatever the TUI can do, an HTTP client can do.
 *
 * Failures are `SvcError`s; a capability this build (or the attached server) does not have yet
 * is an `unavailable` SvcError whose message says what is missing, which the UI shows as a line.
 * @module
 */
import { SvcError } from '../../errors';
import type { SessionEvent } from '../../events/bus';
import type { SessionSummary } from '../../sessions/session-views';

/** A session as the TUI lists and shows it: the one session summary (sessions/session-views.ts). */
export type { SessionSummary };

/** A past message, reduced to what the transcript shows. */
export interface HistoryMessage {
  id: string;
  role: 'user' | 'assistant' | 'system' | 'tool';
  run_id: string | null;
  parts: HistoryPart[];
}

export type HistoryPart =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool-call'; tool_call_id: string; tool: string; input: unknown }
  | { type: 'tool-result'; tool_call_id: string; tool: string; output: unknown; is_error?: boolean }
  | { type: 'error'; message: string }
  | { type: string; [key: string]: unknown };

export type PermissionDecision = 'allow_once' | 'allow_session' | 'deny';

export interface PermissionPrompt {
  session_id: string;
  request_id: string;
  run_id?: string;
  /** The model's tool call this request belongs to, when the agent loop asked for one. */
  tool_call_id?: string;
  tool: string;
  title: string;
  /** The diff of an edit, the command of a bash call… (redacted metadata). */
  details?: Record<string, unknown>;
}

export interface SendResult {
  /** The run started by this prompt, when it started one. */
  run_id?: string;
  /** True when the prompt went to the session queue (a run was active). */
  queued: boolean;
  /** Queue length after the call, when known. */
  queue_length?: number;
}

export interface ModelChoice {
  /** `<provider>/<model>` */
  selector: string;
  provider: string;
  name: string;
  context_window?: number;
  /** Whether the provider has what it needs to serve this model (credentials, base URL). */
  ready?: boolean;
}

export interface ProviderRow {
  id: string;
  name: string;
  configured: boolean;
  ready: boolean;
  /** One line on what is set or missing (redacted). */
  detail: string;
  /** `svc auth …` command that bootstraps this provider's credentials, when it has one. */
  auth_command?: string;
  /** Env var the provider reads its key from, when it has one. */
  env_var?: string;
  /** How the provider authenticates: api_key, oauth, cloud, local, vendor_cli, acp. */
  auth?: string;
}

export interface ClientInfo {
  /** Workspace path (local) or server URL (attach). */
  target: string;
  transport: 'local' | 'http';
  /** False until the agent loop is available in this build / on this server. */
  agent: boolean;
}

export interface ToolCallOptions {
  sessionId?: string;
  signal?: AbortSignal;
}

export interface ToolResult {
  value: unknown;
  /** Human text as the CLI prints it without --json, when the tool has a CLI text renderer. */
  text?: string;
}

export interface EventSubscription {
  close(): void;
}

export interface SubscribeOptions {
  /**
   * Replay events after this id (exclusive; 0 replays everything retained). Omitted: only events
   * published from now on (the caller loads the history first).
   */
  afterId?: number;
  /** Connection status changes (reconnecting over HTTP, for the status line). */
  onStatus?(status: 'connected' | 'reconnecting' | 'closed', detail?: string): void;
}

export interface TuiClient {
  info(): ClientInfo;

  listSessions(options?: { limit?: number }): Promise<SessionSummary[]>;
  createSession(input?: { title?: string; model?: string }): Promise<SessionSummary>;
  getSession(sessionId: string): Promise<SessionSummary>;
  messages(sessionId: string): Promise<HistoryMessage[]>;

  /** Send a prompt: starts a run, or queues it when one is active. */
  sendPrompt(sessionId: string, text: string): Promise<SendResult>;
  /** Put a prompt on the session queue (ctrl+enter, /enqueue, the `queue_enqueue` tool). */
  enqueue(sessionId: string, text: string): Promise<SendResult>;
  /** Cancel the session's active run (esc). */
  cancel(sessionId: string): Promise<void>;
  pendingPermissions(sessionId: string): Promise<PermissionPrompt[]>;
  answerPermission(sessionId: string, requestId: string, decision: PermissionDecision): Promise<void>;

  /** Session events, replaying retained ones after `afterId` first. */
  subscribe(
    sessionId: string,
    listener: (event: SessionEvent) => void,
    options?: SubscribeOptions,
  ): Promise<EventSubscription>;

  /** The native name of the tool behind a CLI command (`config show-model-selection`), if any. */
  toolForCli(command: string): string | undefined;
  /** Call a tool by its native name (slash commands); `unavailable` when it is not registered. */
  callTool(name: string, input: Record<string, unknown>, options?: ToolCallOptions): Promise<ToolResult>;

  listModels(): Promise<ModelChoice[]>;
  setSessionModel(sessionId: string, selector: string): Promise<SessionSummary>;
  providerStatus(): Promise<ProviderRow[]>;
  /**
   * The model the next turn would use when no provider is configured but a local model server
   * answers on loopback (ollama, LM Studio, llama.cpp, vLLM); undefined when there is none.
   */
  localModel?(): Promise<string | undefined>;
  /** Put an API key into the credential store (Manage Providers, onboarding). */
  storeApiKey(provider: string, key: string): Promise<void>;

  close(): Promise<void>;
}

/** A capability is missing here (a tool not registered, a server without the route), or down. */
export function isUnavailable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: string }).code === 'unavailable';
}

/** The `unavailable` error of a tool this build or server does not have (or has gated off). */
export function missingTool(tool: string, message: string): SvcError {
  return new SvcError('unavailable', message, { details: { reason: 'tool_missing', tool } });
}

/** A tool call failed because the tool is not there (vs. failed while running). */
export function isMissingTool(error: unknown): boolean {
  return (
    isUnavailable(error) && (error as { details?: { reason?: string } }).details?.reason === 'tool_missing'
  );
}
