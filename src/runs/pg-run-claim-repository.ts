/**
 * A run's claim with its `run.started` event in one statement on PostgreSQL (migration 33,
 * `svc_claim_run_started`), the event asked to follow it and, with `alongside`, another domain's
 * insert and its event (p-pgstart): `PostgresRunWrites.claimIfFreeStarted`
 * (./pg-run-write-repository.ts).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { fromPg, type PgRunRow } from './pg-run-queries';
import type { AgentRun, GatedInsert } from './types';

/** A run event's write: its type and its payload as JSON text. */
export interface ClaimEventWrite {
  type: string;
  payload: string;
}

/** Another domain's insert and its run event (`ClaimOptions.alongside`), the payload as JSON text. */
export interface ClaimAlongsideWrite extends ClaimEventWrite {
  write: GatedInsert;
}

/** The claimed run, its `run.started` event's id and seq, and those of what followed it. */
export interface ClaimedStarted {
  run: AgentRun;
  event: { id: number; seq: number };
  next?: { id: number; seq: number };
  /** `alongside`'s event: absent, neither its insert nor its event was written. */
  alongside?: { id: number; seq: number };
}

/**
 * `PostgresRunWrites.claimIfFreeStarted` (./pg-run-write-repository.ts, documented there): the
 * interface's member is this type, and the two functions here take its parameters after `sql`,
 * so the three cannot drift apart (declared here: that file imports this one).
 */
export type ClaimStarted = (
  id: string,
  sessionId: string,
  now: number,
  owner: { pid: number; host: string; runner: string },
  next?: ClaimEventWrite,
  alongside?: ClaimAlongsideWrite,
) => Promise<ClaimedStarted | undefined>;

type ClaimStartedArgs = Parameters<ClaimStarted>;

export type PgRunRowWithEvent = PgRunRow & { svc_event_id: number | string; svc_event_seq: number | string };

/** A run row answered with its event's id and seq (`svc_event_*` columns), split in two. */
export function splitEvent(row: PgRunRowWithEvent): { run: AgentRun; event: { id: number; seq: number } } {
  const { svc_event_id, svc_event_seq, ...run } = row;
  return { run: fromPg(run as PgRunRow), event: { id: Number(svc_event_id), seq: Number(svc_event_seq) } };
}

/** `PostgresRunWrites.claimIfFreeStarted` (see there). */
export async function claimIfFreeStarted(
  sql: SqlClient,
  ...[id, sessionId, now, owner, next]: ClaimStartedArgs
): Promise<ClaimedStarted | undefined> {
  const params = [id, sessionId, now, owner.pid, owner.host, owner.runner];
  if (!next) {
    const row = await sql.one<PgRunRowWithEvent>(
      'SELECT (c.run).*, c.svc_event_id, c.svc_event_seq FROM svc_claim_run_started($1, $2, $3, $4, $5, $6) c',
      params,
    );
    return row ? splitEvent(row) : undefined;
  }
  // LATERAL on the claimed row: appended only when the claim wrote, after it (its seq next).
  const row = await sql.one<
    PgRunRowWithEvent & { svc_next_id: number | string; svc_next_seq: number | string }
  >(
    `SELECT (c.run).*, c.svc_event_id, c.svc_event_seq, a.event_id AS svc_next_id, a.event_seq AS svc_next_seq
         FROM svc_claim_run_started($1, $2, $3, $4, $5, $6) c,
              LATERAL svc_append_run_event((c.run).id, $2, $7, $8, $3) a`,
    [...params, next.type, next.payload],
  );
  if (!row) return undefined;
  const { svc_next_id, svc_next_seq, ...rest } = row;
  return { ...splitEvent(rest), next: { id: Number(svc_next_id), seq: Number(svc_next_seq) } };
}

/**
 * `PostgresRunWrites.claimIfFreeStarted` with another domain's insert and its event (p-pgstart):
 * the claim (and `next`) first, materialized; the insert gated on a claimed row; the event appended
 * after them (the next seq) only when the insert answered a row. Each part reads the one before,
 * so they are made in that order within the statement.
 */
export async function claimStartedAlongside(
  sql: SqlClient,
  ...[id, sessionId, now, owner, next, alongside]: ClaimStartedArgs
): Promise<ClaimedStarted | undefined> {
  if (!alongside) return claimIfFreeStarted(sql, id, sessionId, now, owner, next);
  const params: unknown[] = [id, sessionId, now, owner.pid, owner.host, owner.runner];
  const followed = next
    ? ', n.event_id AS svc_next_id, n.event_seq AS svc_next_seq'
    : ', NULL::bigint AS svc_next_id, NULL::bigint AS svc_next_seq';
  const lateral = next ? `, LATERAL svc_append_run_event((x.run).id, $2, $7, $8, $3) n` : '';
  if (next) params.push(next.type, next.payload);
  const k = params.length;
  const own = k + alongside.write.values.length;
  const row = await sql.one<
    PgRunRowWithEvent & {
      svc_next_id: number | string | null;
      svc_next_seq: number | string | null;
      svc_also_id: number | string | null;
      svc_also_seq: number | string | null;
    }
  >(
    `WITH c AS MATERIALIZED (SELECT (x.run).*, x.svc_event_id, x.svc_event_seq${followed}
             FROM svc_claim_run_started($1, $2, $3, $4, $5, $6) x${lateral}),
          ${alongside.write.cte(k, 'EXISTS (SELECT 1 FROM c)')},
          b AS MATERIALIZED (SELECT a.event_id, a.event_seq
             FROM c, LATERAL svc_append_run_event(c.id, $2, $${own + 1}, $${own + 2}, $3) a
            WHERE EXISTS (SELECT 1 FROM alongside))
     SELECT c.*, b.event_id AS svc_also_id, b.event_seq AS svc_also_seq FROM c LEFT JOIN b ON true`,
    [...params, ...alongside.write.values, alongside.type, alongside.payload],
  );
  if (!row) return undefined;
  const { svc_next_id, svc_next_seq, svc_also_id, svc_also_seq, ...rest } = row;
  const pair = (a: number | string | null, b: number | string | null) =>
    a === null || b === null ? undefined : { id: Number(a), seq: Number(b) };
  const nextIds = pair(svc_next_id, svc_next_seq);
  const also = pair(svc_also_id, svc_also_seq);
  return { ...splitEvent(rest), ...(nextIds ? { next: nextIds } : {}), ...(also ? { alongside: also } : {}) };
}
