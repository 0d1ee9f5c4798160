/**
 * The TUI's shapes, read from the tools' payloads. Both transports call the same tools (the local
 * client through `callTool`, the attached client through each tool's HTTP route) and map their
 * answers with these functions, so the same call returns the same shape on either.
 * @module
 */
import type { HistoryMessage, PermissionPrompt, SendResult, SessionSummary } from './client';

type Row = Record<string, unknown>;

/** Most messages of a session's history the TUI loads (the `message` tool's own maximum). */
export const HISTORY_LIMIT = 1000;

/** The list under `key` (or `data`), or the value itself when it is a list. */
export function listOf(value: unknown, key: string): Row[] {
  if (Array.isArray(value)) return value;
  const v = (value as Row | undefined)?.[key] ?? (value as Row | undefined)?.data;
  return Array.isArray(v) ? v : [];
}

/** The object under `key`, or the value itself (`{ session: {…} }` or `{…}`). */
export function unwrap(value: unknown, key: string): Row {
  const v = value as Row | undefined;
  return ((v && typeof v[key] === 'object' ? v[key] : v) ?? {}) as Row;
}

/** A session view (list_sessions, get_session, create_session, update_session) as a summary. */
export function toSummary(v: Row): SessionSummary {
  const num = (x: unknown) => (typeof x === 'number' ? x : 0);
  return {
    id: String(v.id ?? v.session_id ?? ''),
    title: String(v.title ?? ''),
    model: typeof v.model === 'string' ? v.model : null,
    mode: String(v.mode ?? 'build'),
    agent: String(v.agent ?? 'build'),
    parent_id: typeof v.parent_id === 'string' ? v.parent_id : null,
    prompt_tokens: num(v.prompt_tokens),
    completion_tokens: num(v.completion_tokens),
    cost: num(v.cost),
    created_at: num(v.created_at),
    updated_at: num(v.updated_at),
  };
}

/** A message of the `message` tool's list, reduced to what the transcript shows. */
export function historyMessage(v: Row): HistoryMessage {
  return {
    id: String(v.id ?? ''),
    role: v.role as HistoryMessage['role'],
    run_id: typeof v.run_id === 'string' ? v.run_id : null,
    parts: Array.isArray(v.parts) ? (v.parts as HistoryMessage['parts']) : [],
  };
}

/** A pending request of list_permission_requests, as the dialog shows it. */
export function permissionPrompt(p: Row): PermissionPrompt {
  const text = (x: unknown) => (typeof x === 'string' && x ? x : undefined);
  const runId = text(p.run_id);
  const toolCallId = text(p.tool_call_id);
  const details = typeof p.details === 'object' && p.details !== null ? (p.details as Row) : undefined;
  return {
    session_id: String(p.session_id ?? ''),
    request_id: String(p.request_id ?? ''),
    tool: String(p.tool ?? ''),
    title: String(p.title ?? ''),
    ...(runId ? { run_id: runId } : {}),
    ...(toolCallId ? { tool_call_id: toolCallId } : {}),
    ...(details ? { details } : {}),
  };
}

/** Lenient: the agent answers with a run handle or a queue position. */
export function sendResult(value: unknown, queuedDefault = false): SendResult {
  const v = (typeof value === 'object' && value !== null ? value : {}) as Row;
  const run = (v.run ?? {}) as Row;
  const runId = (v.run_id ?? run.id) as string | undefined;
  const queued =
    typeof v.queued === 'boolean'
      ? v.queued
      : v.status === 'queued'
        ? true
        : v.status === 'running'
          ? false
          : queuedDefault;
  const length =
    v.queue_length ?? v.length ?? v.position ?? (v.queue as { length?: number } | undefined)?.length;
  return {
    ...(typeof runId === 'string' ? { run_id: runId } : {}),
    queued,
    ...(typeof length === 'number' ? { queue_length: length } : {}),
  };
}
