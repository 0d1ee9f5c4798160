/**
 * The transcript: what the chat shows, as a pure reducer over session events (the contract in
 * `src/events/types.ts`) plus the history of a session. No I/O here; the store around it
 * throttles notifications and fetches what events do not carry. The shapes are in
 * transcript-types.ts, one reducer per event family in reducers/.
 * @module
 */
import type { SessionEvent } from '../../../events/bus';
import type { SessionEventType } from '../../../events/types';
import type { HistoryMessage, SessionSummary } from '../client';
import { diffFromDetails } from '../render/diff';
import type { EventHandlers } from './reducers/handlers';
import { messageEvents } from './reducers/message-events';
import { noticeEvents } from './reducers/notice-events';
import { permissionEvents } from './reducers/permission-events';
import { runEvents } from './reducers/run-events';
import { toolEvents } from './reducers/tool-events';
import type { AssistantItem, Item, ToolItem, TranscriptState } from './transcript-types';

export type {
  AssistantItem,
  Item,
  NoticeItem,
  RunState,
  ToolItem,
  TranscriptState,
  UserItem,
} from './transcript-types';

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

const HANDLERS: EventHandlers = {
  ...runEvents,
  ...messageEvents,
  ...toolEvents,
  ...permissionEvents,
  ...noticeEvents,
};

/** One event into the state: each family's reducer is in reducers/; a repeated event is a no-op. */
export function applyEvent(state: TranscriptState, event: SessionEvent): TranscriptState {
  if (event.id > 0 && event.id <= state.lastEventId) return state;
  const next: TranscriptState = { ...state, lastEventId: Math.max(state.lastEventId, event.id) };
  const handler = HANDLERS[event.type as SessionEventType] as
    | ((next: TranscriptState, payload: unknown, event: SessionEvent) => TranscriptState)
    | undefined;
  return handler ? handler(next, event.payload, event) : next;
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
