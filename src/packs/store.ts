/**
 * Persistence of a session's operating pack reference and of hook outcomes (svc.db, migrations
 * 600–601). The row is the one source of truth every process reads, so the HTTP server, the
 * CLI and a restarted service derive the same snapshot from it.
 * @module
 */
import { z } from 'zod';
import { SvcError } from '../errors';
import type { Db } from '../store/db';
import { lazy } from '../util/lazy';
import type { PackDiagnostic } from './manifest';

export const LAST_ACTIONS = ['activate', 'clear', 'hydrate'] as const;
export type LastAction = (typeof LAST_ACTIONS)[number];
export const FAILURE_STATES = ['validation_failed', 'hydration_failed', 'approval_required'] as const;
export type FailureState = (typeof FAILURE_STATES)[number];

/** Metadata-only summary of a pack (spec, Operating mode snapshot: counts and names, no bodies). */
export const packSummarySchema = lazy(() =>
  z.strictObject({
    skills: z.array(z.string()),
    hook_count: z.number().int().min(0),
    policy_rules: z.number().int().min(0),
    task_rules: z.number().int().min(0),
    skill_rules: z.number().int().min(0),
    choreography: z.string(),
    has_prompt_preamble: z.boolean(),
  }),
);
export type PackSummary = z.infer<ReturnType<typeof packSummarySchema>>;

export const EMPTY_SUMMARY: PackSummary = {
  skills: [],
  hook_count: 0,
  policy_rules: 0,
  task_rules: 0,
  skill_rules: 0,
  choreography: '',
  has_prompt_preamble: false,
};

const diagnosticsSchema = lazy(() =>
  z.array(
    z.strictObject({
      section: z.string(),
      field: z.string(),
      level: z.enum(['error', 'warning']),
      message: z.string(),
    }),
  ),
);

export interface PackRow {
  session_id: string;
  active: boolean;
  pack_name: string;
  /** The reference as requested (name, path or preset id). */
  requested: string;
  manifest_path: string;
  source: string;
  preset_id: string;
  /**
   * What was approved at activation (./approval.ts `approvalDigest`; a row from before approval
   * digests: the manifest text's digest).
   */
  digest: string;
  summary: PackSummary;
  /** Bumped whenever the reference itself changes (activate, clear): process caches key on it. */
  ref_revision: number;
  last_action: LastAction | '';
  failure_state: FailureState | '';
  failure_reason: string;
  diagnostics: PackDiagnostic[];
  updated_at: number;
}

export interface HookRun {
  session_id: string;
  pack_name: string;
  hook_index: number;
  event: string;
  event_id: number | null;
  status: 'ok' | 'failed' | 'timeout' | 'error';
  exit_code: number | null;
  duration_ms: number;
  started_at: number;
}

/**
 * `session_operating_packs`, `pack_hook_runs` (issue 18: async; PostgreSQL twin ./pg-store.ts).
 */
export interface PackStore {
  get(sessionId: string): Promise<PackRow | undefined>;
  put(row: PackRow): Promise<void>;
  recordHookRun(run: HookRun): Promise<void>;
  /** Newest first. */
  hookRuns(sessionId: string, limit?: number): Promise<HookRun[]>;
  /** Whether this process's connection cannot write (a database opened read-only). */
  readOnly(): boolean;
}

export function emptyRow(sessionId: string, now: number): PackRow {
  return {
    session_id: sessionId,
    active: false,
    pack_name: '',
    requested: '',
    manifest_path: '',
    source: '',
    preset_id: '',
    digest: '',
    summary: EMPTY_SUMMARY,
    ref_revision: 0,
    last_action: '',
    failure_state: '',
    failure_reason: '',
    diagnostics: [],
    updated_at: now,
  };
}

export type RawRow = Omit<PackRow, 'active' | 'summary' | 'diagnostics'> & {
  active: number;
  summary: string;
  diagnostics: string;
};

/** A row as stored: the flag as 0/1, summary and diagnostics as JSON text. */
export function encode(row: PackRow): RawRow {
  return {
    ...row,
    active: row.active ? 1 : 0,
    summary: JSON.stringify(row.summary),
    diagnostics: JSON.stringify(row.diagnostics),
  };
}

export function createPackStore(db: () => Db): PackStore {
  return {
    readOnly() {
      const handle = db();
      return handle.readonly || Boolean(handle.pragma('query_only', { simple: true }));
    },
    async get(sessionId) {
      const raw = db().prepare('SELECT * FROM session_operating_packs WHERE session_id = ?').get(sessionId) as
        | RawRow
        | undefined;
      return raw ? decode(raw) : undefined;
    },
    async put(row) {
      db()
        .prepare(
          `INSERT INTO session_operating_packs (session_id, active, pack_name, requested, manifest_path, source,
             preset_id, digest, summary, ref_revision, last_action, failure_state, failure_reason, diagnostics, updated_at)
           VALUES (@session_id, @active, @pack_name, @requested, @manifest_path, @source, @preset_id, @digest,
             @summary, @ref_revision, @last_action, @failure_state, @failure_reason, @diagnostics, @updated_at)
           ON CONFLICT(session_id) DO UPDATE SET active = excluded.active, pack_name = excluded.pack_name,
             requested = excluded.requested, manifest_path = excluded.manifest_path, source = excluded.source,
             preset_id = excluded.preset_id, digest = excluded.digest, summary = excluded.summary,
             ref_revision = excluded.ref_revision, last_action = excluded.last_action,
             failure_state = excluded.failure_state, failure_reason = excluded.failure_reason,
             diagnostics = excluded.diagnostics, updated_at = excluded.updated_at`,
        )
        .run(encode(row));
    },
    async recordHookRun(run) {
      db()
        .prepare(
          `INSERT INTO pack_hook_runs (session_id, pack_name, hook_index, event, event_id, status, exit_code, duration_ms, started_at)
           VALUES (@session_id, @pack_name, @hook_index, @event, @event_id, @status, @exit_code, @duration_ms, @started_at)`,
        )
        .run(run);
    },
    async hookRuns(sessionId, limit = 20) {
      return db()
        .prepare(
          `SELECT session_id, pack_name, hook_index, event, event_id, status, exit_code, duration_ms, started_at
           FROM pack_hook_runs WHERE session_id = ? ORDER BY id DESC LIMIT ?`,
        )
        .all(sessionId, limit) as HookRun[];
    },
  };
}

/**
 * A row that does not decode (a hand-edited or newer-version database) cannot become a snapshot:
 * spec, Errors → Operating mode routes: a parity serialization failure answers 400.
 */
export function decode(raw: RawRow): PackRow {
  const fail = (why: string) =>
    new SvcError('internal', `operating mode snapshot cannot be serialized: stored ${why} is invalid`, {
      status: 400,
      details: { session_id: raw.session_id, reason: 'serialization' },
    });
  const summary = packSummarySchema().safeParse(parseJsonText(raw.summary));
  if (!summary.success) throw fail('pack summary');
  const diagnostics = diagnosticsSchema().safeParse(parseJsonText(raw.diagnostics));
  if (!diagnostics.success) throw fail('diagnostics');
  if (raw.last_action !== '' && !(LAST_ACTIONS as readonly string[]).includes(raw.last_action)) {
    throw fail('last_action');
  }
  if (raw.failure_state !== '' && !(FAILURE_STATES as readonly string[]).includes(raw.failure_state)) {
    throw fail('failure state');
  }
  return { ...raw, active: raw.active === 1, summary: summary.data, diagnostics: diagnostics.data };
}

function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
