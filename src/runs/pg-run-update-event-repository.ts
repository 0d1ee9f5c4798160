/**
 * A run's update and its event in one PostgreSQL statement (`PostgresRunWrites.updateRunWithEvent`,
 * ./pg-run-write-repository.ts): with the session's queue read under its claim lock (a finish that
 * drains next, p-pgcompat), and another domain's write with its run event after the run's own (a
 * compat request's row end in its run's finish, p-pgcompat6).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { type PgRunRowWithEvent, splitEvent } from './pg-run-claim-repository';
import { type RunWrites, runPatchColumns } from './run-repository';
import type { AgentRun, GatedInsert } from './types';

/** An event to write with a run's row: its type, its payload (JSON text) and its time. */
export interface RunEventWrite {
  type: string;
  payload: string;
  created_at: number;
}

/** `PostgresRunWrites.updateRunWithEvent`; `queueOf`: its session's queue (`queued`, migration 41). */
export async function updateRunWithEvent(
  sql: SqlClient,
  id: string,
  patch: Parameters<RunWrites['updateRun']>[1],
  now: number,
  event: RunEventWrite,
  queueOf?: string,
  alongside?: { write: GatedInsert; event: RunEventWrite },
): Promise<
  | {
      run: AgentRun;
      event: { id: number; seq: number };
      queued?: boolean;
      also?: { id: number; seq: number };
    }
  | undefined
> {
  const [text, params] = updateStatement(id, patch, now);
  const n = params.length;
  // The claim lock and queue read gate the UPDATE (an InitPlan): before the row's lock, as a claim.
  const q = queueOf ? `q AS MATERIALIZED (SELECT svc_session_has_queued($${n + 4}) AS queued), ` : '';
  const [gate, answer] = q
    ? [' AND (SELECT queued FROM q) IS NOT NULL', ', (SELECT queued FROM q) AS svc_queued']
    : ['', ''];
  // The other domain's write after the run's row (its lock first), only with it; its event after
  // the run's own (`b` waits for `a`: consecutive seqs), only when the write answered a row.
  const at = n + 3 + (queueOf ? 1 : 0);
  const also = alongside
    ? {
        with: `, ${alongside.write.cte(at + 3, 'EXISTS (SELECT 1 FROM r)')}`,
        join: ` LEFT JOIN LATERAL (SELECT b.event_id, b.event_seq
             FROM svc_append_run_event(r.id, r.session_id, $${at + 1}, $${at + 2}, $${at + 3}) b
            WHERE a.event_id IS NOT NULL AND EXISTS (SELECT 1 FROM alongside)) b ON true`,
        answer: ', b.event_id AS svc_also_id, b.event_seq AS svc_also_seq',
        values: [
          alongside.event.type,
          alongside.event.payload,
          alongside.event.created_at,
          ...alongside.write.values,
        ],
      }
    : undefined;
  const row = await sql.one<
    PgRunRowWithEvent & {
      svc_queued?: boolean;
      svc_also_id?: number | string | null;
      svc_also_seq?: number | string | null;
    }
  >(
    `WITH ${q}r AS (${text}${gate} RETURNING *)${also?.with ?? ''}
     SELECT r.*, a.event_id AS svc_event_id, a.event_seq AS svc_event_seq${answer}${also?.answer ?? ''}
       FROM r CROSS JOIN LATERAL svc_append_run_event(r.id, r.session_id, $${n + 1}, $${n + 2}, $${n + 3}) a${also?.join ?? ''}`,
    [
      ...params,
      event.type,
      event.payload,
      event.created_at,
      ...(queueOf ? [queueOf] : []),
      ...(also?.values ?? []),
    ],
  );
  if (!row) return undefined;
  const { svc_queued, svc_also_id, svc_also_seq, ...rest } = row;
  return {
    ...splitEvent(rest),
    ...(queueOf ? { queued: svc_queued === true } : {}),
    ...(svc_also_id === null || svc_also_id === undefined
      ? {}
      : { also: { id: Number(svc_also_id), seq: Number(svc_also_seq) } }),
  };
}

/** The UPDATE of a run's patched columns and its parameters. */
export function updateStatement(
  id: string,
  patch: Parameters<RunWrites['updateRun']>[1],
  now: number,
): [string, unknown[]] {
  const columns = runPatchColumns(patch, now);
  const sets = columns.map(([column], i) => `${column} = $${i + 1}`).join(', ');
  const params = [...columns.map(([, value]) => value), id];
  return [`UPDATE agent_runs SET ${sets} WHERE id = $${params.length}`, params];
}
