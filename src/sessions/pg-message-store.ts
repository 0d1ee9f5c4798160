/**
 * The messages of sessions on PostgreSQL (issue 18): the async twin of ./message-store.ts, with
 * the search index row (./search-doc.ts) written in the same statement as the message. A run's
 * prompt is appended with the session's history read in the same statement
 * (`appendWithMessages`, issue 18 item 6): a run reads both at its start, one round trip each.
 * @module
 */
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { AppendedEvent } from '../events/event-store';
import { appendCall } from '../events/pg-event-store';
import type { SqlClient } from '../store/postgres/client';
import type { FollowingWrite } from '../store/preceding-write';
import { remember } from '../store/read-scope';
import type { Clock, Ids } from '../util/ids';
import type { AsyncOf } from './async-of';
import { appendedMessage, messagePage, newMessageRow, toMessage } from './message-store';
import { keptSessions } from './pg-kept-sessions';
import { marked, messagesVersion, wroteMessages, wroteSession } from './pg-session-rows';
import { searchDocOf, tsvectorOf } from './search-doc';
import { sessionRowKey } from './session-row-version';
import type { MessageRow, SessionEventWrite, SessionRow, SessionStore } from './types';

export type PostgresMessageStore = AsyncOf<
  Pick<
    SessionStore,
    'appendMessage' | 'updateMessage' | 'getMessage' | 'messages' | 'deleteMessage' | 'messageCount'
  >
> &
  Required<Pick<SessionStore, 'appendWithMessages' | 'messagesVersion'>> &
  Partial<Pick<SessionStore, 'appendAnnounced'>>;

type AppendInput = Parameters<SessionStore['appendMessage']>[0];

/** The message columns (row_seq, PostgreSQL's stand-in for SQLite's rowid, is left out). */
export const MESSAGE_COLUMNS =
  'id, session_id, role, parts, model, provider, usage, cost, run_id, created_at, updated_at, finished_at';

/**
 * The statement of an append: the session's updated_at, the message, its search row (none of
 * them when the session does not exist); the session's row as written comes back. `withMessages`:
 * with it (`svc_messages`) the session's messages as the statement's snapshot holds them (the new
 * one not among them: a data-modifying WITH's rows are seen only through its RETURNING), in the
 * order `messages()` reads them.
 */
function appendSql(withMessages: boolean): string {
  const history = withMessages
    ? `, (SELECT coalesce(json_agg(h ORDER BY h.created_at, h.row_seq), '[]'::json) FROM messages h
          WHERE h.session_id = s.id) AS svc_messages`
    : '';
  return `WITH s AS (UPDATE sessions SET updated_at = $10 WHERE id = $2 RETURNING *),
         m AS (INSERT INTO messages (${MESSAGE_COLUMNS})
                 SELECT $1, s.id, $3, $4, $5, $6, $7, $8::double precision, $9, $10::bigint, $10::bigint, $11::bigint FROM s
                 RETURNING id, session_id, role, created_at),
         d AS (INSERT INTO message_search_docs (message_id, session_id, role, tools, created_at, body, terms)
                 SELECT m.id, m.session_id, m.role, $12, m.created_at, $13, $14::tsvector FROM m)
         SELECT s.*${history} FROM s`;
}
const APPEND = appendSql(false);
const APPEND_WITH_MESSAGES = appendSql(true);

/**
 * The append with its event (`appendAnnounced`): the bus's append function called in the same
 * statement (`call`, ../events/pg-event-store.ts), after the message's INSERT (it reads `m`: the
 * session's row lock, then the event's advisory lock, the order every other writer keeps) and only
 * when the message was written; the event's id and previous id come back as `svc_event`.
 */
const appendAnnouncedSql = (call: string, many: boolean) =>
  `${APPEND.slice(0, APPEND.lastIndexOf('SELECT s.*'))}, e AS (SELECT event_id, previous_id FROM ${call} WHERE EXISTS (SELECT 1 FROM m))
         SELECT s.*, ${
           many
             ? `(SELECT json_agg(json_build_object('id', e.event_id, 'previous', e.previous_id) ORDER BY e.event_id) FROM e) AS svc_events`
             : `(SELECT json_build_object('id', e.event_id, 'previous', e.previous_id) FROM e) AS svc_event`
         } FROM s`;
/**
 * The statements of one event and of several (one parameter numbering: the events' parameters
 * follow the append's 14).
 */
let announcedSql: string | undefined;
let announcedManySql: string | undefined;

const NONE: readonly SessionEventWrite[] = [];

/** The gate of what follows the message in its statement: the message was written. */
const WRITTEN = 'EXISTS (SELECT 1 FROM m)';

/**
 * The append (announced when `call` is given) with another domain's write after it
 * (`FollowingWrite`, p-pgstep6: the step's `phase` run event; p-pgstep7: a tool's `tool.finished`):
 * after the message's INSERT (the session's row lock, then the run's row), before the events'
 * append (the session's event lock, after the following `WITH`'s locks: the order of the step
 * end's statement); its answer comes back as `svc_following`, the events' ids in their order as
 * `svc_events`. Its parameters follow the append's and the call's. The text is made once per
 * shape (`followedTexts`): it depends only on the following write's SQL, its offset and the call's.
 */
function followedSql(
  call: { text: string; values: unknown[] } | undefined,
  following: FollowingWrite,
): string {
  const offset = 14 + (call?.values.length ?? 0);
  let texts = followedTexts.get(following.sql);
  if (!texts) {
    texts = new Map();
    followedTexts.set(following.sql, texts);
  }
  const key = call ? `${offset} ${call.text}` : `${offset}`;
  let text = texts.get(key);
  if (text === undefined) {
    text = followedText(call?.text, offset, following);
    if (texts.size >= FOLLOWED_TEXTS_KEPT) texts.clear();
    texts.set(key, text);
  }
  return text;
}
/** `followedSql`'s texts per following write's SQL function, then per offset and call text. */
const followedTexts = new WeakMap<FollowingWrite['sql'], Map<string, string>>();
const FOLLOWED_TEXTS_KEPT = 16;

function followedText(call: string | undefined, offset: number, following: FollowingWrite): string {
  const { cte, answer: followed } = following.sql(offset, WRITTEN);
  const head = `${APPEND.slice(0, APPEND.lastIndexOf('SELECT s.*'))}, ${cte}`;
  const answer = `${followed} AS svc_following`;
  if (!call) return `${head} SELECT s.*, ${answer} FROM s`;
  return `${head}, e AS (SELECT event_id, previous_id FROM ${call}
           WHERE ${WRITTEN} AND (SELECT count(*) FROM ${following.name}) >= 0)
         SELECT s.*, (SELECT json_agg(json_build_object('id', e.event_id, 'previous', e.previous_id) ORDER BY e.event_id) FROM e) AS svc_events,
                ${answer} FROM s`;
}

/** A message row of `json_agg` (bigints as JSON numbers, text as strings), in `MESSAGE_COLUMNS` order. */
const rowOf = (r: MessageRow): MessageRow => ({
  id: r.id,
  session_id: r.session_id,
  role: r.role,
  parts: r.parts,
  model: r.model,
  provider: r.provider,
  usage: r.usage,
  cost: r.cost,
  run_id: r.run_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
  finished_at: r.finished_at,
});

/** An append's event: its type and its payload, made from the new message's id. */
interface Announce {
  type: string;
  payload: (messageId: string) => Record<string, unknown>;
}

type EventIds = { id: number; previous: number };
type Appended = SessionRow & {
  svc_messages?: MessageRow[];
  svc_event?: EventIds | null;
  svc_events?: EventIds[] | null;
  svc_following?: unknown;
};

/**
 * The session events a statement appends: one (`EventBus.join`, the message's own) or several
 * (`joinAll`: preceding events, then the message's), as one call of the statement.
 */
interface Joined {
  readonly count: number;
  call(first: number): { text: string; values: unknown[] };
  settle(appended: readonly AppendedEvent[] | undefined): void;
}

/**
 * The events joined now (an append's preceding events, then the message's own: appended in this
 * order), or undefined (the bus cannot keep their order: published so after the statement).
 */
function joinEvents(
  bus: EventBus | undefined,
  sessionId: string,
  events: readonly SessionEventWrite[],
): Joined | undefined {
  if (events.length > 1) {
    const all = bus?.joinAll?.(sessionId, events);
    return all && { count: events.length, call: all.call, settle: all.settle };
  }
  const [{ type, payload }] = events as [SessionEventWrite];
  const one = bus?.join?.(sessionId, type, payload);
  if (!one) return undefined;
  const text = { sessionId, type, payload: JSON.stringify(payload), createdAt: one.createdAt };
  return {
    count: 1,
    call: (first) => appendCall(first, text),
    settle: (appended) => one.settle(appended?.[0]),
  };
}

/**
 * The events of an append outside a transaction: joined to its statement (`joinEvents`), else,
 * when they must keep their place (`ordered`: a stop's release), reserved in the bus's queue now
 * (`EventBus.reserve`), appended by it once the statement answered; neither: published after it.
 */
function joinOrReserve(
  bus: EventBus | undefined,
  sessionId: string,
  events: readonly SessionEventWrite[],
  ordered: boolean,
): { joined?: Joined; reserved?: { settle(written: boolean): void } } {
  const joined = joinEvents(bus, sessionId, events);
  if (joined || !ordered) return { joined };
  return { reserved: bus?.reserve?.(sessionId, events) };
}

/**
 * The statement's answer; the joined events settled with it (their ids, or nothing written), the
 * reserved ones told whether it wrote the message.
 */
async function answered(
  { joined, reserved }: ReturnType<typeof joinOrReserve>,
  send: () => Promise<Appended | undefined>,
): Promise<Appended | undefined> {
  if (!joined && !reserved) return await send();
  let found: Appended | undefined;
  try {
    found = await send();
  } finally {
    reserved?.settle(found !== undefined);
    const ids = found?.svc_events ?? (found?.svc_event ? [found.svc_event] : undefined);
    joined?.settle(
      ids?.length === joined.count
        ? ids.map((e) => ({ id: Number(e.id), previous: Number(e.previous) }))
        : undefined,
    );
  }
  return found;
}

/** The append with its events in one statement (`appendAnnouncedSql`), and the following write. */
function sendAnnounced(
  sql: SqlClient,
  values: unknown[],
  joined: Joined,
  following: FollowingWrite | undefined,
): Promise<Appended | undefined> {
  const call = joined.call(values.length + 1);
  if (following)
    return sql.one<Appended>(followedSql(call, following), [...values, ...call.values, ...following.values]);
  if (joined.count > 1) {
    announcedManySql ??= appendAnnouncedSql(call.text, true);
    return sql.one<Appended>(announcedManySql, [...values, ...call.values]);
  }
  announcedSql ??= appendAnnouncedSql(call.text, false);
  return sql.one<Appended>(announcedSql, [...values, ...call.values]);
}

/** The append alone, or with the following write (`followedSql`). */
function sendPlain(
  sql: SqlClient,
  values: unknown[],
  withMessages: boolean,
  following: FollowingWrite | undefined,
): Promise<Appended | undefined> {
  if (following)
    return sql.one<Appended>(followedSql(undefined, following), [...values, ...following.values]);
  return sql.one<Appended>(withMessages ? APPEND_WITH_MESSAGES : APPEND, values);
}

/** The row a message append will answer (it sets only `updated_at`): a call run ahead of it reads it. */
const touchedAt =
  (now: number) =>
  <T extends { updated_at: number }>(session: T): T => ({ ...session, updated_at: now });

export function createPostgresMessageStore(deps: {
  sql: SqlClient;
  clock: Clock;
  ids: Ids;
  /** Throws not_found when the session does not exist. */
  requireSession: (id: string) => Promise<unknown>;
  /** The bus `appendAnnounced` publishes on (none: no `appendAnnounced`). */
  bus?: EventBus;
}): PostgresMessageStore {
  const { sql } = deps;
  const kept = keptSessions(sql);
  const getMessage = async (id: string) => {
    const row = await sql.one<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE id = $1`, [id]);
    return row ? toMessage(row) : undefined;
  };
  const append = async (
    input: AppendInput,
    withMessages: boolean,
    announce?: Announce,
    following?: FollowingWrite,
    preceding: readonly SessionEventWrite[] = NONE,
    trailing: readonly SessionEventWrite[] = NONE,
    options?: { ordered?: boolean; after?: Promise<unknown>; id?: string },
  ) => {
    const now = deps.clock.now();
    const id = options?.id ?? deps.ids.next('msg');
    const payload = announce?.payload(id);
    const events = announce && payload ? [...preceding, { type: announce.type, payload }, ...trailing] : [];
    const partsJson = JSON.stringify(input.parts);
    const doc = searchDocOf(input.parts);
    const row = newMessageRow(input, id, partsJson, now);
    // The transaction the statement is part of: the session's copy below stays at its COMMIT.
    const tx = sql.transactionNow();
    const values = [
      ...[id, row.session_id, row.role, partsJson, row.model, row.provider, row.usage, row.cost, row.run_id],
      ...[now, row.finished_at, doc.tools, doc.body, tsvectorOf(doc.body)],
    ];
    // The event in this statement when the bus can keep its order (outside a transaction only: an
    // event is delivered once its row is committed, and the session's append lock is not held
    // open); joined or reserved last: nothing that could throw before `answered` settles them.
    const around =
      events.length && !withMessages && !sql.inTransaction()
        ? joinOrReserve(deps.bus, input.session_id, events, options?.ordered === true)
        : {};
    const { joined } = around;
    const mark = kept.mark(input.session_id, touchedAt(now));
    const send = () =>
      joined
        ? sendAnnounced(sql, values, joined, following)
        : sendPlain(sql, values, withMessages, following);
    // After another write (`after`): its events took their places above, the statement waits.
    const after = options?.after;
    const found = await marked(sql, input.session_id, tx, () =>
      answered(around, after ? () => after.then(send) : send),
    );
    following?.read(found?.svc_following);
    wroteSession(sql, input.session_id, tx); // its updated_at
    wroteMessages(input.session_id);
    let stored: MessageRow[] | undefined;
    if (found) {
      const { svc_messages, svc_event, svc_events, svc_following, ...session } = found;
      stored = svc_messages;
      // The session's row as written: the read scope's copy (../store/read-scope.ts), and the
      // node's kept row (./pg-kept-sessions.ts: a tool's read of its session in this step).
      remember(sessionRowKey(session.id), session, tx);
      kept.wrote(mark, session);
    } else await deps.requireSession(input.session_id);
    // Not joined (the bus was busy, or this is a transaction) nor reserved: published after, as before.
    if (!joined && !around.reserved)
      for (const event of events) deps.bus?.publish(input.session_id, event.type, event.payload);
    return { message: appendedMessage(input, id, partsJson, now, row.finished_at), row, stored };
  };
  const messages: PostgresMessageStore['messages'] = async (sessionId, options = {}) => {
    const rows = await sql.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE session_id = $1 ORDER BY created_at, row_seq`,
      [sessionId],
    );
    return messagePage(rows.map(toMessage), options);
  };
  return {
    appendMessage: async (input) => (await append(input, false)).message,
    ...(deps.bus
      ? {
          appendAnnounced: async (
            ...[input, type, payload, ...around]: Parameters<NonNullable<SessionStore['appendAnnounced']>>
          ) => (await append(input, false, { type, payload }, ...around)).message,
        }
      : {}),
    messagesVersion,
    async appendWithMessages(input) {
      const { message, row, stored } = await append(input, true);
      // The session vanished between the statement and the check (requireSession found it):
      // nothing was appended; its messages as a read now answers them.
      if (!stored) return { message, messages: await messages(input.session_id) };
      // The new message sorts after every stored one stamped at or before it (its row_seq is the
      // highest any of them can have: taken after the statement's snapshot).
      const rows = stored.map(rowOf);
      const at = rows.findIndex((r) => r.created_at > row.created_at);
      if (at === -1) rows.push(row);
      else rows.splice(at, 0, row);
      return { message, messages: rows.map(toMessage) };
    },
    async updateMessage(id, patch) {
      const now = deps.clock.now();
      const doc = patch.parts ? searchDocOf(patch.parts) : undefined;
      // One statement: fields left out of the patch keep their stored value; the search row
      // follows new parts.
      const row = await sql.one<MessageRow>(
        `WITH m AS (UPDATE messages SET parts = coalesce($1, parts), usage = CASE WHEN $2 THEN $3 ELSE usage END,
             cost = coalesce($4, cost), updated_at = $5, finished_at = CASE WHEN $6 THEN $5 ELSE finished_at END
           WHERE id = $7 RETURNING ${MESSAGE_COLUMNS}),
         d AS (UPDATE message_search_docs SET tools = $9, body = $10, terms = $11::tsvector
           WHERE $8 AND message_id = (SELECT id FROM m))
         SELECT * FROM m`,
        [
          patch.parts ? JSON.stringify(patch.parts) : null,
          patch.usage !== undefined,
          patch.usage ? JSON.stringify(patch.usage) : null,
          patch.cost ?? null,
          now,
          patch.finished === true,
          id,
          doc !== undefined,
          doc?.tools ?? '',
          doc?.body ?? '',
          doc ? tsvectorOf(doc.body) : '',
        ],
      );
      if (!row) throw new SvcError('not_found', `message_id: no message "${id}"`);
      wroteMessages(row.session_id);
      return toMessage(row);
    },
    getMessage,
    messages,
    deleteMessage: (id) => deleteMessage(sql, id),
    messageCount: (sessionId) => messageCount(sql, sessionId),
  };
}

async function deleteMessage(sql: SqlClient, id: string): Promise<void> {
  // The search row goes with it (ON DELETE CASCADE).
  const row = await sql.one<{ session_id: string }>(
    'DELETE FROM messages WHERE id = $1 RETURNING session_id',
    [id],
  );
  if (!row) throw new SvcError('not_found', `message_id: no message "${id}"`);
  wroteMessages(row.session_id);
}

async function messageCount(sql: SqlClient, sessionId: string): Promise<number> {
  const row = await sql.one<{ n: number }>('SELECT count(*) AS n FROM messages WHERE session_id = $1', [
    sessionId,
  ]);
  return row?.n ?? 0;
}
