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
import type { SessionStore } from '../sessions/session-store';
import { JOURNAL_EVENT_TYPES, type JournalDeps, type JournalEntry, journalEntries } from './journal-entries';
import { readoutHeader, resolveSessionScope, type SessionReadoutDeps } from './session-scope';

export type { JournalEntry, JournalKind } from './journal-entries';

export const DEFAULT_JOURNAL_LIMIT = 200;
export const MAX_JOURNAL_LIMIT = 2000;

export async function buildJournal(
  app: SessionReadoutDeps,
  input: { session_id?: string; limit: number },
  contextSessionId?: string,
) {
  const scope = await resolveSessionScope(app, input.session_id, contextSessionId);
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
  const all = await journalEntries(app, session.id);
  const entries = all.length > input.limit ? all.slice(all.length - input.limit) : all;
  const counts: Record<string, number> = {};
  for (const entry of all) counts[entry.kind] = (counts[entry.kind] ?? 0) + 1;
  return {
    ...header,
    title: app.redactor.string(session.title),
    family_session_id: await app.sessions.root(session.id),
    total_entries: all.length,
    truncated: entries.length < all.length,
    span: { first_at: all[0]?.at ?? null, last_at: all.at(-1)?.at ?? null },
    counts,
    entries,
    warnings: scope.warnings,
  };
}

export type Journal = Awaited<ReturnType<typeof buildJournal>>;

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
export async function journalPosture(
  app: JournalDeps & {
    readonly clock: SessionReadoutDeps['clock'];
    readonly sessions: Pick<SessionStore, 'get'>;
  },
  input: { session_id?: string },
) {
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
  const events = app.observe.queries.events;
  let byType: { type: string; n: number }[];
  try {
    byType = await events.typeCounts(JOURNAL_EVENT_TYPES);
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
  const span = await events.span(JOURNAL_EVENT_TYPES);
  let session: Record<string, unknown> | null = null;
  const warnings: string[] = [];
  if (input.session_id) {
    const known = await app.sessions.get(input.session_id);
    if (!known) warnings.push(`session_unknown: no session "${input.session_id}"; see list_sessions`);
    const entries = known ? await journalEntries(app, known.id) : [];
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
