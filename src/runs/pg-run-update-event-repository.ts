/**
 * A run's update and its event in one PostgreSQL statement (`PostgresRunWrites.updateRunWithEvent`,
 * ./pg-run-write-repository.ts): with the session's queue read under its claim lock (a finish that
 * drains next, p-pgcompat), and another domain's write with its run event after the run's own (a
 * compat request's row end in its run's finish, p-pgcompat6).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { type PrecedingWrite, shapeIdOf, type TrailingInsert } from '../store/preceding-write';
import { TextsByShape } from '../store/texts-by-shape';
import { type PgRunRowWithEvent, splitEvent } from './pg-run-claim-repository';
import { FOLLOWING_EVENTS, HANDED_COLUMN } from './pg-run-following-repository';
import { type RunWrites, runPatchColumns } from './run-repository';
import type { AgentRun, GatedInsert } from './types';

/** An event to write with a run's row: its type, its payload (JSON text) and its time. */
export interface RunEventWrite {
  type: string;
  payload: string;
  created_at: number;
}

/**
 * A set-returning function call another domain puts in a run statement (the bus's session event
 * append, src/events/bus.ts `JoinedEvents.call`), its parameters numbered from `first`; its rows
 * are `event_id`, `previous_id`.
 */
export type FollowingCall = (first: number) => { text: string; values: unknown[] };

/**
 * `FollowingCall` for a statement that inserts the session itself (`JoinedEvents.newSession`,
 * p-pglone): `WITH`s of its own, written where `go` holds, and a `FROM` item of the same rows.
 */
export type NewSessionCall = (first: number, go: string) => { ctes: string; rows: string; values: unknown[] };

/** A row of a `FollowingCall`. */
export interface AppendedRow {
  id: number;
  previous: number;
}

/** The rows of a `FollowingCall` aggregated as JSON (`e`: its alias), in their order. */
export const appendedJson =
  "json_agg(json_build_object('id', e.event_id, 'previous', e.previous_id) ORDER BY e.event_id)";

/** `appendedJson`'s value as the driver parses it (json: numbers). */
export const appendedRows = (value: unknown): AppendedRow[] =>
  ((value ?? []) as { id: number | string; previous: number | string }[]).map((row) => ({
    id: Number(row.id),
    previous: Number(row.previous),
  }));

/**
 * The run's last step end first (`FinishFirst`, p-pglast): its `before` gates the whole statement
 * (`g`, read once before any write, with the queue's claim lock first so the locks are taken in the
 * order claim, messages, session, run); its `WITH`s; its event appended before the run's own.
 */
interface FirstWrite {
  before: PrecedingWrite<unknown>;
  event: RunEventWrite;
  riding?: TrailingInsert;
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
  after?: FollowingCall,
  first?: FirstWrite,
): Promise<
  | {
      run: AgentRun;
      event: { id: number; seq: number };
      queued?: boolean;
      also?: { id: number; seq: number };
      appended?: AppendedRow[];
      first?: { answer: unknown; event: { id: number; seq: number } };
    }
  | undefined
> {
  // The step end's run events (its held preparation and `phase`) handed to this statement's own
  // list when it can (p-pglone): its `WITH`s built while handed over then only hold their arrays.
  const handing = first?.before.handingOver;
  const build = (handed: boolean) =>
    statementOf(id, patch, now, event, handed, queueOf, alongside, after, first);
  const { text, values, call } = handing ? handing(() => build(true)) : build(false);
  const row = await sql.one<
    PgRunRowWithEvent & {
      svc_queued?: boolean;
      svc_also_id?: number | string | null;
      svc_also_seq?: number | string | null;
      svc_appended?: unknown;
      svc_first_id?: number | string | null;
      svc_first_seq?: number | string | null;
      svc_before?: unknown;
    }
  >(text, values);
  if (!row) return undefined;
  const {
    svc_queued,
    svc_also_id,
    svc_also_seq,
    svc_appended,
    svc_first_id,
    svc_first_seq,
    svc_before,
    ...rest
  } = row;
  return {
    ...(call ? { appended: appendedRows(svc_appended) } : {}),
    ...splitEvent(rest),
    ...(queueOf ? { queued: svc_queued === true } : {}),
    ...(svc_also_id === null || svc_also_id === undefined
      ? {}
      : { also: { id: Number(svc_also_id), seq: Number(svc_also_seq) } }),
    ...(first && svc_first_id !== null && svc_first_id !== undefined
      ? { first: { answer: svc_before, event: { id: Number(svc_first_id), seq: Number(svc_first_seq) } } }
      : {}),
  };
}

/** `updateRunWithEvent`'s statement: its text, its parameters, the session events' call. */
function statementOf(
  id: string,
  patch: Parameters<RunWrites['updateRun']>[1],
  now: number,
  event: RunEventWrite,
  handed: boolean,
  queueOf?: string,
  alongside?: { write: GatedInsert; event: RunEventWrite },
  after?: FollowingCall,
  first?: FirstWrite,
): { text: string; values: unknown[]; call: ReturnType<FollowingCall> | undefined } {
  const columns = runPatchColumns(patch, now);
  // `first`'s parameters first, then the UPDATE's, the run's event's, the queue's, the step end's
  // event's, the other domain's event's and write's; the session events' call and the riding
  // insert's after them.
  const values: unknown[] = [...(first?.before.values ?? [])];
  for (const [, value] of columns) values.push(value);
  values.push(id, event.type, event.payload, event.created_at);
  if (queueOf) values.push(queueOf);
  if (first) values.push(first.event.type, first.event.payload, first.event.created_at);
  if (alongside)
    values.push(
      alongside.event.type,
      alongside.event.payload,
      alongside.event.created_at,
      ...alongside.write.values,
    );
  const call = after?.(values.length + 1);
  const shape: Shape = {
    columns,
    handed,
    queued: queueOf !== undefined,
    own: values.length,
    call,
    first,
    alongside,
  };
  const text = finishTexts.text(shape);
  if (call) values.push(...call.values);
  if (first?.riding) values.push(...first.riding.values);
  return { text, values, call };
}

/** What `updateRunWithEvent`'s text depends on: never a parameter's value. */
interface Shape {
  columns: readonly (readonly [string, unknown])[];
  handed: boolean;
  queued: boolean;
  /** The statement's own parameters (the session events' call's and the riding insert's after them). */
  own: number;
  call: ReturnType<FollowingCall> | undefined;
  first: FirstWrite | undefined;
  alongside: { write: GatedInsert } | undefined;
}

/**
 * The finish's texts made so far, per shape (p-pgappend): a lone compat request's finish is ≈ 5.6
 * KB of text, ≈ 0.07 ms of svc's CPU to build and its hash for its prepared name every request
 * before; a shape's text is now made once and the same string sent again (its name's hash kept).
 */
const finishTexts = new TextsByShape(64, shapeKey, textOf);

/** How many `updateRunWithEvent` texts this process has made (built, not found by shape): for tests and benches. */
export function finishTextsBuilt(): number {
  return finishTexts.made;
}

/**
 * `shape`'s key, or undefined when a part has no shape of its own (a preceding write without
 * `shape`): its text is then made every time. The UPDATE's columns, the parts' SQL functions
 * (`shapeIdOf`), the session events' call's text (its parameters' numbers) and the offsets.
 */
function shapeKey({ columns, handed, queued, own, call, first, alongside }: Shape): string | undefined {
  let key = `${own} ${handed ? 'h' : '-'}${queued ? 'q' : '-'}`;
  for (const [column] of columns) key += ` ${column}`;
  if (first) {
    if (first.before.shape === undefined) return undefined;
    key += ` | ${first.before.values.length} ${first.before.shape} ${first.riding ? shapeIdOf(first.riding.sql) : '-'}`;
  }
  if (alongside) key += ` | ${shapeIdOf(alongside.write.cte)}`;
  if (call) key += ` | ${call.values.length} ${call.text}`;
  return key;
}

/** `updateRunWithEvent`'s text for `shape`. */
function textOf({ columns, handed, queued, own, call, first, alongside }: Shape): string {
  // `first`'s parameters come first ($1…$b): its `WITH`s number their own.
  const b = first?.before.values.length ?? 0;
  const update = updateText(columns, b);
  const n = b + columns.length + 1;
  // The claim lock and queue read gate the UPDATE (an InitPlan): before the row's lock, as a claim.
  const q = queued ? `q AS MATERIALIZED (SELECT svc_session_has_queued($${n + 4}) AS queued), ` : '';
  const queuedGate = q ? '(SELECT queued FROM q) IS NOT NULL' : '';
  const [gate, answer] = q ? [` AND ${queuedGate}`, ', (SELECT queued FROM q) AS svc_queued'] : ['', ''];
  // The step end's event's parameters after the queue's; its gate `g` holds the queue's too.
  const f = n + 3 + (queued ? 1 : 0);
  const go = '(SELECT go FROM g)';
  const firstSql = first
    ? {
        with: `g AS (SELECT (${first.before.ready}) AND EXISTS (SELECT 1 FROM agent_runs WHERE id = $${n})${queuedGate ? ` AND ${queuedGate}` : ''} AS go),
       ${first.before.ctes(go)}, `,
        gate: ` AND ${go} AND (SELECT count(*) FROM ${first.before.last}) >= 0`,
        // The step end's event, first in the run's list (below).
        event: [f + 1, f + 2, f + 3] as const,
        answer: `, v.first_id AS svc_first_id, v.first_seq AS svc_first_seq, (${first.before.answer(go)}) AS svc_before`,
      }
    : undefined;
  // The other domain's write after the run's row (its lock first), only with it; its event after
  // the run's own (the next seq), only when the write answered a row.
  const at = f + (first ? 3 : 0);
  const also = alongside
    ? {
        with: `, ${alongside.write.cte(at + 3, 'EXISTS (SELECT 1 FROM r)')}`,
        // Its event last in the run's list (below), only when the write answered a row.
        event: [at + 1, at + 2, at + 3] as const,
        answer: ', v.also_id AS svc_also_id, v.also_seq AS svc_also_seq',
      }
    : undefined;
  // The session events last (p-finishjoin: a finish's `run.finished` and idle state), only with
  // the run's event: their lock after every other (run row, the other domain's row).
  const following = call
    ? `, (SELECT ${appendedJson} FROM ${call.text} e WHERE v.own_id IS NOT NULL) AS svc_appended`
    : '';
  // The step end's model call, unconditional (`TrailingInsert`): its own `WITH`, its parameters last.
  const riding = first?.riding;
  const ridingAt = own + (call?.values.length ?? 0);
  const ridingWith = riding ? `svc_riding AS (${riding.sql(ridingAt)}), ` : '';
  // The run's events in one set-based append after its UPDATE (p-pgserver; this statement's own
  // INSERT since p-lastseq, below): the step
  // end's (`first`), the run's own, then `alongside`'s when its write answered a row; consecutive
  // seqs in that order, as the appends one after another gave them. Handed over (p-pglone), the
  // step end's held events first, from their `WITH`: the seqs its own list call before gave them.
  const listed = [...(firstSql ? [firstSql.event] : []), [n + 1, n + 2, n + 3] as const];
  const heldColumns = ['types', 'payloads', 'created_ats'] as const;
  const listOf = (k: 0 | 1 | 2, type: string) => {
    const always = `ARRAY[${listed.map((e) => `$${e[k]}::${type}`).join(', ')}]`;
    const own = also
      ? `${always} || CASE WHEN EXISTS (SELECT 1 FROM alongside) THEN ARRAY[$${also.event[k]}::${type}] ELSE '{}'::${type}[] END`
      : always;
    return handed
      ? `coalesce((SELECT h.${heldColumns[k]} FROM ${FOLLOWING_EVENTS} h), '{}'::${type}[]) || ${own}`
      : own;
  };
  // Places after the handed events (`k.held`: their count).
  const past = handed ? 'k.held + ' : '';
  const ownOrd = first ? 2 : 1;
  const pick = (ord: number, name: string) =>
    `max(x.event_id) FILTER (WHERE x.ord = ${past}${ord}) AS ${name}_id, max(x.event_seq) FILTER (WHERE x.ord = ${past}${ord}) AS ${name}_seq`;
  const picks = [
    ...(handed
      ? [
          `json_agg(json_build_object('id', x.event_id, 'seq', x.event_seq, 'session_id', r.session_id) ORDER BY x.ord) FILTER (WHERE x.ord <= k.held) AS ${HANDED_COLUMN}`,
        ]
      : []),
    ...(first ? [pick(1, 'first')] : []),
    pick(ownOrd, 'own'),
    ...(also ? [pick(ownOrd + 1, 'also')] : []),
  ];
  const held = handed
    ? `, (SELECT coalesce((SELECT cardinality(h.types) FROM ${FOLLOWING_EVENTS} h), 0) AS held) k`
    : '';
  // Inserted here (p-lastseq), not by `svc_append_run_event_list`: the UPDATE holds the run's row
  // lock already; `svc_run_last_seq` (migration 48) reads the run's highest seq once, after it (a
  // snapshot of its own: every append committed before the lock was granted is seen; only with the
  // UPDATE's row); the list inserted in its order with the seqs after it, ids drawn in that order,
  // each answered with its place (1..) as the function answered it. No row updated: nothing read
  // or inserted. What it spares: the function's lock statement and its `RETURN QUERY`.
  const inserted = `,
       ${RUN_BASE} AS MATERIALIZED (SELECT svc_run_last_seq(r.id) AS base FROM r),
       ${RUN_LIST} AS MATERIALIZED (SELECT ${listOf(0, 'text')} AS types, ${listOf(1, 'text')} AS payloads, ${listOf(2, 'bigint')} AS created_ats),
       ${RUN_INSERTED} AS (INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
         SELECT r.id, r.session_id, s.base + b.ord, b.type, b.payload, b.created_at
           FROM r, ${RUN_BASE} s, ${RUN_LIST} l,
                unnest(l.types, l.payloads, l.created_ats) WITH ORDINALITY AS b(type, payload, created_at, ord)
          ORDER BY b.ord
         RETURNING id, seq)`;
  const runEvents = ` CROSS JOIN LATERAL (SELECT ${picks.join(', ')}
         FROM (SELECT i.id AS event_id, i.seq AS event_seq, (i.seq - s.base)::integer AS ord
                 FROM ${RUN_INSERTED} i, ${RUN_BASE} s) x${held}) v`;
  return `WITH ${q}${ridingWith}${firstSql?.with ?? ''}r AS (${update}${gate}${firstSql?.gate ?? ''} RETURNING *)${also?.with ?? ''}${inserted}
     SELECT r.*, v.own_id AS svc_event_id, v.own_seq AS svc_event_seq${answer}${firstSql?.answer ?? ''}${also?.answer ?? ''}${following}
       FROM r${runEvents}`;
}

/** The finish's run events (p-lastseq): the run's highest seq before them, their list, their rows. */
const RUN_BASE = 'svc_run_base';
const RUN_LIST = 'svc_run_list';
const RUN_INSERTED = 'svc_run_list_ins';

/** The UPDATE of a run's patched columns and its parameters. */
export function updateStatement(
  id: string,
  patch: Parameters<RunWrites['updateRun']>[1],
  now: number,
  offset = 0,
): [string, unknown[]] {
  const columns = runPatchColumns(patch, now);
  const params = [...columns.map(([, value]) => value), id];
  return [updateText(columns, offset), params];
}

/** `updateStatement`'s text: the columns' parameters from `$offset+1`, the run's id after them. */
function updateText(columns: readonly (readonly [string, unknown])[], offset: number): string {
  const sets = columns.map(([column], i) => `${column} = $${offset + i + 1}`).join(', ');
  return `UPDATE agent_runs SET ${sets} WHERE id = $${offset + columns.length + 1}`;
}
