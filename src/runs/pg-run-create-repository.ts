/**
 * A new run's INSERT with its first event (seq 1) in one statement: nobody else can append to a
 * run not yet inserted, so its first seq is 1, as `insertEvent` would take it. With `riding`,
 * another domain's insert goes first in the same statement (p-pgcompat): a compat request's new
 * session (src/sessions/pg-session-store.ts `createHeld`) with the session's first run and its
 * `run.queued` event, one statement of the start's transaction instead of two. The run's foreign
 * key on its session is checked at the statement's end, after both inserts. Both or neither: a
 * failing session INSERT fails the run's, as it failed the transaction before.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { type RidingInsert, shapeIdOf, type TrailingInsert } from '../store/preceding-write';
import { TextsByShape } from '../store/texts-by-shape';
import {
  type AppendedRow,
  appendedJson,
  appendedRows,
  type FollowingCall,
  insertRunText,
  insertStatement,
  type NewSessionCall,
  type PgRunRowWithEvent,
  type RunEventWrite,
  splitEvent,
} from './pg-run-write-repository';
import { type RunRowInsert, runInsertValues } from './run-repository';
import type { AgentRun, GatedInsert } from './types';

/** The run's INSERT and its first event (`riding`'s insert first, when given) in one statement. */
export async function insertRunWithEvent(
  sql: SqlClient,
  row: RunRowInsert,
  event: RunEventWrite,
  riding?: RidingInsert,
): Promise<{ run: AgentRun; event: { id: number; seq: number } }> {
  const k = riding?.values.length ?? 0;
  // The run's parameters are numbered after the riding insert's.
  const [text, params] = insertStatement(row, k);
  const n = k + params.length;
  const first = riding ? `riding AS (${riding.text}),\n       ` : '';
  const inserted = await sql.one<PgRunRowWithEvent>(
    `WITH ${first}r AS (${text} RETURNING *),
           e AS (INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
                   SELECT r.id, r.session_id, 1, $${n + 1}, $${n + 2}, $${n + 3} FROM r RETURNING id, seq)
         SELECT r.*, e.id AS svc_event_id, e.seq AS svc_event_seq FROM r, e`,
    [...(riding?.values ?? []), ...params, event.type, event.payload, event.created_at],
  );
  if (!inserted) throw new Error(`agent_runs: no row returned for run ${row.id}`);
  return splitEvent(inserted);
}

/** A run event's write in `insertClaimedRun`: its type and payload (JSON text), seq by position. */
export interface ClaimedRunEventWrite {
  type: string;
  payload: string;
}

/** `insertClaimedRun`'s answer: the run, its events' ids and seqs in order, and `alongside`'s. */
export interface InsertedClaimed {
  run: AgentRun;
  events: { id: number; seq: number }[];
  /** `alongside`'s event: absent, its insert wrote no row (its key was there) and no event. */
  alongside?: { id: number; seq: number };
  /** `after`'s rows (event id, previous id), in order; absent without `after`. */
  appended?: AppendedRow[];
}

/**
 * A new session's first run inserted already claimed (issue 18 item 6, p-pgclaimed), in one
 * statement: `riding` (the session's held INSERT), the run `running` for this owner, its events
 * seq 1.. in `events`' order (run.queued, run.started, the prompt phase) and, with `alongside`,
 * another domain's insert and its event (the next seq) when that insert wrote its row. No claim
 * lock and no check: the session is inserted in this very statement and its id known nowhere
 * else, so no other run can hold it and no other node claim this one. `trailing`: other domains'
 * inserts last, unconditional (p-pgstart2: the run's prompt message and its search row), each told
 * `wrote` once the statement answered. The foreign keys on the run (the events', the alongside
 * row's, the message's) are checked at the statement's end, after every insert. `after`: a call
 * made last, once the run is inserted (p-pgstart4: the bus's append of the start's session
 * events, `EventBus.joinAll`), its rows answered as `appended`.
 */
export async function insertClaimedRun(
  sql: SqlClient,
  row: RunRowInsert,
  events: ClaimedRunEventWrite[],
  now: number,
  riding: RidingInsert,
  alongside?: { write: GatedInsert; type: string; payload: string },
  trailing: readonly TrailingInsert[] = [],
  after?: FollowingCall,
  afterNew?: NewSessionCall,
): Promise<InsertedClaimed> {
  const params = runInsertValues(row);
  const values: unknown[] = [...riding.values, ...params, now];
  for (const event of events) values.push(event.type, event.payload);
  if (alongside) values.push(...alongside.write.values, alongside.type, alongside.payload);
  for (const insert of trailing) values.push(...insert.values);
  // The session's events: inline for the statement's own new session (p-pglone), or the call.
  const go = '(SELECT count(*) FROM r) >= 0';
  const call = afterNew
    ? { inline: afterNew(values.length + 1, go) }
    : after
      ? { call: after(values.length + 1) }
      : undefined;
  const shape: ClaimedShape = {
    riding,
    params: params.length,
    events: events.length,
    alongside,
    trailing,
    call,
  };
  const text = claimedTexts.text(shape);
  if (call?.inline) values.push(...call.inline.values);
  else if (call?.call) values.push(...call.call.values);
  // The whole start in this one statement: the first of its transaction goes without BEGIN
  // (p-pgstart2; nothing before it in the transaction, none needed around it).
  const inserted = await (sql.alone ?? sql).query<
    PgRunRowWithEvent & {
      svc_also_id: number | string | null;
      svc_also_seq: number | string | null;
      svc_appended?: unknown;
    }
  >(text, values);
  const first = inserted[0];
  if (!first || inserted.length !== events.length)
    throw new Error(`agent_runs: no row returned for run ${row.id}`);
  for (const insert of trailing) insert.wrote();
  const { svc_also_id, svc_also_seq, svc_appended, ...rest } = first;
  const { run } = splitEvent(rest);
  return {
    run,
    events: inserted.map((r) => ({ id: Number(r.svc_event_id), seq: Number(r.svc_event_seq) })),
    ...(svc_also_id !== null && svc_also_seq !== null
      ? { alongside: { id: Number(svc_also_id), seq: Number(svc_also_seq) } }
      : {}),
    ...(after ? { appended: appendedRows(svc_appended) } : {}),
  };
}

/** What `insertClaimedRun`'s text depends on: never a parameter's value. */
interface ClaimedShape {
  riding: RidingInsert;
  /** The run's INSERT parameters. */
  params: number;
  events: number;
  alongside: { write: GatedInsert } | undefined;
  trailing: readonly TrailingInsert[];
  call:
    | { inline: ReturnType<NewSessionCall> }
    | { call: ReturnType<FollowingCall>; inline?: undefined }
    | undefined;
}

/**
 * The start's texts made so far, per shape (p-pgappend): a compat request's start is ≈ 2.6 KB of
 * text built, flattened and hashed for its prepared name every request before; now once a shape.
 */
const claimedTexts = new TextsByShape(64, claimedKey, claimedText);

/** How many `insertClaimedRun` texts this process has made (not found by shape): for tests and benches. */
export function claimedTextsBuilt(): number {
  return claimedTexts.made;
}

/**
 * `shape`'s key: the riding insert's text and the session events' texts by their number
 * (`textIdOf`: the same strings every start, see `appendNewEventsCall`), the parts' SQL functions
 * (`shapeIdOf`) and parameter counts.
 */
function claimedKey({ riding, params, events, alongside, trailing, call }: ClaimedShape): string {
  let key = `${textIdOf(riding.text)} ${riding.values.length} ${params} ${events}`;
  key += alongside ? ` a${shapeIdOf(alongside.write.cte)}:${alongside.write.values.length}` : ' -';
  for (const insert of trailing) key += ` t${shapeIdOf(insert.sql)}:${insert.values.length}`;
  if (call?.inline)
    key += ` n${textIdOf(call.inline.ctes)}:${textIdOf(call.inline.rows)}:${call.inline.values.length}`;
  else if (call?.call) key += ` c${textIdOf(call.call.text)}:${call.call.values.length}`;
  return key;
}

/** A number for a text (a Map's look-up: a string made once is hashed once), bounded. */
function textIdOf(text: string): number {
  let id = textIds.get(text);
  if (id === undefined) {
    if (textIds.size >= TEXT_IDS_KEPT) textIds.clear();
    id = ++lastTextId;
    textIds.set(text, id);
  }
  return id;
}
const textIds = new Map<string, number>();
const TEXT_IDS_KEPT = 256;
let lastTextId = 0;

/** `insertClaimedRun`'s text for `shape`. */
function claimedText({ riding, params, events, alongside, trailing, call }: ClaimedShape): string {
  const k = riding.values.length;
  const text = insertRunText(k);
  let n = k + params;
  const at = ++n;
  const rows: string[] = [];
  for (let i = 0; i < events; i++) {
    n += 2;
    rows.push(`(${i + 1}, $${n - 1}::text, $${n}::text)`);
  }
  let also = '';
  let answer = 'NULL::bigint AS svc_also_id, NULL::bigint AS svc_also_seq';
  let from = '';
  if (alongside) {
    also = `,
           ${alongside.write.cte(n, 'EXISTS (SELECT 1 FROM r)')},
           b AS (INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
                   SELECT r.id, r.session_id, ${events + 1}, $${n + alongside.write.values.length + 1}, $${n + alongside.write.values.length + 2}, $${at}
                     FROM r WHERE EXISTS (SELECT 1 FROM alongside) RETURNING id, seq)`;
    n += alongside.write.values.length + 2;
    answer = 'b.id AS svc_also_id, b.seq AS svc_also_seq';
    from = ' LEFT JOIN b ON true';
  }
  // Other domains' inserts after the run's (p-pgstart2: its prompt message and search row),
  // unconditional: written whenever the statement is.
  for (const [i, insert] of trailing.entries()) {
    also += `,
           t${i} AS (${insert.sql(n)})`;
    n += insert.values.length;
  }
  let appendedColumn = '';
  if (call?.inline) {
    // The session is this statement's (`riding`): its events inserted inline, no lock, no call (p-pglone).
    also += `,
           ${call.inline.ctes},
           svc_e AS (SELECT event_id, previous_id FROM ${call.inline.rows} x)`;
    appendedColumn = `, (SELECT ${appendedJson} FROM svc_e e) AS svc_appended`;
  } else if (call?.call) {
    also += `,
           svc_e AS (SELECT event_id, previous_id FROM ${call.call.text} WHERE (SELECT count(*) FROM r) >= 0)`;
    appendedColumn = `, (SELECT ${appendedJson} FROM svc_e e) AS svc_appended`;
  }
  return `WITH riding AS (${riding.text}),
           r AS (${text} RETURNING *),
           e AS (INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)
                   SELECT r.id, r.session_id, v.seq, v.type, v.payload, $${at}
                     FROM r, (VALUES ${rows.join(', ')}) v(seq, type, payload) ORDER BY v.seq
                   RETURNING id, seq)${also}
     SELECT r.*, e.id AS svc_event_id, e.seq AS svc_event_seq, ${answer}${appendedColumn}
       FROM r CROSS JOIN e${from} ORDER BY e.seq`;
}
