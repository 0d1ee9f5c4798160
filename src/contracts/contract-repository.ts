/**
 * The contracts' tables: `contract_obligations` (obligations a session attached), `contract_results`
 * (every evaluation) and `contract_waivers`. The only place that knows how they are stored;
 * ./contract-service.ts owns scopes, statuses and views.
 * @module
 */
import type { Db } from '../store/db';

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

/** A `contract_results` row as both backends insert it. */
export type ContractResultRow = Omit<ObligationResult, 'ran_at'> & {
  obligation_id: string;
  origin: string;
  kind: string;
  command: string | null;
  ran_at: number;
};

/** The result insert's parameters in column order (scope … ran_at), for both backends. */
export const contractResultValues = (row: ContractResultRow): unknown[] => [
  row.scope,
  row.obligation_id,
  row.origin,
  row.kind,
  row.command,
  row.status,
  row.detail,
  row.exit_code,
  row.duration_ms,
  row.ran_at,
];

export interface ContractRepository {
  /** A scope's attached obligations, by id: the stored spec JSON. */
  attached(scope: string): Promise<{ obligation_id: string; spec: string }[]>;
  /** Insert or replace an attached obligation. */
  attach(scope: string, obligationId: string, spec: string, createdAt: number): Promise<void>;
  lastResult(scope: string, obligationId: string): Promise<ObligationResult | undefined>;
  /** The newest result of a command, whatever obligation and scope ran it. */
  latestForCommand(command: string): Promise<ObligationResult | undefined>;
  insertResult(row: ContractResultRow): Promise<void>;
  waiver(
    scope: string,
    obligationId: string,
  ): Promise<{ reason: string; by: string; at: number } | undefined>;
  /** Insert or replace a waiver. */
  waive(
    scope: string,
    obligationId: string,
    waiver: { reason: string; by: string; at: number },
  ): Promise<void>;
}

export function createContractRepository(db: () => Db): ContractRepository {
  return {
    attached: async (scope) =>
      db()
        .prepare(
          'SELECT obligation_id, spec FROM contract_obligations WHERE scope = ? ORDER BY obligation_id',
        )
        .all(scope) as { obligation_id: string; spec: string }[],
    async attach(scope, obligationId, spec, createdAt) {
      db()
        .prepare(
          `INSERT INTO contract_obligations (scope, obligation_id, spec, created_at) VALUES (?, ?, ?, ?)
           ON CONFLICT(scope, obligation_id) DO UPDATE SET spec = excluded.spec, created_at = excluded.created_at`,
        )
        .run(scope, obligationId, spec, createdAt);
    },
    lastResult: async (scope, obligationId) =>
      db()
        .prepare(
          'SELECT status, detail, exit_code, duration_ms, ran_at, scope FROM contract_results WHERE scope = ? AND obligation_id = ? ORDER BY id DESC LIMIT 1',
        )
        .get(scope, obligationId) as ObligationResult | undefined,
    latestForCommand: async (command) =>
      db()
        .prepare(
          'SELECT status, detail, exit_code, duration_ms, ran_at, scope FROM contract_results WHERE command = ? ORDER BY id DESC LIMIT 1',
        )
        .get(command) as ObligationResult | undefined,
    async insertResult(row) {
      db()
        .prepare(
          'INSERT INTO contract_results (scope, obligation_id, origin, kind, command, status, detail, exit_code, duration_ms, ran_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        )
        .run(...contractResultValues(row));
    },
    waiver: async (scope, obligationId) =>
      db()
        .prepare('SELECT reason, by, at FROM contract_waivers WHERE scope = ? AND obligation_id = ?')
        .get(scope, obligationId) as { reason: string; by: string; at: number } | undefined,
    async waive(scope, obligationId, waiver) {
      db()
        .prepare(
          `INSERT INTO contract_waivers (scope, obligation_id, reason, by, at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT(scope, obligation_id) DO UPDATE SET reason = excluded.reason, by = excluded.by, at = excluded.at`,
        )
        .run(scope, obligationId, waiver.reason, waiver.by, waiver.at);
    },
  };
}
