/**
 * The shapes of the transcript: its items (user prompts, assistant text, tool calls, notices) and
 * the state the chat shows. Used by the reducers, the TUI's views and the web UI.
 * @module
 */
import type { FailureReport } from '../../../errors';
import type { SessionEventPayloads } from '../../../events/types';
import type { PermissionPrompt } from '../client';

export type RunState = SessionEventPayloads['state.changed']['state'];

export interface UserItem {
  kind: 'user';
  key: string;
  text: string;
  message_id?: string;
  queued?: boolean;
}
export interface AssistantItem {
  kind: 'assistant';
  key: string;
  message_id: string;
  text: string;
  reasoning: string;
  done: boolean;
}
export interface ToolItem {
  kind: 'tool';
  key: string;
  tool_call_id: string;
  run_id?: string;
  tool: string;
  title: string;
  status: 'running' | 'done' | 'error' | 'denied';
  summary?: string;
  duration_ms?: number;
  /** Unified diff of the change, from the permission request or the result. */
  diff?: string;
  files: { path: string; change: string }[];
}
export interface NoticeItem {
  kind: 'notice';
  key: string;
  level: 'info' | 'warn' | 'error';
  text: string;
  /** A classified failure: its next step is shown under the text, its details one key away. */
  failure?: FailureReport;
}
export type Item = UserItem | AssistantItem | ToolItem | NoticeItem;

export interface TranscriptState {
  sessionId: string;
  title: string;
  /** The session's own model (null: the configured default). */
  model: string | null;
  /** The model the latest run used (what the default resolved to). */
  runModel?: string;
  /** The model the next turn would use, from the model-selection readout (before any run). */
  nextModel?: string;
  items: Item[];
  state: RunState;
  runId?: string;
  queue: { id: string; preview: string }[];
  permissions: PermissionPrompt[];
  usage: { input_tokens: number; output_tokens: number; cost: number };
  /**
   * The cost ledger's figures (every model call, titles, summaries and compaction included), when
   * the server has them: what the status line shows instead of the run totals.
   */
  spend?: Spend;
  context?: { input_tokens: number; context_window: number; ratio: number };
  lastEventId: number;
  connection: 'connected' | 'reconnecting' | 'closed';
  /** The latest classified failure (a failed run or a refused tool call): what /why shows. */
  lastFailure?: { run_id?: string; tool?: string; failure: FailureReport };
}

/** Spend from the cost ledger (`stats_report`'s `spend`), in USD. */
export interface Spend {
  session: number;
  today: number;
  /** `[budget] session_usd` / `daily_usd`, when set. */
  session_limit?: number;
  daily_limit?: number;
}
