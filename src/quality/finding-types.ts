/**
 * The finding lifecycle's shapes: a finding, its log, an observation, the service interface.
 * See ./findings.ts for the lifecycle.
 * @module
 */
import type { ShellCheck } from './checks';

export type FindingState = 'open' | 'acknowledged' | 'fixed' | 'waived' | 'stale';
export type FindingKind = 'check' | 'diagnostic' | 'reported';
export const FINDING_STATES: readonly FindingState[] = ['open', 'acknowledged', 'fixed', 'waived', 'stale'];
export const FINDING_KINDS: readonly FindingKind[] = ['check', 'diagnostic', 'reported'];

export interface Finding {
  id: string;
  kind: FindingKind;
  state: FindingState;
  title: string;
  /** Evidence: a failing check's output tail, a diagnostic's message, a report's description. */
  detail: string | null;
  severity: 'error' | 'warning';
  path: string | null;
  line: number | null;
  /** The check whose passing run fixes it (`<cwd>::<signature>`). */
  check_key: string | null;
  check_command: string | null;
  check_kind: string | null;
  session_id: string | null;
  run_id: string | null;
  last_session_id: string | null;
  last_run_id: string | null;
  occurrences: number;
  first_seen_at: number;
  last_seen_at: number;
  state_changed_at: number;
}

export interface FindingEvent {
  id: number;
  finding_id: string;
  /** null when the finding was opened. */
  from_state: FindingState | null;
  to_state: FindingState;
  reason: string;
  /** What caused it: bash, diagnostics, agent, operator, file_change, sweep. */
  source: string;
  session_id: string | null;
  run_id: string | null;
  created_at: number;
}

export interface Observation {
  kind: FindingKind;
  fingerprint: string;
  title: string;
  detail?: string;
  severity?: 'error' | 'warning';
  path?: string;
  line?: number;
  checkKey?: string;
  checkCommand?: string;
  checkKind?: string;
}

export interface Actor {
  sessionId?: string;
  runId?: string;
  /** bash, diagnostics, agent, operator, file_change, sweep. */
  source: string;
}

export type FindingAction = 'acknowledge' | 'waive' | 'resolve' | 'mark_stale' | 'reopen';

export interface FindingLifecycleStatus {
  counts: Record<FindingState, number> & { total: number };
  /** Open and acknowledged findings by kind. */
  active_by_kind: Record<FindingKind, number>;
  /** Open and acknowledged findings, most recently seen first. */
  open: Finding[];
  events_total: number;
  last_event_at: number | null;
  stale_after_hours: number;
  sources: { kind: FindingKind; observed_from: string; fixed_by: string }[];
}

/**
 * The finding lifecycle (issue 18: async). Changes run one at a time in call order (a bus or
 * ledger listener calls without awaiting: its updates still apply in event order); reads wait for
 * the changes called before them.
 */
export interface FindingService {
  /** Open a finding, or count another sighting (reopening a fixed or stale one). */
  observe(observation: Observation, actor: Actor): Promise<Finding>;
  /** A check passed: fix the open findings it covers. */
  checkPassed(check: ShellCheck, actor: Actor): Promise<Finding[]>;
  /** A complete diagnostics run of `path` reported exactly these error fingerprints. */
  diagnosticsReported(path: string, present: readonly string[], actor: Actor): Promise<Finding[]>;
  /** A session changed (or deleted) a file. */
  fileChanged(path: string, change: 'create' | 'modify' | 'delete', actor: Actor): Promise<void>;
  /** Open findings not seen for STALE_AFTER_MS go stale. */
  sweep(actor: Actor): Promise<Finding[]>;
  act(id: string, action: FindingAction, reason: string | undefined, actor: Actor): Promise<Finding>;
  get(id: string): Promise<Finding>;
  list(filter?: {
    states?: FindingState[];
    kind?: FindingKind;
    sessionId?: string;
    limit?: number;
  }): Promise<Finding[]>;
  events(filter?: { findingId?: string; sessionId?: string; limit?: number }): Promise<{
    events: (FindingEvent & { title: string })[];
    total: number;
  }>;
  status(options?: { limit?: number; sessionId?: string }): Promise<FindingLifecycleStatus>;
  /** A new id for an explicitly reported finding's fingerprint. */
  newReportFingerprint(): string;
  /** Resolves once every change called so far has been applied (or has failed). */
  flush(): Promise<void>;
  /**
   * A sweep now would change nothing and no change is queued: no other connection committed since
   * the last pass, this process wrote no finding, and no active finding was last seen before the
   * cutoff as of that pass. Answered at once where the store can (SQLite), else false.
   */
  sweepsNothing?(): boolean;
}
