/**
 * `get_journal` (GET /v1/sessions/{id}/journal, `svc config show-journal-narrative`): the
 * session's story in order — runs, prompts and answers (short redacted previews), tool calls
 * (titles only, never inputs or outputs), file changes with paths, plans and phase changes,
 * checkpoints, compactions and decisions (permission answers, loop stops, cancels, provider
 * recovery). The session event log gives the order (one global sequence, so entries keep their
 * real order even inside one millisecond); messages and the run ledger fill in the details.
 * `get_journal_posture` says whether the journal can be built and what it holds.
 * @module
 */
import type { App } from '../app';
import type { Message } from '../sessions/session-store';
import type { Db } from '../store/db';
import { num, oneLine, payloadOf, readoutHeader, resolveSessionScope, str } from './session-scope';

export const DEFAULT_JOURNAL_LIMIT = 200;
export const MAX_JOURNAL_LIMIT = 2000;

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

const SESSION_FIELDS_OF_NOTE = new Set(['mode', 'agent', 'model', 'reasoning_effort']);

interface EventRow {
  id: number;
  type: string;
  payload: string;
  created_at: number;
}

export function buildJournal(
  app: App,
  input: { session_id?: string; limit: number },
  contextSessionId?: string,
) {
  const scope = resolveSessionScope(app, input.session_id, contextSessionId);
  const header = { ...readoutHeader(app, scope), filters_applied: { limit: input.limit } };
  const session = scope.session;
  if (!session) {
    return {
      ...header,
      title: null,
      family_session_id: null,
      total_entries: 0,
      truncated: false,
      span: { first_at: null, last_at: null },
      counts: {} as Record<string, number>,
      entries: [] as JournalEntry[],
      warnings: scope.warnings,
    };
  }
  const all = journalEntries(app, session.id);
  const entries = all.length > input.limit ? all.slice(all.length - input.limit) : all;
  const counts: Record<string, number> = {};
  for (const entry of all) counts[entry.kind] = (counts[entry.kind] ?? 0) + 1;
  return {
    ...header,
    title: app.redactor.string(session.title),
    family_session_id: app.sessions.root(session.id),
    total_entries: all.length,
    truncated: entries.length < all.length,
    span: { first_at: all[0]?.at ?? null, last_at: all.at(-1)?.at ?? null },
    counts,
    entries,
    warnings: scope.warnings,
  };
}

export type Journal = ReturnType<typeof buildJournal>;

/** Every journal entry of a session, oldest first. */
export function journalEntries(app: App, sessionId: string): JournalEntry[] {
  const rows = app.db
    .prepare(
      `SELECT id, type, payload, created_at FROM session_events
         WHERE session_id = ? AND type IN (${JOURNAL_EVENT_TYPES.map(() => '?').join(', ')}) ORDER BY id`,
    )
    .all(sessionId, ...JOURNAL_EVENT_TYPES) as EventRow[];
  // Only prompts and answers: tool messages (large outputs) are never read.
  const messages = new Map<string, Pick<Message, 'id' | 'role' | 'parts'>>(
    (
      app.db
        .prepare(
          "SELECT id, role, parts FROM messages WHERE session_id = ? AND role IN ('user', 'assistant')",
        )
        .all(sessionId) as { id: string; role: Message['role']; parts: string }[]
    ).map((row) => [row.id, { id: row.id, role: row.role, parts: partsOf(row.parts) }]),
  );
  const titles = new Map<string, string>();
  // permission.resolved carries no run id: take it from the request it answers.
  const requestRuns = new Map<string, string | null>();
  const compactionReasons: string[] = [];
  const entries: JournalEntry[] = [];
  const push = (
    row: EventRow,
    kind: JournalKind,
    runId: string | null,
    summary: string,
    detail: Record<string, unknown>,
  ) => {
    entries.push({
      seq: entries.length + 1,
      event_id: row.id,
      at: row.created_at,
      kind,
      run_id: runId,
      summary: oneLine(app, summary, 240),
      detail,
    });
  };

  for (const row of rows) {
    const p = payloadOf(row.payload);
    const runId = str(p.run_id);
    switch (row.type) {
      case 'session.created':
        push(row, 'session_created', null, `session created${p.parent_id ? ` under ${p.parent_id}` : ''}`, {
          parent_id: str(p.parent_id),
        });
        break;
      case 'session.updated': {
        const changed = (Array.isArray(p.changed) ? p.changed : []).filter(
          (c): c is string => typeof c === 'string' && SESSION_FIELDS_OF_NOTE.has(c),
        );
        if (changed.length)
          push(row, 'session_update', null, `session ${changed.join(', ')} changed`, { changed });
        break;
      }
      case 'run.started':
        push(
          row,
          'run_started',
          runId,
          `run ${runId} started: ${str(p.agent) ?? 'agent'} agent, ${str(p.model) || 'default model'}, via ${str(p.origin) ?? '?'}`,
          {
            agent: str(p.agent),
            model: str(p.model),
            origin: str(p.origin),
            parent_run_id: str(p.parent_run_id),
          },
        );
        break;
      case 'run.finished': {
        const usage = (p.usage ?? {}) as Record<string, unknown>;
        const steps = num(p.steps) ?? 0;
        const reason = str(p.reason);
        push(
          row,
          'run_finished',
          runId,
          `run ${runId} ${str(p.status)} after ${steps} step(s)${reason ? ` (${reason})` : ''}, ${num(usage.input_tokens) ?? 0} in / ${num(usage.output_tokens) ?? 0} out tokens`,
          {
            status: str(p.status),
            reason: reason === null ? null : oneLine(app, reason, 200),
            steps,
            input_tokens: num(usage.input_tokens),
            output_tokens: num(usage.output_tokens),
            cost: num(p.cost),
          },
        );
        break;
      }
      case 'message.created': {
        if (p.role !== 'user') break;
        const message = messages.get(str(p.message_id) ?? '');
        const text = message ? textOf(message) : '';
        push(row, 'user_prompt', runId, `user: ${text || '(no text)'}`, {
          message_id: str(p.message_id),
          preview: oneLine(app, text, 160),
          chars: text.length,
        });
        break;
      }
      case 'message.completed': {
        const message = messages.get(str(p.message_id) ?? '');
        if (message?.role !== 'assistant') break;
        const text = textOf(message);
        if (!text.trim()) break;
        const calls = message.parts.filter((part) => part.type === 'tool-call').length;
        push(row, 'assistant_message', runId, `assistant: ${text}`, {
          message_id: message.id,
          preview: oneLine(app, text, 160),
          chars: text.length,
          tool_calls: calls,
        });
        break;
      }
      case 'tool.started':
        if (str(p.tool_call_id)) titles.set(p.tool_call_id as string, str(p.title) ?? str(p.tool) ?? '');
        break;
      case 'tool.finished': {
        const tool = str(p.tool) ?? 'tool';
        const title = titles.get(str(p.tool_call_id) ?? '') ?? tool;
        const failed = p.is_error === true;
        const ms = num(p.duration_ms);
        const detail = {
          tool,
          tool_call_id: str(p.tool_call_id),
          title: oneLine(app, title, 160),
          is_error: failed,
          duration_ms: ms,
        };
        if (tool.startsWith('checkpoint_')) {
          push(
            row,
            'checkpoint',
            runId,
            `checkpoint ${tool.slice('checkpoint_'.length)}${failed ? ' failed' : ''}: ${title}`,
            detail,
          );
        } else {
          push(
            row,
            'tool_call',
            runId,
            `${failed ? 'failed ' : ''}${title}${ms !== null ? ` (${ms} ms)` : ''}`,
            detail,
          );
        }
        break;
      }
      case 'file.changed': {
        const change = str(p.change) ?? 'modify';
        const path = str(p.path) ?? '?';
        const verb = change === 'create' ? 'created' : change === 'delete' ? 'deleted' : 'modified';
        push(row, 'file_change', runId, `${verb} ${path} (${str(p.tool) ?? '?'})`, {
          path: app.redactor.string(path),
          change,
          tool: str(p.tool),
        });
        break;
      }
      case 'permission.requested':
        if (str(p.request_id)) requestRuns.set(p.request_id as string, runId);
        push(row, 'permission_request', runId, `asked permission: ${str(p.title) ?? str(p.tool)}`, {
          // A sub-agent's ask reaches its root session's stream too: say whose it is.
          session_id: str(p.session_id),
          request_id: str(p.request_id),
          tool: str(p.tool),
          title: oneLine(app, str(p.title) ?? '', 160),
        });
        break;
      case 'permission.resolved':
        push(
          row,
          'permission_decision',
          runId ?? requestRuns.get(str(p.request_id) ?? '') ?? null,
          `permission for ${str(p.tool)}: ${str(p.decision)} by ${str(p.by)}`,
          {
            session_id: str(p.session_id),
            request_id: str(p.request_id),
            tool: str(p.tool),
            decision: str(p.decision),
            by: str(p.by),
          },
        );
        break;
      case 'workflow.phase_changed':
        push(row, 'phase_change', null, `workflow phase ${str(p.previous)} → ${str(p.phase)}`, {
          from: str(p.previous),
          to: str(p.phase),
        });
        break;
      case 'plan.updated':
        push(row, 'plan_update', null, p.has_plan === true ? 'plan set' : 'plan cleared', {
          has_plan: p.has_plan === true,
        });
        break;
      case 'compaction.started':
        compactionReasons.push(str(p.reason) ?? 'auto');
        break;
      case 'compaction.finished': {
        const reason = compactionReasons.shift() ?? null;
        push(
          row,
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
        break;
      }
      case 'loop.detected':
        push(
          row,
          'loop_stop',
          runId,
          `loop detected: ${str(p.tool)} repeated ${num(p.repeats)} times; run stopped`,
          {
            tool: str(p.tool),
            repeats: num(p.repeats),
          },
        );
        break;
      case 'state.changed':
        if (p.state === 'cancelling')
          push(row, 'cancel_request', runId, `cancel requested for run ${runId}`, {});
        break;
      case 'provider_recovery.changed':
        push(
          row,
          'provider_recovery',
          runId,
          `provider recovery: ${str(p.from)} → ${str(p.to)} (${str(p.reason)}, attempt ${num(p.attempt)})`,
          {
            from: str(p.from),
            to: str(p.to),
            reason: oneLine(app, str(p.reason) ?? '', 200),
            attempt: num(p.attempt),
          },
        );
        break;
      default:
        break;
    }
  }
  return entries;
}

function partsOf(text: string): Message['parts'] {
  try {
    const parts = JSON.parse(text) as unknown;
    return Array.isArray(parts) ? (parts as Message['parts']) : [];
  } catch {
    return [];
  }
}

function textOf(message: Pick<Message, 'parts'>): string {
  return message.parts
    .map((part) => (part.type === 'text' ? part.text : ''))
    .join('')
    .trim();
}

const clock = (at: number) => new Date(at).toISOString().slice(11, 19);

/** The journal as a readable narrative (svc config show-journal-narrative without --json). */
export function renderJournalNarrative(journal: Journal): string {
  if (!journal.session_known) {
    return [`no journal: ${journal.warnings.join('; ') || 'no session'}`].join('\n');
  }
  const first = journal.span.first_at;
  const last = journal.span.last_at;
  const lines = [
    `Journal of session ${journal.session_id}${journal.title ? ` "${journal.title}"` : ''}`,
    first !== null && last !== null
      ? `${journal.total_entries} entries, ${new Date(first).toISOString().slice(0, 10)} ${clock(first)} – ${clock(last)} UTC${journal.truncated ? ` (showing the last ${journal.entries.length})` : ''}`
      : 'no entries yet',
    '',
  ];
  for (const entry of journal.entries) {
    const nested = entry.run_id !== null && entry.kind !== 'run_started' && entry.kind !== 'run_finished';
    lines.push(`${clock(entry.at)}  ${nested ? '  ' : ''}${entry.summary}`);
  }
  if (journal.warnings.length) lines.push('', ...journal.warnings.map((w) => `! ${w}`));
  return lines.join('\n');
}

/** `get_journal_posture`: can the journal be built, what does it hold, how long is it kept. */
export function journalPosture(app: App, input: { session_id?: string }) {
  const sources = ['session_events', 'messages', 'agent_runs'];
  const retention = {
    policy:
      'session events are kept in svc.db with no time-based pruning; they outlive a deleted session, whose messages go with it',
    pruning: 'none' as const,
  };
  const base = {
    generated_at: app.clock.now(),
    sources,
    redaction:
      'previews redacted and cut to 160 characters; tool calls by title only; no tool inputs or outputs',
    retention,
  };
  let db: Db;
  try {
    db = app.db;
  } catch (error) {
    return {
      ...base,
      available: false,
      reason: error instanceof Error ? error.message : String(error),
      sessions_with_entries: 0,
      source_events: { total: 0, by_type: {} },
      span: { first_at: null, last_at: null },
      session: null,
      warnings: [] as string[],
    };
  }
  const types = JOURNAL_EVENT_TYPES;
  const byType = db
    .prepare(
      `SELECT type, count(*) AS n FROM session_events WHERE type IN (${types.map(() => '?').join(', ')}) GROUP BY type`,
    )
    .all(...types) as { type: string; n: number }[];
  const span = db
    .prepare(
      `SELECT min(created_at) AS first_at, max(created_at) AS last_at, count(DISTINCT session_id) AS sessions
         FROM session_events WHERE type IN (${types.map(() => '?').join(', ')})`,
    )
    .get(...types) as { first_at: number | null; last_at: number | null; sessions: number };
  let session: Record<string, unknown> | null = null;
  const warnings: string[] = [];
  if (input.session_id) {
    const known = app.sessions.get(input.session_id);
    if (!known) warnings.push(`session_unknown: no session "${input.session_id}"; see list_sessions`);
    const entries = known ? journalEntries(app, known.id) : [];
    const counts: Record<string, number> = {};
    for (const entry of entries) counts[entry.kind] = (counts[entry.kind] ?? 0) + 1;
    session = {
      session_id: input.session_id,
      session_known: known !== undefined,
      entries: entries.length,
      by_kind: counts,
      first_at: entries[0]?.at ?? null,
      last_at: entries.at(-1)?.at ?? null,
    };
  }
  return {
    ...base,
    available: true,
    reason: null,
    sessions_with_entries: span.sessions,
    source_events: {
      total: byType.reduce((sum, r) => sum + r.n, 0),
      by_type: Object.fromEntries(byType.map((r) => [r.type, r.n])),
    },
    span: { first_at: span.first_at, last_at: span.last_at },
    session,
    warnings,
  };
}
