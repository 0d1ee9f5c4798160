/**
 * The transcript: what the chat shows, as a pure reducer over session events (the contract in
 * `src/events/types.ts`) plus the history of a session. No I/O here; the store around it
 * throttles notifications and fetches what events do not carry.
 * @module
 */
import type { FailureReport } from '../../../errors';
import type { SessionEvent } from '../../../events/bus';
import type { SessionEventPayloads, SessionEventType } from '../../../events/types';
import type { HistoryMessage, PermissionPrompt, SessionSummary } from '../client';
import { diffFromDetails } from '../render/diff';

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
  context?: { input_tokens: number; context_window: number; ratio: number };
  lastEventId: number;
  connection: 'connected' | 'reconnecting' | 'closed';
  /** The latest classified failure (a failed run or a refused tool call): what /why shows. */
  lastFailure?: { run_id?: string; tool?: string; failure: FailureReport };
}

export function initialState(session: SessionSummary, history: HistoryMessage[] = []): TranscriptState {
  return {
    sessionId: session.id,
    title: session.title,
    model: session.model,
    items: itemsFromHistory(history),
    state: 'idle',
    queue: [],
    permissions: [],
    usage: {
      input_tokens: session.prompt_tokens,
      output_tokens: session.completion_tokens,
      cost: session.cost,
    },
    lastEventId: 0,
    connection: 'connected',
  };
}

/** Every item that can no longer change: the prefix that may be printed once (Ink <Static>). */
export function settledCount(items: Item[]): number {
  let i = 0;
  while (i < items.length && isSettled(items[i])) i++;
  return i;
}

export function isSettled(item: Item): boolean {
  switch (item.kind) {
    case 'user':
      return !item.queued;
    case 'assistant':
      return item.done;
    case 'tool':
      return item.status !== 'running';
    case 'notice':
      return true;
    default: {
      const never: never = item;
      return never;
    }
  }
}

export function itemsFromHistory(messages: HistoryMessage[]): Item[] {
  const items: Item[] = [];
  const tools = new Map<string, ToolItem>();
  for (const message of messages) {
    if (message.role === 'user') {
      const text = message.parts.map((p) => (p.type === 'text' ? String(p.text) : '')).join('');
      if (text) items.push({ kind: 'user', key: `u:${message.id}`, text, message_id: message.id });
      continue;
    }
    let assistant: AssistantItem | undefined;
    for (const part of message.parts) {
      if (part.type === 'text' || part.type === 'reasoning') {
        if (!assistant) {
          assistant = {
            kind: 'assistant',
            key: `a:${message.id}`,
            message_id: message.id,
            text: '',
            reasoning: '',
            done: true,
          };
          items.push(assistant);
        }
        if (part.type === 'text') assistant.text += String(part.text);
        else assistant.reasoning += String(part.text);
      } else if (part.type === 'tool-call') {
        const id = String(part.tool_call_id);
        const item: ToolItem = {
          kind: 'tool',
          key: `t:${id}`,
          tool_call_id: id,
          run_id: message.run_id ?? undefined,
          tool: String(part.tool),
          title: titleOf(String(part.tool), part.input),
          status: 'done',
          diff: diffFromDetails(part.input),
          files: [],
        };
        tools.set(id, item);
        items.push(item);
        assistant = undefined;
      } else if (part.type === 'tool-result') {
        const item = tools.get(String(part.tool_call_id));
        if (item) {
          item.status = part.is_error ? 'error' : 'done';
          item.diff = diffFromDetails(part.output) ?? item.diff;
          item.summary = summaryOf(part.output);
        }
      } else if (part.type === 'error') {
        items.push({ kind: 'notice', key: `e:${message.id}`, level: 'error', text: String(part.message) });
      }
    }
  }
  return items;
}

type Payload<T extends SessionEventType> = SessionEventPayloads[T];

export function applyEvent(state: TranscriptState, event: SessionEvent): TranscriptState {
  if (event.id > 0 && event.id <= state.lastEventId) return state;
  const next: TranscriptState = { ...state, lastEventId: Math.max(state.lastEventId, event.id) };
  const p = event.payload as Record<string, unknown>;
  const type = event.type as SessionEventType;
  switch (type) {
    case 'state.changed': {
      const e = p as Payload<'state.changed'>;
      next.state = e.state;
      next.runId = e.state === 'idle' ? undefined : (e.run_id ?? next.runId);
      return next;
    }
    case 'queue.changed':
      next.queue = (p as Payload<'queue.changed'>).items ?? [];
      // A queued prompt that left the queue is now part of the conversation.
      next.items = next.items.map((item) =>
        item.kind === 'user' &&
        item.queued &&
        !next.queue.some((q) => item.text.startsWith(q.preview.replace(/…$/, '')))
          ? { ...item, queued: false }
          : item,
      );
      return next;
    case 'run.started': {
      const e = p as Payload<'run.started'>;
      next.runId = e.run_id;
      if (next.state === 'idle') next.state = 'running';
      if (e.model) next.runModel = e.model;
      return next;
    }
    case 'run.finished': {
      const e = p as Payload<'run.finished'>;
      next.usage = {
        input_tokens: next.usage.input_tokens + (e.usage?.input_tokens ?? 0),
        output_tokens: next.usage.output_tokens + (e.usage?.output_tokens ?? 0),
        cost: next.usage.cost + (e.cost ?? 0),
      };
      if (next.runId === e.run_id) next.runId = undefined;
      // Whatever was still streaming in this run is over.
      next.items = next.items.map((item) =>
        item.kind === 'assistant' && !item.done
          ? { ...item, done: true }
          : item.kind === 'tool' && item.status === 'running' && item.run_id === e.run_id
            ? { ...item, status: e.status === 'completed' ? 'done' : 'error' }
            : item,
      );
      if (e.status === 'failed' && e.failure) {
        next.lastFailure = { run_id: e.run_id, failure: e.failure };
        next.items = [...next.items, failureNotice(event, 'error', e.failure)];
      } else if (e.status !== 'completed') {
        next.items = [
          ...next.items,
          notice(
            event,
            e.status === 'failed' ? 'error' : 'warn',
            `run ${e.status}${e.reason ? `: ${e.reason}` : ''}`,
          ),
        ];
      }
      return next;
    }
    case 'message.created': {
      const e = p as Payload<'message.created'>;
      if (e.role === 'assistant') return ensureAssistant(next, e.message_id);
      if (e.role === 'user') {
        const pending = next.items.findIndex((i) => i.kind === 'user' && !i.message_id && !i.queued);
        if (pending !== -1)
          next.items = replaceAt(next.items, pending, {
            ...(next.items[pending] as UserItem),
            message_id: e.message_id,
          });
      }
      return next;
    }
    case 'message.delta': {
      const e = p as Payload<'message.delta'>;
      const withItem = ensureAssistant(next, e.message_id);
      const index = withItem.items.findIndex((i) => i.kind === 'assistant' && i.message_id === e.message_id);
      const item = withItem.items[index] as AssistantItem;
      withItem.items = replaceAt(
        withItem.items,
        index,
        e.part === 'reasoning'
          ? { ...item, reasoning: item.reasoning + e.delta }
          : { ...item, text: item.text + e.delta },
      );
      return withItem;
    }
    case 'message.completed': {
      const e = p as Payload<'message.completed'>;
      next.items = next.items.map((i) =>
        i.kind === 'assistant' && i.message_id === e.message_id ? { ...i, done: true } : i,
      );
      return next;
    }
    case 'tool.started': {
      const e = p as Payload<'tool.started'>;
      if (next.items.some((i) => i.kind === 'tool' && i.tool_call_id === e.tool_call_id)) return next;
      // Text streamed before a tool call is complete once the call starts.
      next.items = next.items.map((i) => (i.kind === 'assistant' && !i.done ? { ...i, done: true } : i));
      next.items = [
        ...next.items,
        {
          kind: 'tool',
          key: `t:${e.tool_call_id}`,
          tool_call_id: e.tool_call_id,
          run_id: e.run_id,
          tool: e.tool,
          title: e.title || e.tool,
          status: 'running',
          files: [],
        },
      ];
      return next;
    }
    case 'tool.finished': {
      const e = p as Payload<'tool.finished'>;
      next.items = next.items.map((i) =>
        i.kind === 'tool' && i.tool_call_id === e.tool_call_id
          ? {
              ...i,
              status: i.status === 'denied' ? 'denied' : e.is_error ? 'error' : 'done',
              summary: e.summary,
              duration_ms: e.duration_ms,
            }
          : i,
      );
      if (e.failure) {
        next.lastFailure = { run_id: e.run_id, tool: e.tool, failure: e.failure };
        next.items = [...next.items, failureNotice(event, 'warn', e.failure)];
      }
      return next;
    }
    case 'permission.requested': {
      const e = p as Payload<'permission.requested'>;
      if (next.permissions.some((r) => r.request_id === e.request_id)) return next;
      next.permissions = [...next.permissions, { ...e, session_id: e.session_id ?? event.session_id }];
      const diff = diffFromDetails(e.details);
      if (diff) {
        const index = lastIndex(
          next.items,
          (i) => i.kind === 'tool' && i.tool === e.tool && i.status === 'running',
        );
        if (index !== -1)
          next.items = replaceAt(next.items, index, { ...(next.items[index] as ToolItem), diff });
      }
      return next;
    }
    case 'permission.resolved': {
      const e = p as Payload<'permission.resolved'>;
      const request = next.permissions.find((r) => r.request_id === e.request_id);
      next.permissions = next.permissions.filter((r) => r.request_id !== e.request_id);
      if (request && e.decision === 'deny') {
        const index = lastIndex(
          next.items,
          (i) => i.kind === 'tool' && i.tool === request.tool && i.status === 'running',
        );
        if (index !== -1)
          next.items = replaceAt(next.items, index, { ...(next.items[index] as ToolItem), status: 'denied' });
      }
      return next;
    }
    case 'context.usage': {
      const e = p as Payload<'context.usage'>;
      next.context = { input_tokens: e.input_tokens, context_window: e.context_window, ratio: e.ratio };
      return next;
    }
    case 'file.changed': {
      const e = p as Payload<'file.changed'>;
      const index = lastIndex(next.items, (i) => i.kind === 'tool' && i.tool === e.tool);
      if (index !== -1) {
        const item = next.items[index] as ToolItem;
        next.items = replaceAt(next.items, index, {
          ...item,
          files: [...item.files, { path: e.path, change: e.change }],
        });
      }
      return next;
    }
    case 'session.updated':
      return next;
    case 'session.created':
      return next;
    case 'session.deleted':
      next.items = [...next.items, notice(event, 'warn', 'this session was deleted')];
      return next;
    case 'loop.detected': {
      const e = p as Payload<'loop.detected'>;
      next.items = [
        ...next.items,
        notice(event, 'warn', `loop detected: ${e.tool} repeated ${e.repeats} times`),
      ];
      return next;
    }
    case 'compaction.started':
      next.state = 'compacting';
      next.items = [...next.items, notice(event, 'info', 'compacting the conversation…')];
      return next;
    case 'compaction.finished': {
      const e = p as Payload<'compaction.finished'>;
      next.items = [
        ...next.items,
        notice(event, 'info', `compacted: ${e.tokens_before} → ${e.tokens_after} tokens`),
      ];
      return next;
    }
    case 'workflow.phase_changed': {
      const e = p as Payload<'workflow.phase_changed'>;
      next.items = [...next.items, notice(event, 'info', `phase: ${e.previous} → ${e.phase}`)];
      return next;
    }
    case 'plan.updated':
      next.items = [
        ...next.items,
        notice(
          event,
          'info',
          (p as Payload<'plan.updated'>).has_plan ? 'plan updated (/approve to execute)' : 'plan cleared',
        ),
      ];
      return next;
    case 'provider_recovery.changed': {
      const e = p as Payload<'provider_recovery.changed'>;
      next.items = [
        ...next.items,
        notice(event, 'warn', `rate limited: switched ${e.from} → ${e.to} (${e.reason})`),
      ];
      return next;
    }
    default:
      return next;
  }
}

function ensureAssistant(state: TranscriptState, messageId: string): TranscriptState {
  if (state.items.some((i) => i.kind === 'assistant' && i.message_id === messageId)) return state;
  return {
    ...state,
    items: [
      ...state.items,
      {
        kind: 'assistant',
        key: `a:${messageId}`,
        message_id: messageId,
        text: '',
        reasoning: '',
        done: false,
      },
    ],
  };
}

function notice(event: SessionEvent, level: NoticeItem['level'], text: string): NoticeItem {
  return { kind: 'notice', key: `n:${event.id}:${event.type}`, level, text };
}

function failureNotice(event: SessionEvent, level: NoticeItem['level'], failure: FailureReport): NoticeItem {
  return { ...notice(event, level, failure.summary), failure };
}

function replaceAt<T>(list: T[], index: number, value: T): T[] {
  const copy = list.slice();
  copy[index] = value;
  return copy;
}

function lastIndex<T>(list: T[], predicate: (item: T) => boolean): number {
  for (let i = list.length - 1; i >= 0; i--) if (predicate(list[i])) return i;
  return -1;
}

function titleOf(tool: string, input: unknown): string {
  const i = (input ?? {}) as Record<string, unknown>;
  const target = i.path ?? i.file_path ?? i.command ?? i.pattern ?? i.url;
  return typeof target === 'string' ? `${tool} ${target}` : tool;
}

function summaryOf(output: unknown): string | undefined {
  if (typeof output === 'string') return output.split('\n')[0].slice(0, 120);
  const o = output as Record<string, unknown> | null;
  if (o && typeof o.summary === 'string') return o.summary;
  return undefined;
}
