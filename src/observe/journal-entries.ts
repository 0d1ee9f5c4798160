/**
 * The journal's entries: one reader per session event type the journal reads, each turning a
 * logged event (with the messages and earlier events it refers to) into one readable entry, or
 * none. The session event log gives the order; messages fill in prompt and answer previews.
 * @module
 */
import type { SessionEvent } from '../events/bus';
import type { Redactor } from '../redact';
import type { ConversationMessage } from '../sessions/message-queries';
import type { ReadModelQueries } from './read-model-queries';
import { num, oneLine, str } from './session-scope';

export type JournalKind =
  | 'session_created'
  | 'session_update'
  | 'run_started'
  | 'run_finished'
  | 'user_prompt'
  | 'assistant_message'
  | 'tool_call'
  | 'checkpoint'
  | 'file_change'
  | 'permission_request'
  | 'permission_decision'
  | 'phase_change'
  | 'plan_update'
  | 'compaction'
  | 'loop_stop'
  | 'cancel_request'
  | 'provider_recovery';

export interface JournalEntry {
  /** Position in the whole journal, from 1. */
  seq: number;
  /** The session event the entry comes from (the order key). */
  event_id: number;
  at: number;
  kind: JournalKind;
  run_id: string | null;
  /** One readable line (redacted). */
  summary: string;
  detail: Record<string, unknown>;
}

/** Event types the journal reads (never message.delta: streamed text is in the messages). */
export const JOURNAL_EVENT_TYPES = [
  'session.created',
  'session.updated',
  'run.started',
  'run.finished',
  'message.created',
  'message.completed',
  'tool.started',
  'tool.finished',
  'file.changed',
  'permission.requested',
  'permission.resolved',
  'workflow.phase_changed',
  'plan.updated',
  'compaction.started',
  'compaction.finished',
  'loop.detected',
  'state.changed',
  'provider_recovery.changed',
] as const;

export interface JournalDeps {
  /** The session event log and the messages, on the App's store. */
  readonly observe: { readonly queries: Pick<ReadModelQueries, 'events' | 'messages'> };
  readonly redactor: Redactor;
}

const SESSION_FIELDS_OF_NOTE = new Set(['mode', 'agent', 'model', 'reasoning_effort']);

/** What the readers share while walking one session's events. */
interface Walk {
  app: { readonly redactor: Redactor };
  messages: Map<string, ConversationMessage>;
  /** tool_call_id → the title of its tool.started. */
  titles: Map<string, string>;
  /** permission.resolved carries no run id: take it from the request it answers. */
  requestRuns: Map<string, string | null>;
  /** Reasons of compactions started and not yet finished, oldest first. */
  compactionReasons: string[];
  push(kind: JournalKind, runId: string | null, summary: string, detail: Record<string, unknown>): void;
}

type Reader = (p: Record<string, unknown>, runId: string | null, walk: Walk) => void;

/** Every journal entry of a session, oldest first. */
export async function journalEntries(app: JournalDeps, sessionId: string): Promise<JournalEntry[]> {
  const rows = await app.observe.queries.events.find({ sessionId, types: JOURNAL_EVENT_TYPES });
  // Only prompts and answers: tool messages (large outputs) are never read.
  const messages = new Map(
    (await app.observe.queries.messages.conversation(sessionId)).map((m) => [m.id, m]),
  );
  const entries: JournalEntry[] = [];
  let current: SessionEvent | undefined;
  const walk: Walk = {
    app,
    messages,
    titles: new Map(),
    requestRuns: new Map(),
    compactionReasons: [],
    push(kind, runId, summary, detail) {
      entries.push({
        seq: entries.length + 1,
        event_id: current!.id,
        at: current!.created_at,
        kind,
        run_id: runId,
        summary: oneLine(app, summary, 240),
        detail,
      });
    },
  };
  for (const event of rows) {
    current = event;
    READERS[event.type]?.(event.payload, str(event.payload.run_id), walk);
  }
  return entries;
}

const READERS: Record<string, Reader> = {
  'session.created': (p, _runId, w) =>
    w.push('session_created', null, `session created${p.parent_id ? ` under ${p.parent_id}` : ''}`, {
      parent_id: str(p.parent_id),
    }),
  'session.updated': (p, _runId, w) => {
    const changed = (Array.isArray(p.changed) ? p.changed : []).filter(
      (c): c is string => typeof c === 'string' && SESSION_FIELDS_OF_NOTE.has(c),
    );
    if (changed.length) w.push('session_update', null, `session ${changed.join(', ')} changed`, { changed });
  },
  'run.started': (p, runId, w) =>
    w.push(
      'run_started',
      runId,
      `run ${runId} started: ${str(p.agent) ?? 'agent'} agent, ${str(p.model) || 'default model'}, via ${str(p.origin) ?? '?'}`,
      {
        agent: str(p.agent),
        model: str(p.model),
        origin: str(p.origin),
        parent_run_id: str(p.parent_run_id),
      },
    ),
  'run.finished': (p, runId, w) => {
    const usage = (p.usage ?? {}) as Record<string, unknown>;
    const steps = num(p.steps) ?? 0;
    const reason = str(p.reason);
    w.push(
      'run_finished',
      runId,
      `run ${runId} ${str(p.status)} after ${steps} step(s)${reason ? ` (${reason})` : ''}, ${num(usage.input_tokens) ?? 0} in / ${num(usage.output_tokens) ?? 0} out tokens`,
      {
        status: str(p.status),
        reason: reason === null ? null : oneLine(w.app, reason, 200),
        steps,
        input_tokens: num(usage.input_tokens),
        output_tokens: num(usage.output_tokens),
        cost: num(p.cost),
      },
    );
  },
  'message.created': (p, runId, w) => {
    if (p.role !== 'user') return;
    const message = w.messages.get(str(p.message_id) ?? '');
    const text = message ? textOf(message) : '';
    w.push('user_prompt', runId, `user: ${text || '(no text)'}`, {
      message_id: str(p.message_id),
      preview: oneLine(w.app, text, 160),
      chars: text.length,
    });
  },
  'message.completed': (p, runId, w) => {
    const message = w.messages.get(str(p.message_id) ?? '');
    if (message?.role !== 'assistant') return;
    const text = textOf(message);
    if (!text.trim()) return;
    const calls = message.parts.filter((part) => part.type === 'tool-call').length;
    w.push('assistant_message', runId, `assistant: ${text}`, {
      message_id: message.id,
      preview: oneLine(w.app, text, 160),
      chars: text.length,
      tool_calls: calls,
    });
  },
  'tool.started': (p, _runId, w) => {
    if (str(p.tool_call_id)) w.titles.set(p.tool_call_id as string, str(p.title) ?? str(p.tool) ?? '');
  },
  'tool.finished': (p, runId, w) => {
    const tool = str(p.tool) ?? 'tool';
    const title = w.titles.get(str(p.tool_call_id) ?? '') ?? tool;
    const failed = p.is_error === true;
    const ms = num(p.duration_ms);
    const detail = {
      tool,
      tool_call_id: str(p.tool_call_id),
      title: oneLine(w.app, title, 160),
      is_error: failed,
      duration_ms: ms,
    };
    if (tool.startsWith('checkpoint_')) {
      w.push(
        'checkpoint',
        runId,
        `checkpoint ${tool.slice('checkpoint_'.length)}${failed ? ' failed' : ''}: ${title}`,
        detail,
      );
    } else {
      w.push(
        'tool_call',
        runId,
        `${failed ? 'failed ' : ''}${title}${ms !== null ? ` (${ms} ms)` : ''}`,
        detail,
      );
    }
  },
  'file.changed': (p, runId, w) => {
    const change = str(p.change) ?? 'modify';
    const path = str(p.path) ?? '?';
    const verb = change === 'create' ? 'created' : change === 'delete' ? 'deleted' : 'modified';
    w.push('file_change', runId, `${verb} ${path} (${str(p.tool) ?? '?'})`, {
      path: w.app.redactor.string(path),
      change,
      tool: str(p.tool),
    });
  },
  'permission.requested': (p, runId, w) => {
    if (str(p.request_id)) w.requestRuns.set(p.request_id as string, runId);
    w.push('permission_request', runId, `asked permission: ${str(p.title) ?? str(p.tool)}`, {
      // A sub-agent's ask reaches its root session's stream too: say whose it is.
      session_id: str(p.session_id),
      request_id: str(p.request_id),
      tool: str(p.tool),
      title: oneLine(w.app, str(p.title) ?? '', 160),
    });
  },
  'permission.resolved': (p, runId, w) =>
    w.push(
      'permission_decision',
      runId ?? w.requestRuns.get(str(p.request_id) ?? '') ?? null,
      `permission for ${str(p.tool)}: ${str(p.decision)} by ${str(p.by)}`,
      {
        session_id: str(p.session_id),
        request_id: str(p.request_id),
        tool: str(p.tool),
        decision: str(p.decision),
        by: str(p.by),
      },
    ),
  'workflow.phase_changed': (p, _runId, w) =>
    w.push('phase_change', null, `workflow phase ${str(p.previous)} → ${str(p.phase)}`, {
      from: str(p.previous),
      to: str(p.phase),
    }),
  'plan.updated': (p, _runId, w) =>
    w.push('plan_update', null, p.has_plan === true ? 'plan set' : 'plan cleared', {
      has_plan: p.has_plan === true,
    }),
  'compaction.started': (p, _runId, w) => {
    w.compactionReasons.push(str(p.reason) ?? 'auto');
  },
  'compaction.finished': (p, runId, w) => {
    const reason = w.compactionReasons.shift() ?? null;
    w.push(
      'compaction',
      runId,
      `history compacted${reason ? ` (${reason})` : ''}: ${num(p.tokens_before) ?? '?'} → ${num(p.tokens_after) ?? '?'} tokens`,
      {
        reason,
        summary_message_id: str(p.summary_message_id),
        tokens_before: num(p.tokens_before),
        tokens_after: num(p.tokens_after),
      },
    );
  },
  'loop.detected': (p, runId, w) =>
    w.push(
      'loop_stop',
      runId,
      `loop detected: ${str(p.tool)} repeated ${num(p.repeats)} times; run stopped`,
      {
        tool: str(p.tool),
        repeats: num(p.repeats),
      },
    ),
  'state.changed': (p, runId, w) => {
    if (p.state === 'cancelling') w.push('cancel_request', runId, `cancel requested for run ${runId}`, {});
  },
  'provider_recovery.changed': (p, runId, w) =>
    w.push(
      'provider_recovery',
      runId,
      `provider recovery: ${str(p.from)} → ${str(p.to)} (${str(p.reason)}, attempt ${num(p.attempt)})`,
      {
        from: str(p.from),
        to: str(p.to),
        reason: oneLine(w.app, str(p.reason) ?? '', 200),
        attempt: num(p.attempt),
      },
    ),
};

function textOf(message: Pick<ConversationMessage, 'parts'>): string {
  return message.parts
    .map((part) => (part.type === 'text' ? part.text : ''))
    .join('')
    .trim();
}
