/**
 * Which session a session readout describes, and the small helpers every readout shares (ledger
 * rows, JSON payloads, distributions). Readouts answer for an unknown session with a warning and
 * empty sections rather than an error, as the multiplayer dashboard does (the spec's read routes
 * answer, they do not 404 on a session the store does not know).
 * @module
 */

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentService } from '../agent/types';
import type { Config } from '../config/schema';
import type { Redactor } from '../redact';
import type { RunLedger } from '../runs/run-ledger';
import { resolveSession, type SelectedBy } from '../sessions/resolve-session';
import type { Session, SessionStore } from '../sessions/session-store';
import { DB_FILE } from '../store/db';
import type { StoreView } from '../store/transactions';
import type { Clock } from '../util/ids';
import type { FileHistory } from '../workspace/file-history';
import type { ReadModelQueries } from './read-model-queries';

/** Which session a readout describes: the stores it asks, never a write. */
export interface SessionScopeDeps {
  readonly dataDir: string;
  /** Whether this process opened the database (no database yet means no sessions). */
  hasDb(): boolean;
  /** The App's backend: on PostgreSQL there is no SQLite file to look for. */
  readonly store: Pick<StoreView, 'kind'>;
  readonly sessions: Pick<SessionStore, 'get' | 'require' | 'list' | 'root' | 'family'>;
  readonly agent: Pick<AgentService, 'currentSession' | 'state'>;
  readonly clock: Clock;
}

/** What the session readouts read: the scope, the run ledger's queries and the database. */
export interface SessionReadoutDeps extends SessionScopeDeps {
  /** The session event log and the messages, on the App's store. */
  readonly observe: { readonly queries: Pick<ReadModelQueries, 'events' | 'messages'> };
  readonly runs: Pick<RunLedger, 'queries'>;
  /** The file history's aggregate reads. */
  readonly ws: { readonly history: Pick<FileHistory, 'queries'> };
  readonly redactor: Redactor;
  readonly config: Config;
}

export interface SessionScope {
  /** The session described, when it exists. */
  session: Session | undefined;
  /** The id asked for (or chosen by default); null when there is no session at all. */
  session_id: string | null;
  /** How the session was chosen: the input, the calling run, the current session, the newest one. */
  selected_by: SelectedBy;
  warnings: string[];
}

/**
 * The session named, else the calling run's session, else the current session, else the most
 * recently updated top-level session. No session at all is a warning, never an error: the
 * CLI show-* projections must run in a fresh workspace.
 */
export async function resolveSessionScope(
  app: SessionScopeDeps,
  requested: string | undefined,
  contextSessionId?: string,
): Promise<SessionScope> {
  // No database yet means no sessions: answer without creating one (CLI-07, read-only projections).
  if (app.store.kind === 'sqlite' && !app.hasDb() && !existsSync(join(app.dataDir, DB_FILE))) {
    return {
      session: undefined,
      session_id: requested ?? null,
      selected_by: requested ? 'input' : 'none',
      warnings: [
        requested
          ? `session_unknown: no session "${requested}"; see list_sessions`
          : 'no_session: there are no sessions yet; start one with svc run "<prompt>"',
      ],
    };
  }
  const resolved = await resolveSession(
    app,
    { session_id: requested },
    { onMissing: 'most-recent', context: contextSessionId, onUnknown: 'keep' },
  );
  const warnings = resolved.session
    ? []
    : resolved.session_id
      ? [`session_unknown: no session "${resolved.session_id}"; see list_sessions`]
      : ['no_session: there are no sessions yet; start one with svc run "<prompt>"'];
  return { ...resolved, warnings };
}

/**
 * The header every session readout opens with: which session, whether it is known, how it was
 * chosen and when the readout was computed. Readouts add their `filters_applied` after it.
 */
export function readoutHeader(app: Pick<SessionScopeDeps, 'clock'>, scope: SessionScope) {
  return {
    session_id: scope.session_id,
    session_known: scope.session !== undefined,
    selected_by: scope.selected_by,
    generated_at: app.clock.now(),
  };
}

/** Parse a stored JSON payload; a malformed row reads as an empty object rather than failing a readout. */
export function payloadOf(text: string | null | undefined): Record<string, unknown> {
  if (!text) return {};
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

export const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);
export const num = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;

export interface Distribution {
  count: number;
  min: number | null;
  p50: number | null;
  p90: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
  avg: number | null;
}

/** Nearest-rank percentiles of a sample (milliseconds, tokens…); nulls for an empty sample. */
export function distribution(values: readonly number[]): Distribution {
  if (values.length === 0) {
    return { count: 0, min: null, p50: null, p90: null, p95: null, p99: null, max: null, avg: null };
  }
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    count: sorted.length,
    min: sorted[0],
    p50: rank(50),
    p90: rank(90),
    p95: rank(95),
    p99: rank(99),
    max: sorted[sorted.length - 1],
    avg: round(sum / sorted.length, 1),
  };
}

export const round = (value: number, digits = 4): number => {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
};

/** A share in [0, 1], 0 when the whole is 0. */
export const ratio = (part: number, whole: number): number => (whole > 0 ? round(part / whole) : 0);

/** The session ids of a family (the root and every descendant). */
export async function familyIds(
  app: Pick<SessionScopeDeps, 'sessions'>,
  session: Session,
): Promise<{ root: string; ids: string[] }> {
  const root = await app.sessions.root(session.id);
  return { root, ids: (await app.sessions.family(root)).map((s) => s.id) };
}

/** One line, at most `max` characters, redacted. */
export function oneLine(app: { readonly redactor: Redactor }, text: string, max = 160): string {
  const line = app.redactor.string(text).replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
