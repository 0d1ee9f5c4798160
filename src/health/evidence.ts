/**
 * Shared reads for the health readouts: run ledger events (`agent_run_events`), the session
 * event log (`session_events`, what the bus persisted) and runs (`agent_runs`), filtered by type,
 * time window and session family. Read-only; every readout is computed from these rows.
 * @module
 */

import { requireDb } from '../agent/reports';
import type { App } from '../app';

export interface LedgerEvent {
  id: number;
  run_id: string;
  session_id: string;
  seq: number;
  type: string;
  payload: Record<string, any>;
  created_at: number;
}

export interface LoggedEvent {
  id: number;
  session_id: string;
  type: string;
  payload: Record<string, any>;
  created_at: number;
}

export interface RunRow {
  id: string;
  session_id: string;
  parent_run_id: string | null;
  status: string;
  reason: string | null;
  error: string | null;
  options: Record<string, any>;
  steps: number;
  started_at: number | null;
  finished_at: number | null;
  created_at: number;
}

export interface Scope {
  /** Only events at or after this time (ms). */
  since: number;
  /** Only these sessions (a session and its sub-agent sessions); undefined = all. */
  sessions?: string[];
}

/** The window and session family of a readout call; throws when the store is unavailable. */
export function scopeOf(app: App, input: { session_id?: string; since_ms?: number }): Scope {
  requireDb(app);
  let sessions: string[] | undefined;
  if (input.session_id) {
    app.sessions.require(input.session_id);
    sessions = app.sessions.family(input.session_id).map((s) => s.id);
    if (!sessions.includes(input.session_id)) sessions.push(input.session_id);
  }
  return { since: input.since_ms ?? 0, sessions };
}

export function windowStart(app: App, minutes: number): number {
  return app.clock.now() - minutes * 60_000;
}

const inList = (column: string, values: readonly unknown[] | undefined) =>
  values ? `AND ${column} IN (${values.map(() => '?').join(', ') || 'NULL'})` : '';

export function ledgerEvents(
  app: App,
  scope: Scope,
  types: readonly string[],
  options: { limit?: number; where?: string; params?: unknown[]; runId?: string } = {},
): LedgerEvent[] {
  const rows = app.db
    .prepare(
      `SELECT id, run_id, session_id, seq, type, payload, created_at FROM agent_run_events
        WHERE type IN (${types.map(() => '?').join(', ')}) AND created_at >= ?
        ${inList('session_id', scope.sessions)} ${options.runId ? 'AND run_id = ?' : ''}
        ${options.where ? `AND ${options.where}` : ''}
        ORDER BY id DESC LIMIT ?`,
    )
    .all(
      ...types,
      scope.since,
      ...(scope.sessions ?? []),
      ...(options.runId ? [options.runId] : []),
      ...(options.params ?? []),
      options.limit ?? 10_000,
    ) as (Omit<LedgerEvent, 'payload'> & { payload: string })[];
  return rows.map((row) => ({ ...row, payload: parse(row.payload) }));
}

export function loggedEvents(
  app: App,
  scope: Scope,
  types: readonly string[],
  options: { limit?: number; afterId?: number } = {},
): LoggedEvent[] {
  const rows = app.db
    .prepare(
      `SELECT id, session_id, type, payload, created_at FROM session_events
        WHERE type IN (${types.map(() => '?').join(', ')}) AND created_at >= ? AND id > ?
        ${inList('session_id', scope.sessions)}
        ORDER BY id DESC LIMIT ?`,
    )
    .all(
      ...types,
      scope.since,
      options.afterId ?? 0,
      ...(scope.sessions ?? []),
      options.limit ?? 10_000,
    ) as (Omit<LoggedEvent, 'payload'> & { payload: string })[];
  return rows.map((row) => ({ ...row, payload: parse(row.payload) }));
}

/** Runs that ended (or were created) in the window, newest first. */
export function runs(
  app: App,
  scope: Scope,
  options: { statuses?: readonly string[]; where?: string; params?: unknown[]; limit?: number } = {},
): RunRow[] {
  const rows = app.db
    .prepare(
      `SELECT id, session_id, parent_run_id, status, reason, error, options, steps, started_at, finished_at, created_at
         FROM agent_runs
        WHERE coalesce(finished_at, started_at, created_at) >= ?
        ${inList('status', options.statuses)} ${inList('session_id', scope.sessions)}
        ${options.where ? `AND ${options.where}` : ''}
        ORDER BY coalesce(finished_at, started_at, created_at) DESC, rowid DESC LIMIT ?`,
    )
    .all(
      scope.since,
      ...(options.statuses ?? []),
      ...(scope.sessions ?? []),
      ...(options.params ?? []),
      options.limit ?? 10_000,
    ) as (Omit<RunRow, 'options'> & { options: string })[];
  return rows.map((row) => ({ ...row, options: parse(row.options) }));
}

export function runById(app: App, runId: string): RunRow | undefined {
  const row = app.db
    .prepare(
      `SELECT id, session_id, parent_run_id, status, reason, error, options, steps, started_at, finished_at, created_at
         FROM agent_runs WHERE id = ?`,
    )
    .get(runId) as (Omit<RunRow, 'options'> & { options: string }) | undefined;
  return row ? { ...row, options: parse(row.options) } : undefined;
}

function parse(text: string): Record<string, any> {
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' ? (value as Record<string, any>) : {};
  } catch {
    return {};
  }
}

/** One line, at most `max` characters. */
export function clip(text: unknown, max = 200): string {
  const line = String(text ?? '')
    .replace(/\s+/g, ' ')
    .trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
