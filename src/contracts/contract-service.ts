/**
 * Contracts: obligations that must hold before work counts as done. The workspace contract is
 * `[contracts.<id>]` in config; a session adds its own obligations (`attach`). Kinds: `command`
 * (a shell command that must exit 0: tests, lint), `file_exists`, `no_markers` (no open workspace
 * markers of a kind, todo by default) and `plan_approved` (the session's plan was approved).
 *
 * Scopes: evaluations and waivers are recorded for a session, or for the workspace ('' scope) when
 * no session is named. A workspace waiver holds for every session; a session waiver only there.
 * An obligation's status: `waived` when a waiver holds, else its last result (`passed`, `failed`),
 * `pending` when never evaluated, `disabled` when its config says so.
 * @module
 */
import { existsSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import type { Config, Obligation } from '../config/schema';
import { obligationSchema } from '../config/schema';
import type { MarkerService } from '../coordination/markers';
import { SvcError } from '../errors';
import type { Redactor } from '../redact';
import type { Session } from '../sessions/session-store';
import type { Db } from '../store/db';
import type { Clock } from '../util/ids';

export type ObligationStatus = 'pending' | 'passed' | 'failed' | 'waived' | 'disabled';
export type ResultStatus = 'passed' | 'failed';

export interface ObligationResult {
  status: ResultStatus;
  detail: string;
  exit_code: number | null;
  duration_ms: number | null;
  ran_at: number;
  /** The scope the result was recorded in ('' = workspace). */
  scope: string;
}

export interface Waiver {
  reason: string;
  by: string;
  at: number;
  /** The session the waiver is for, or null for the whole workspace. */
  session_id: string | null;
}

export interface ObligationView {
  id: string;
  origin: 'workspace' | 'session';
  kind: Obligation['kind'];
  description: string | null;
  /** The kind's own fields (command, path, marker_kind…). */
  spec: Record<string, unknown>;
  status: ObligationStatus;
  last_result: ObligationResult | null;
  waiver: Waiver | null;
}

export interface ContractView {
  session_id: string | null;
  state: 'satisfied' | 'unsatisfied' | 'pending' | 'empty';
  counts: Record<ObligationStatus, number> & { total: number };
  obligations: ObligationView[];
}

export interface CommandOutcome {
  exit_code: number | null;
  output: string;
  timed_out: boolean;
  duration_ms: number;
}

/** Runs a command obligation (the tool layer runs it through the workspace shell and its asks). */
export type CommandRunner = (command: string, timeoutSeconds: number) => Promise<CommandOutcome>;

export interface ContractService {
  list(sessionId?: string): ContractView;
  /** Evaluate now (all enabled obligations, or the named ones) and record the results. */
  rerun(
    input: { session_id?: string; obligation_ids?: string[] },
    runCommand: CommandRunner,
  ): Promise<ContractView & { evaluated: string[] }>;
  waive(input: { session_id?: string; obligation_id: string; reason: string; by: string }): ObligationView;
  /** Attach obligations to a session's contract (replacing same-id session obligations). */
  attach(sessionId: string, obligations: Record<string, unknown>): ObligationView[];
  /** Latest result of a command, whatever obligation ran it. */
  latestForCommand(command: string): ObligationResult | undefined;
}

export interface ContractDeps {
  db: () => Db;
  clock: Clock;
  config: () => Config;
  workspace: string;
  markers: () => MarkerService;
  session: (id: string) => Session | undefined;
  redactor: Redactor;
}

interface Entry {
  id: string;
  origin: 'workspace' | 'session';
  obligation: Obligation;
}

const DEFAULT_TIMEOUT_SECONDS = 300;
const DETAIL_CHARS = 2000;
const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

export function createContractService(deps: ContractDeps): ContractService {
  const checkSession = (sessionId: string | undefined): string => {
    if (sessionId === undefined) return '';
    if (!deps.session(sessionId))
      throw new SvcError('not_found', `session_id: no session "${sessionId}"; see list_sessions`);
    return sessionId;
  };

  const entries = (scope: string): Entry[] => {
    const workspace = Object.entries(deps.config().contracts).map(([id, obligation]) => ({
      id,
      origin: 'workspace' as const,
      obligation,
    }));
    if (!scope) return workspace;
    const attached = (
      deps
        .db()
        .prepare(
          'SELECT obligation_id, spec FROM contract_obligations WHERE scope = ? ORDER BY obligation_id',
        )
        .all(scope) as {
        obligation_id: string;
        spec: string;
      }[]
    ).flatMap((row) => {
      const parsed = obligationSchema.safeParse(JSON.parse(row.spec));
      return parsed.success
        ? [{ id: row.obligation_id, origin: 'session' as const, obligation: parsed.data }]
        : [];
    });
    return [...workspace, ...attached];
  };

  const lastResult = (scope: string, id: string): ObligationResult | null => {
    const row = deps
      .db()
      .prepare(
        'SELECT status, detail, exit_code, duration_ms, ran_at, scope FROM contract_results WHERE scope = ? AND obligation_id = ? ORDER BY id DESC LIMIT 1',
      )
      .get(scope, id) as ObligationResult | undefined;
    return row ?? null;
  };

  const waiverOf = (scope: string, entry: Entry): Waiver | null => {
    const scopes = entry.origin === 'workspace' && scope ? [scope, ''] : [scope];
    for (const s of scopes) {
      const row = deps
        .db()
        .prepare('SELECT reason, by, at FROM contract_waivers WHERE scope = ? AND obligation_id = ?')
        .get(s, entry.id) as Omit<Waiver, 'session_id'> | undefined;
      if (row) return { ...row, session_id: s || null };
    }
    return null;
  };

  const view = (scope: string, entry: Entry): ObligationView => {
    const { kind, description, disabled, ...spec } = entry.obligation as Obligation & {
      description?: string;
      disabled: boolean;
    };
    const last = lastResult(scope, entry.id);
    const waiver = waiverOf(scope, entry);
    const status: ObligationStatus = disabled ? 'disabled' : waiver ? 'waived' : (last?.status ?? 'pending');
    return {
      id: entry.id,
      origin: entry.origin,
      kind,
      description: description ?? null,
      spec,
      status,
      last_result: last,
      waiver,
    };
  };

  const contract = (scope: string): ContractView => {
    const obligations = entries(scope).map((entry) => view(scope, entry));
    const counts = { total: obligations.length, pending: 0, passed: 0, failed: 0, waived: 0, disabled: 0 };
    for (const o of obligations) counts[o.status]++;
    const state: ContractView['state'] =
      counts.total === counts.disabled
        ? 'empty'
        : counts.failed > 0
          ? 'unsatisfied'
          : counts.pending > 0
            ? 'pending'
            : 'satisfied';
    return { session_id: scope || null, state, counts, obligations };
  };

  const evaluate = async (
    scope: string,
    entry: Entry,
    runCommand: CommandRunner,
  ): Promise<Omit<ObligationResult, 'ran_at' | 'scope'>> => {
    const o = entry.obligation;
    switch (o.kind) {
      case 'command': {
        const outcome = await runCommand(o.command, o.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS);
        const tail = outcome.output.trim().slice(-DETAIL_CHARS);
        const passed = outcome.exit_code === 0 && !outcome.timed_out;
        const why = outcome.timed_out ? 'timed out' : `exit ${outcome.exit_code ?? 'killed'}`;
        return {
          status: passed ? 'passed' : 'failed',
          detail: tail ? `${why}\n${tail}` : why,
          exit_code: outcome.exit_code,
          duration_ms: outcome.duration_ms,
        };
      }
      case 'file_exists': {
        const full = resolve(deps.workspace, o.path);
        if (relative(deps.workspace, full).startsWith('..')) {
          return {
            status: 'failed',
            detail: `${o.path} is outside the workspace`,
            exit_code: null,
            duration_ms: null,
          };
        }
        const found = existsSync(full);
        return {
          status: found ? 'passed' : 'failed',
          detail: found ? `${o.path} exists` : `${o.path} does not exist`,
          exit_code: null,
          duration_ms: null,
        };
      }
      case 'no_markers': {
        const open = deps
          .markers()
          .list(o.path ? { path: o.path } : {})
          .filter((marker) => marker.kind === o.marker_kind);
        const detail = open.length
          ? `${open.length} open ${o.marker_kind} marker(s): ${open
              .slice(0, 5)
              .map((m) => `${m.path}: ${m.message.slice(0, 80)}`)
              .join('; ')}`
          : `no open ${o.marker_kind} markers`;
        return { status: open.length ? 'failed' : 'passed', detail, exit_code: null, duration_ms: null };
      }
      case 'plan_approved': {
        if (!scope)
          return {
            status: 'failed',
            detail: 'plan approval is per session: evaluate with a session_id',
            exit_code: null,
            duration_ms: null,
          };
        const session = deps.session(scope);
        const plan = session?.metadata.plan as { markdown?: unknown } | undefined;
        const phase = session?.metadata.workflow_phase;
        if (!plan || typeof plan.markdown !== 'string')
          return {
            status: 'failed',
            detail: 'the session has no plan (set_plan_artifact)',
            exit_code: null,
            duration_ms: null,
          };
        if (phase !== 'execute')
          return {
            status: 'failed',
            detail: 'the plan is not approved yet (approve_plan or /approve)',
            exit_code: null,
            duration_ms: null,
          };
        return { status: 'passed', detail: 'the plan is approved', exit_code: null, duration_ms: null };
      }
      default: {
        const never: never = o;
        throw new SvcError('internal', `unknown obligation kind ${String((never as { kind: string }).kind)}`);
      }
    }
  };

  return {
    list: (sessionId) => contract(checkSession(sessionId)),

    async rerun(input, runCommand) {
      const scope = checkSession(input.session_id);
      const all = entries(scope);
      const wanted = input.obligation_ids;
      if (wanted) {
        const unknown = wanted.filter((id) => !all.some((entry) => entry.id === id));
        if (unknown.length) {
          throw new SvcError(
            'not_found',
            `obligation_ids: no obligation ${unknown.map((id) => `"${id}"`).join(', ')}; known: ${all.map((e) => e.id).join(', ') || 'none'}`,
          );
        }
      }
      const chosen = all.filter((entry) => (wanted ? wanted.includes(entry.id) : !entry.obligation.disabled));
      const evaluated: string[] = [];
      for (const entry of chosen) {
        const result = await evaluate(scope, entry, runCommand);
        deps
          .db()
          .prepare(
            'INSERT INTO contract_results (scope, obligation_id, origin, kind, command, status, detail, exit_code, duration_ms, ran_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
          )
          .run(
            scope,
            entry.id,
            entry.origin,
            entry.obligation.kind,
            entry.obligation.kind === 'command' ? entry.obligation.command.trim() : null,
            result.status,
            deps.redactor.string(result.detail),
            result.exit_code,
            result.duration_ms,
            deps.clock.now(),
          );
        evaluated.push(entry.id);
      }
      return { ...contract(scope), evaluated };
    },

    waive(input) {
      const scope = checkSession(input.session_id);
      const entry = entries(scope).find((e) => e.id === input.obligation_id);
      if (!entry) {
        throw new SvcError(
          'not_found',
          `obligation_id: no obligation "${input.obligation_id}"${scope ? ` in session ${scope}'s contract` : ' in the workspace contract'}; see contract_list_obligations`,
        );
      }
      if (!input.reason.trim())
        throw new SvcError('invalid_input', 'reason: say why the obligation is waived');
      deps
        .db()
        .prepare(
          `INSERT INTO contract_waivers (scope, obligation_id, reason, by, at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT(scope, obligation_id) DO UPDATE SET reason = excluded.reason, by = excluded.by, at = excluded.at`,
        )
        .run(scope, entry.id, deps.redactor.string(input.reason.trim()), input.by, deps.clock.now());
      return view(scope, entry);
    },

    attach(sessionId, obligations) {
      const scope = checkSession(sessionId);
      const workspaceIds = new Set(Object.keys(deps.config().contracts));
      const parsed: Entry[] = [];
      for (const [id, raw] of Object.entries(obligations)) {
        if (!ID.test(id))
          throw new SvcError('invalid_input', `attach.${id}: obligation ids are letters, digits, ., - and _`);
        if (workspaceIds.has(id))
          throw new SvcError(
            'conflict',
            `attach.${id}: the workspace contract already has an obligation "${id}"; pick another id`,
          );
        const result = obligationSchema.safeParse(raw);
        if (!result.success) {
          const issue = result.error.issues[0];
          throw new SvcError(
            'invalid_input',
            `attach.${id}${issue.path.length ? `.${issue.path.join('.')}` : ''}: ${issue.message}`,
          );
        }
        parsed.push({ id, origin: 'session', obligation: result.data });
      }
      const insert = deps.db().prepare(
        `INSERT INTO contract_obligations (scope, obligation_id, spec, created_at) VALUES (?, ?, ?, ?)
           ON CONFLICT(scope, obligation_id) DO UPDATE SET spec = excluded.spec, created_at = excluded.created_at`,
      );
      for (const entry of parsed)
        insert.run(scope, entry.id, JSON.stringify(entry.obligation), deps.clock.now());
      return parsed.map((entry) => view(scope, entry));
    },

    latestForCommand(command) {
      const row = deps
        .db()
        .prepare(
          'SELECT status, detail, exit_code, duration_ms, ran_at, scope FROM contract_results WHERE command = ? ORDER BY id DESC LIMIT 1',
        )
        .get(command.trim()) as ObligationResult | undefined;
      return row;
    },
  };
}
