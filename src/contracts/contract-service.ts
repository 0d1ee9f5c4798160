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
import type { Config, Obligation } from '../config/schema';
import { obligationSchema } from '../config/schema';
import type { MarkerService } from '../coordination/markers';
import { SvcError } from '../errors';
import type { Redactor } from '../redact';
import type { Session } from '../sessions/session-store';
import type { Clock } from '../util/ids';
import type { ContractRepository, ObligationResult } from './contract-repository';
import { type CommandRunner, evaluateObligation } from './evaluate';

export type { ObligationResult, ResultStatus } from './contract-repository';
export type { CommandOutcome, CommandRunner } from './evaluate';

export type ObligationStatus = 'pending' | 'passed' | 'failed' | 'waived' | 'disabled';
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

export interface ContractService {
  list(sessionId?: string): Promise<ContractView>;
  /** Evaluate now (all enabled obligations, or the named ones) and record the results. */
  rerun(
    input: { session_id?: string; obligation_ids?: string[] },
    runCommand: CommandRunner,
  ): Promise<ContractView & { evaluated: string[] }>;
  waive(input: {
    session_id?: string;
    obligation_id: string;
    reason: string;
    by: string;
  }): Promise<ObligationView>;
  /** Attach obligations to a session's contract (replacing same-id session obligations). */
  attach(sessionId: string, obligations: Record<string, unknown>): Promise<ObligationView[]>;
  /** Latest result of a command, whatever obligation ran it. */
  latestForCommand(command: string): Promise<ObligationResult | undefined>;
}

export interface ContractDeps {
  /** The contracts' tables (SQLite: createContractRepository, PostgreSQL: its pg- twin). */
  store: ContractRepository;
  clock: Clock;
  config: () => Config;
  workspace: string;
  markers: () => MarkerService;
  session: (id: string) => Promise<Session | undefined>;
  redactor: Redactor;
}

interface Entry {
  id: string;
  origin: 'workspace' | 'session';
  obligation: Obligation;
}

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

export function createContractService(deps: ContractDeps): ContractService {
  const { store } = deps;
  const checkSession = async (sessionId: string | undefined): Promise<string> => {
    if (sessionId === undefined) return '';
    if (!(await deps.session(sessionId)))
      throw new SvcError('not_found', `session_id: no session "${sessionId}"; see list_sessions`);
    return sessionId;
  };

  const entries = async (scope: string): Promise<Entry[]> => {
    const workspace = Object.entries(deps.config().contracts).map(([id, obligation]) => ({
      id,
      origin: 'workspace' as const,
      obligation,
    }));
    if (!scope) return workspace;
    const attached = (await store.attached(scope)).flatMap((row) => {
      const parsed = obligationSchema().safeParse(JSON.parse(row.spec));
      return parsed.success
        ? [{ id: row.obligation_id, origin: 'session' as const, obligation: parsed.data }]
        : [];
    });
    return [...workspace, ...attached];
  };

  const lastResult = async (scope: string, id: string): Promise<ObligationResult | null> =>
    (await store.lastResult(scope, id)) ?? null;

  const waiverOf = async (scope: string, entry: Entry): Promise<Waiver | null> => {
    const scopes = entry.origin === 'workspace' && scope ? [scope, ''] : [scope];
    for (const s of scopes) {
      const row = await store.waiver(s, entry.id);
      if (row) return { ...row, session_id: s || null };
    }
    return null;
  };

  const view = async (scope: string, entry: Entry): Promise<ObligationView> => {
    const { kind, description, disabled, ...spec } = entry.obligation as Obligation & {
      description?: string;
      disabled: boolean;
    };
    const last = await lastResult(scope, entry.id);
    const waiver = await waiverOf(scope, entry);
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

  const contract = async (scope: string): Promise<ContractView> => {
    const obligations: ObligationView[] = [];
    for (const entry of await entries(scope)) obligations.push(await view(scope, entry));
    return { session_id: scope || null, ...tally(obligations), obligations };
  };

  return {
    list: async (sessionId) => await contract(await checkSession(sessionId)),

    async rerun(input, runCommand) {
      const scope = await checkSession(input.session_id);
      const all = await entries(scope);
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
        const result = await evaluateObligation(deps, scope, entry.obligation, runCommand);
        await store.insertResult({
          scope,
          obligation_id: entry.id,
          origin: entry.origin,
          kind: entry.obligation.kind,
          command: entry.obligation.kind === 'command' ? entry.obligation.command.trim() : null,
          status: result.status,
          detail: deps.redactor.string(result.detail),
          exit_code: result.exit_code,
          duration_ms: result.duration_ms,
          ran_at: deps.clock.now(),
        });
        evaluated.push(entry.id);
      }
      return { ...(await contract(scope)), evaluated };
    },

    async waive(input) {
      const scope = await checkSession(input.session_id);
      const entry = (await entries(scope)).find((e) => e.id === input.obligation_id);
      if (!entry) {
        throw new SvcError(
          'not_found',
          `obligation_id: no obligation "${input.obligation_id}"${scope ? ` in session ${scope}'s contract` : ' in the workspace contract'}; see contract_list_obligations`,
        );
      }
      if (!input.reason.trim())
        throw new SvcError('invalid_input', 'reason: say why the obligation is waived');
      await store.waive(scope, entry.id, {
        reason: deps.redactor.string(input.reason.trim()),
        by: input.by,
        at: deps.clock.now(),
      });
      return await view(scope, entry);
    },

    async attach(sessionId, obligations) {
      const scope = await checkSession(sessionId);
      const parsed = parseAttached(obligations, new Set(Object.keys(deps.config().contracts)));
      for (const entry of parsed)
        await store.attach(scope, entry.id, JSON.stringify(entry.obligation), deps.clock.now());
      const views: ObligationView[] = [];
      for (const entry of parsed) views.push(await view(scope, entry));
      return views;
    },

    latestForCommand: async (command) => await store.latestForCommand(command.trim()),
  };
}

/** The counts of a contract's obligations by status, and the state they make. */
function tally(obligations: ObligationView[]): Pick<ContractView, 'state' | 'counts'> {
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
  return { state, counts };
}

/** Validate obligations a session attaches: ids, no clash with the workspace's, each one's shape. */
function parseAttached(obligations: Record<string, unknown>, workspaceIds: Set<string>): Entry[] {
  const parsed: Entry[] = [];
  for (const [id, raw] of Object.entries(obligations)) {
    if (!ID.test(id))
      throw new SvcError('invalid_input', `attach.${id}: obligation ids are letters, digits, ., - and _`);
    if (workspaceIds.has(id))
      throw new SvcError(
        'conflict',
        `attach.${id}: the workspace contract already has an obligation "${id}"; pick another id`,
      );
    const result = obligationSchema().safeParse(raw);
    if (!result.success) {
      const issue = result.error.issues[0];
      throw new SvcError(
        'invalid_input',
        `attach.${id}${issue.path.length ? `.${issue.path.join('.')}` : ''}: ${issue.message}`,
      );
    }
    parsed.push({ id, origin: 'session', obligation: result.data });
  }
  return parsed;
}
