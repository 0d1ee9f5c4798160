/**
 * Shared reads for the health readouts: run ledger events and runs (the run ledger's queries) and
 * the session event log (what the bus persisted), filtered by type, time window and session
 * family. Read-only; every readout is computed from these rows.
 * @module
 */

import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { SessionEvent } from '../events/bus';
import type { ReadModelQueries } from '../observe/read-model-queries';
import type { Redactor } from '../redact';
import type { AgentRun, RunEvent, RunLedger } from '../runs/run-ledger';
import type { SessionStore } from '../sessions/session-store';
import type { Clock } from '../util/ids';

/** What the health readouts read: the run ledger, the session event log, the session tree. */
export interface HealthReadoutDeps {
  readonly runs: Pick<RunLedger, 'available' | 'queries'>;
  /** The session event log's reads, on the App's store. */
  readonly observe: { readonly queries: Pick<ReadModelQueries, 'events' | 'hookRuns'> };
  readonly sessions: Pick<SessionStore, 'require' | 'family'>;
  readonly clock: Clock;
  readonly config: Config;
  readonly redactor: Redactor;
}

export type LedgerEvent = RunEvent;
export type LoggedEvent = SessionEvent;
export type RunRow = AgentRun;

export interface Scope {
  /** Only events at or after this time (ms). */
  since: number;
  /** Only these sessions (a session and its sub-agent sessions); undefined = all. */
  sessions?: string[];
}

/** The window and session family of a readout call; throws when the store is unavailable. */
export async function scopeOf(
  app: Pick<HealthReadoutDeps, 'runs' | 'sessions'>,
  input: { session_id?: string; since_ms?: number },
): Promise<Scope> {
  const status = app.runs.available();
  if (!status.ok) throw new SvcError('unavailable', status.reason);
  let sessions: string[] | undefined;
  if (input.session_id) {
    await app.sessions.require(input.session_id);
    sessions = (await app.sessions.family(input.session_id)).map((s) => s.id);
    if (!sessions.includes(input.session_id)) sessions.push(input.session_id);
  }
  return { since: input.since_ms ?? 0, sessions };
}

export function windowStart(app: Pick<HealthReadoutDeps, 'clock'>, minutes: number): number {
  return app.clock.now() - minutes * 60_000;
}

/** Run ledger events of these types in the scope, newest first. */
export async function ledgerEvents(
  app: Pick<HealthReadoutDeps, 'runs'>,
  scope: Scope,
  types: readonly string[],
  options: {
    limit?: number;
    runId?: string;
    payloadEquals?: Record<string, string | number>;
    payloadContains?: Record<string, string>;
  } = {},
): Promise<LedgerEvent[]> {
  return await app.runs.queries.findEvents({
    types,
    since: scope.since,
    sessionIds: scope.sessions,
    runId: options.runId,
    payloadEquals: options.payloadEquals,
    payloadContains: options.payloadContains,
    order: 'desc',
    limit: options.limit ?? 10_000,
  });
}

/** Session event log entries of these types in the scope, newest first. */
export async function loggedEvents(
  app: Pick<HealthReadoutDeps, 'observe'>,
  scope: Scope,
  types: readonly string[],
  options: { limit?: number; afterId?: number } = {},
): Promise<LoggedEvent[]> {
  return await app.observe.queries.events.find({
    types,
    since: scope.since,
    afterId: options.afterId ?? 0,
    sessionIds: scope.sessions,
    order: 'desc',
    limit: options.limit ?? 10_000,
  });
}

/** Runs that ended (or were created) in the window, newest first. */
export async function runs(
  app: Pick<HealthReadoutDeps, 'runs'>,
  scope: Scope,
  options: { statuses?: readonly string[]; yolo?: boolean; reasonPrefix?: string; limit?: number } = {},
): Promise<RunRow[]> {
  return await app.runs.queries.inWindow({
    since: scope.since,
    statuses: options.statuses,
    sessionIds: scope.sessions,
    yolo: options.yolo,
    reasonPrefix: options.reasonPrefix,
    limit: options.limit,
  });
}

export async function runById(
  app: Pick<HealthReadoutDeps, 'runs'>,
  runId: string,
): Promise<RunRow | undefined> {
  return await app.runs.queries.get(runId);
}

/** One line, at most `max` characters. */
export function clip(text: unknown, max = 200): string {
  const line = String(text ?? '')
    .replace(/\s+/g, ' ')
    .trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
