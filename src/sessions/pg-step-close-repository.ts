/**
 * A step's end on PostgreSQL in one statement (issue 18 item 6, p-pgstep): the step's message
 * updates (the assistant's usage, cost and finish; the tool message's finish) and the session's
 * usage were three statements a tool step, each ≈ 0.12 ms of svc CPU (driver, pg layer, GC), on a
 * round trip they already shared. Here they are data-modifying `WITH`s of one statement: each
 * message updated as `updateMessage` updates it (its search row following new parts), then the
 * session as `addUsage` updates it. The session's UPDATE reads the messages' CTE, so it runs after
 * them: the rows are locked in the order the separate statements locked them (messages, session).
 * `closeStepWrite` (p-pgstep2) hands the same `WITH`s to the run ledger, which writes them first in
 * the statement of the run's row and its `step.finished` (../store/preceding-write.ts): the whole
 * step end in one statement, written only when every message and the run are there.
 * @module
 */
import { SvcError } from '../errors';
import type { SqlClient } from '../store/postgres/client';
import { type FollowingWrite, type PrecedingWrite, shapeIdOf } from '../store/preceding-write';
import type { Clock, Ids } from '../util/ids';
import { keptSessions } from './pg-kept-sessions';
import { MESSAGE_COLUMNS } from './pg-message-store';
import { marked, wroteMessages, wroteSession } from './pg-session-rows';
import { searchDocOf, tsvectorOf } from './search-doc';
import type { Session, SessionRow, StepClose } from './types';

// $1…$10: the messages, one array element each (unnest keeps them aligned); $11 the time. The
// search row follows only messages whose parts changed ($7), as in updateMessage.
const messageCtes = (go: string) => `p AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::double precision[],
                         $6::boolean[], $7::boolean[], $8::text[], $9::text[], $10::text[])
      AS p(id, parts, has_usage, usage, cost, finished, has_doc, tools, body, terms)),
  m AS (UPDATE messages x SET parts = coalesce(p.parts, x.parts),
          usage = CASE WHEN p.has_usage THEN p.usage ELSE x.usage END, cost = coalesce(p.cost, x.cost),
          updated_at = $11, finished_at = CASE WHEN p.finished THEN $11 ELSE x.finished_at END
        FROM p WHERE x.id = p.id AND ${go} RETURNING x.id),
  d AS (UPDATE message_search_docs y SET tools = p.tools, body = p.body, terms = p.terms::tsvector
        FROM p WHERE p.has_doc AND y.message_id = p.id AND p.id IN (SELECT id FROM m))`;

/**
 * The step's message patches and their `WITH`s (`p`, `m`, `d`) first, with a comma after; none for a
 * step end with no message to patch (`lean`, p-pgnopatch: every lone compat request's finish), its
 * other parameters numbered 10 lower after (`leanText`).
 */
const patches = (go: string, lean: boolean) => (lean ? '' : `${messageCtes(go)},\n  `);
/** ` AND` the message updates done first (their locks first); nothing without them. */
const afterM = (lean: boolean) => (lean ? '' : ' AND (SELECT count(*) FROM m) >= 0');

// $12…$16 the usage (applied when `where` holds) and the session.
const sessionCte = (
  where: string,
) => `s AS (UPDATE sessions SET prompt_tokens = prompt_tokens + $13, completion_tokens = completion_tokens + $14,
          cost = cost + $15, updated_at = $11
        WHERE ${where} RETURNING *)`;

// The step's messages updated, then the session's usage added ($12) to its row. Every write
// obeys `go` (true alone; `closeStepWrite`'s gate).
const stepCtes = (lean: boolean) => (go: string) =>
  `${patches(go, lean)}${sessionCte(`$12 AND id = $16 AND ${go}${afterM(lean)}`)}`;

/**
 * `stepCtes` with a new message inserted finished after the updates (`StepClose.created`,
 * p-pgtoolend: the step's held tool result) and its following write (its `tool.finished`) after
 * the session's row: $17…$23 the message (id, role, parts, run id, search tools, body, terms), the
 * following write's from $24. The session's row is updated whatever the usage (its `updated_at`,
 * as the message's own append did). The following `WITH` is the last: the run's row and its step
 * end come after it (the event's seq before the step end's), the locks in the step end's order
 * (messages, session row, run row).
 */
const createdCtes = (following: FollowingWrite, lean: boolean) => (go: string) => {
  const after = following.sql(23, `${go} AND EXISTS (SELECT 1 FROM n) AND (SELECT count(*) FROM s) >= 0`);
  return `${patches(go, lean)}n AS (INSERT INTO messages (${MESSAGE_COLUMNS})
          SELECT $17, x.id, $18, $19, NULL, NULL, NULL, 0::double precision, $20, $11::bigint, $11::bigint, $11::bigint
            FROM sessions x WHERE x.id = $16 AND ${go}${afterM(lean)}
          RETURNING id, session_id, role, created_at),
  nd AS (INSERT INTO message_search_docs (message_id, session_id, role, tools, created_at, body, terms)
          SELECT n.id, n.session_id, n.role, $21, n.created_at, $22, $23::tsvector FROM n),
  ${sessionCte(`($12 OR true) AND id = $16 AND ${go} AND (SELECT count(*) FROM n) >= 0`)},
  ${after.cte}`;
};

/** The opened message's INSERT (`a`) and its search row, its 11 parameters after `o`. */
const openedInsert = (o: number, go: string) => `a AS (INSERT INTO messages (${MESSAGE_COLUMNS})
          SELECT $${o + 1}, x.id, 'assistant', $${o + 2}, $${o + 3}, $${o + 4}, $${o + 5}, $${o + 6}::double precision, $${o + 7}, $${o + 8}::bigint, $11::bigint, $11::bigint
            FROM sessions x WHERE x.id = $16 AND ${go}
          RETURNING id, session_id, role, created_at),
  ad AS (INSERT INTO message_search_docs (message_id, session_id, role, tools, created_at, body, terms)
          SELECT a.id, a.session_id, a.role, $${o + 9}, a.created_at, $${o + 10}, $${o + 11}::tsvector FROM a)`;

/**
 * `stepCtes` with the step's assistant message inserted closed first (`StepClose.opened` without
 * `created`, p-heldstep: a text step whose message nothing needed before its end): $17…$27 the
 * message, its following write (the step's `phase`, when one is held) from $28, after the
 * session's row. The session's row is updated whatever the usage (its `updated_at`, as the
 * message's own append did).
 */
const openedOnlyCtes = (opened: FollowingWrite | undefined, lean: boolean) => (go: string) => {
  const start = opened?.sql(27, `${go} AND EXISTS (SELECT 1 FROM a) AND (SELECT count(*) FROM s) >= 0`);
  return `${openedInsert(16, go)},
  ${patches(go, lean)}${sessionCte(`($12 OR true) AND id = $16 AND ${go}${afterM(lean)} AND (SELECT count(*) FROM a) >= 0`)}${start ? `,\n  ${start.cte}` : ''}`;
};

/** `answerOf` with the opened message's id and its following write's answer (`openedOnlyCtes`). */
const openedOnlyAnswerOf = (opened: FollowingWrite | undefined, lean: boolean) => (go: string) =>
  stepAnswer(go, lean, openedFields(opened, 27, go));

/**
 * `createdCtes` with the step's assistant message inserted ahead of everything, already closed
 * (`StepClose.opened`, p-heldstep: a step whose only call reads only, nothing of it written before
 * its end): $24+c… its id, parts, model, provider, usage, cost, run id, created_at and search row
 * (c: the created message's following parameters), its following write (the step's `phase`, its
 * call's `tool.started`) after the session's row and before the created message's, from
 * $35+c. A data-modifying `WITH` does not see another's rows (one snapshot): the message is
 * inserted closed, not inserted and then updated; the guard (`READY`, the messages of $1) leaves
 * it out. The locks in the step end's order (messages, session row, run row); the run events in
 * the order the separate statements gave them (its start's, then the result's, then the step's).
 */
const openedCtes = (created: FollowingWrite, opened: FollowingWrite, lean: boolean) => (go: string) => {
  const o = 23 + created.values.length;
  const start = opened.sql(o + 11, `${go} AND EXISTS (SELECT 1 FROM a) AND (SELECT count(*) FROM s) >= 0`);
  const after = created.sql(
    23,
    `${go} AND EXISTS (SELECT 1 FROM n) AND (SELECT count(*) FROM ${opened.name}) >= 0`,
  );
  return `${openedInsert(o, go)},
  ${patches(go, lean)}n AS (INSERT INTO messages (${MESSAGE_COLUMNS})
          SELECT $17, x.id, $18, $19, NULL, NULL, NULL, 0::double precision, $20, $11::bigint, $11::bigint, $11::bigint
            FROM sessions x WHERE x.id = $16 AND ${go}${afterM(lean)} AND EXISTS (SELECT 1 FROM a)
          RETURNING id, session_id, role, created_at),
  nd AS (INSERT INTO message_search_docs (message_id, session_id, role, tools, created_at, body, terms)
          SELECT n.id, n.session_id, n.role, $21, n.created_at, $22, $23::tsvector FROM n),
  ${sessionCte(`($12 OR true) AND id = $16 AND ${go} AND (SELECT count(*) FROM n) >= 0`)},
  ${start.cte},
  ${after.cte}`;
};

const CLOSE_STEP = `WITH ${stepCtes(false)('true')}
  SELECT (SELECT array_agg(id) FROM m) AS svc_updated, s.* FROM (SELECT 1) AS one LEFT JOIN s ON true`;

/**
 * `CLOSE_STEP` with no message to patch (p-gatearg, as `closeStepWrite`'s lean shape): a usage-only
 * step end, i.e. a run handed over at a clean stop (issue 19) once its step's usage had arrived
 * (../agent/step-close.ts `closeWith`: its messages are stored unfinished, not patched). Built at
 * its first use (`leanText`'s map is made below).
 */
const closeStepLean = () =>
  (leanCloseStep ??= leanText(`WITH ${stepCtes(true)('true')}
  SELECT NULL::text[] AS svc_updated, s.* FROM (SELECT 1) AS one LEFT JOIN s ON true`));
let leanCloseStep: string | undefined;

// closeStepWrite: every message of $1 exists (read before any write); the answer says whether the
// statement wrote (go), names the messages found and updated, and holds the session row.
const READY =
  'NOT EXISTS (SELECT 1 FROM unnest($1::text[]) AS i(id) WHERE NOT EXISTS (SELECT 1 FROM messages WHERE id = i.id))';
/** The answer of every step end, then `more` (`,\n    'name', value, …`: a created or opened message's). */
const stepAnswer = (go: string, lean: boolean, more = '') => `json_build_object('go', ${go},
    'found', ${lean ? 'NULL' : FOUND}, 'updated', ${lean ? 'NULL' : '(SELECT array_agg(id) FROM m)'}, 'session', (SELECT row_to_json(s) FROM s)${more})`;
const FOUND =
  '(SELECT array_agg(i.id) FROM unnest($1::text[]) AS i(id) WHERE EXISTS (SELECT 1 FROM messages WHERE id = i.id))';
const answerOf = (lean: boolean) => (go: string) => stepAnswer(go, lean);
/** The created message's id and its following write's answer (from $23). */
const createdFields = (following: FollowingWrite, go: string) =>
  `,\n    'created', (SELECT id FROM n), 'following', ${following.sql(23, go).answer}`;
/** The opened message's id and its following write's answer (from $`at`). */
const openedFields = (opened: FollowingWrite | undefined, at: number, go: string) =>
  `,\n    'opened', (SELECT id FROM a), 'opening', ${opened ? opened.sql(at, go).answer : 'NULL'}`;
/** `answerOf` with the created message's id and its following write's answer. */
const createdAnswerOf = (following: FollowingWrite, lean: boolean) => (go: string) =>
  stepAnswer(go, lean, createdFields(following, go));

/** `createdAnswerOf` with the opened message's id and its following write's answer. */
const openedAnswerOf = (created: FollowingWrite, opened: FollowingWrite, lean: boolean) => (go: string) =>
  stepAnswer(go, lean, createdFields(created, go) + openedFields(opened, 34 + created.values.length, go));

type Answer = SessionRow & { svc_updated: string[] | null };

export function createPostgresStepClose(deps: { sql: SqlClient; clock: Clock; ids: Ids }): {
  closeStep: (input: StepClose) => Promise<Session | undefined>;
  closeStepWrite: (input: StepClose) => PrecedingWrite<Session | undefined>;
} {
  const { sql } = deps;
  const kept = keptSessions(sql);
  /** The statement's parameters, and what a write leaves behind (marks, not_found) once it answered. */
  const prepared = ({ sessionId, messages, usage, created, opened }: StepClose) => {
    // The session's row it answers is kept (./pg-kept-sessions.ts): the next step's first
    // statement knows the row it will store, for a call run ahead of it (p-readonly).
    const mark = usage || created || opened ? kept.mark(sessionId) : undefined;
    const docs = messages.map(({ patch }) => (patch.parts ? searchDocOf(patch.parts) : undefined));
    const values: unknown[] = [
      messages.map((m) => m.id),
      messages.map(({ patch }) => (patch.parts ? JSON.stringify(patch.parts) : null)),
      messages.map(({ patch }) => patch.usage !== undefined),
      messages.map(({ patch }) => (patch.usage ? JSON.stringify(patch.usage) : null)),
      messages.map(({ patch }) => patch.cost ?? null),
      messages.map(({ patch }) => patch.finished === true),
      docs.map((doc) => doc !== undefined),
      docs.map((doc) => doc?.tools ?? ''),
      docs.map((doc) => doc?.body ?? ''),
      docs.map((doc) => (doc ? tsvectorOf(doc.body) : '')),
      deps.clock.now(),
      usage !== undefined,
      usage?.input_tokens ?? 0,
      usage?.output_tokens ?? 0,
      usage?.cost ?? 0,
      sessionId,
    ];
    if (created) {
      const doc = searchDocOf(created.parts);
      created.id = deps.ids.next('msg');
      values.push(
        created.id,
        created.role,
        JSON.stringify(created.parts),
        created.runId,
        doc.tools,
        doc.body,
        tsvectorOf(doc.body),
        ...created.following.values,
      );
    }
    if (opened) {
      const doc = searchDocOf(opened.parts);
      opened.id ??= deps.ids.next('msg');
      values.push(
        opened.id,
        JSON.stringify(opened.parts),
        opened.model,
        opened.provider,
        opened.usage ? JSON.stringify(opened.usage) : null,
        opened.cost,
        opened.runId,
        opened.createdAt,
        doc.tools,
        doc.body,
        tsvectorOf(doc.body),
        ...(opened.following?.values ?? []),
      );
    }
    const wrote = (updated: string[] | null, row: SessionRow | null | undefined): Session | undefined => {
      if (messages.length || created || opened) wroteMessages(sessionId);
      if (usage || created || opened) wroteSession(sql, sessionId);
      if (mark && row && row.id !== null) kept.wrote(mark, row);
      const done = new Set(updated ?? []);
      // As the separate updateMessage calls: the others' writes stand (a transaction around rolls
      // them back with this error).
      const missing = messages.find((m) => !done.has(m.id));
      if (missing) throw notFound(missing.id);
      if (!usage || !row || row.id === null) return undefined;
      return { ...row, metadata: JSON.parse(row.metadata) };
    };
    return { values, wrote };
  };
  return {
    async closeStep(input) {
      const { values, wrote } = prepared(input);
      // No message to patch: the text without the patches' `WITH`s and their 10 empty arrays.
      const lean = input.messages.length === 0;
      const answer = await marked(sql, input.sessionId, sql.transactionNow(), () =>
        lean
          ? sql.one<Answer>(closeStepLean(), values.slice(PATCH_PARAMS))
          : sql.one<Answer>(CLOSE_STEP, values),
      );
      const { svc_updated, ...row } = answer ?? { svc_updated: null };
      return wrote(svc_updated, row as SessionRow);
    },
    closeStepWrite(input) {
      const { values: all, wrote } = prepared(input);
      const { created, opened } = input;
      // No message to patch (every lone compat request's finish): a text without the patches'
      // `WITH`s, their 10 empty arrays not sent (p-pgnopatch).
      const lean = input.messages.length === 0;
      const values = lean ? all.slice(PATCH_PARAMS) : all;
      // An opened message's run events, its last `WITH`, handed to the run statement's own list
      // while it builds its text (p-pglone: the run's finish); with a created message too, never.
      const last = !created ? opened?.following : undefined;
      return {
        values,
        ...stepShape(created?.following, opened && { following: opened.following }, lean),
        ...(last?.handingOver ? { handingOver: last.handingOver } : {}),
        read(value) {
          const answer = value as StepAnswer;
          // The opened message's run events, then the created one's, before the step end's own.
          if (opened && answer.opened === opened.id) opened.following?.read(answer.opening);
          // The created message's run event, announced before the step end's own.
          if (created && answer.created === created.id) created.following.read(answer.following);
          // Not ready: nothing written; name a message that is missing, as updateMessage would.
          const found = new Set(answer.found ?? []);
          const missing = input.messages.find((m) => !found.has(m.id));
          if (missing) throw notFound(missing.id);
          // Its messages there, nothing written: the run is missing (the ledger says so).
          if (!answer.go) return undefined;
          return wrote(answer.updated, answer.session);
        },
      };
    },
  };
}

/**
 * The statement's shape: its `WITH`s, the one the run's row follows, its answer; for a created
 * message (the held result), an opened one (the held assistant message) or both. An opened message
 * with a created one always has its following write (its call's start). `lean` (no message to
 * patch, p-pgnopatch): without the patches' `WITH`s and their 10 parameters (`leanShape`).
 */
function stepShape(
  created: FollowingWrite | undefined,
  opened: { following: FollowingWrite | undefined } | undefined,
  lean: boolean,
): Pick<PrecedingWrite<unknown>, 'ready' | 'ctes' | 'last' | 'answer' | 'shape'> {
  const full = fullShape(created, opened, lean);
  return lean ? leanShape(full) : { ready: READY, ...full };
}

function fullShape(
  created: FollowingWrite | undefined,
  opened: { following: FollowingWrite | undefined } | undefined,
  lean: boolean,
): Pick<PrecedingWrite<unknown>, 'ctes' | 'last' | 'answer' | 'shape'> {
  if (created && opened?.following)
    return {
      ctes: openedCtes(created, opened.following, lean),
      last: created.name,
      answer: openedAnswerOf(created, opened.following, lean),
      shape: `co ${followingShape(created)} ${followingShape(opened.following)}`,
    };
  if (created)
    return {
      ctes: createdCtes(created, lean),
      last: created.name,
      answer: createdAnswerOf(created, lean),
      shape: `c ${followingShape(created)}`,
    };
  if (opened)
    return {
      ctes: openedOnlyCtes(opened.following, lean),
      last: opened.following?.name ?? 's',
      answer: openedOnlyAnswerOf(opened.following, lean),
      shape: `o ${opened.following ? followingShape(opened.following) : '-'}`,
    };
  return { ctes: stepCtes(lean), last: 's', answer: answerOf(lean), shape: 's' };
}

/** The patches' parameters ($1…$10: the messages' arrays), absent from a lean step end's. */
const PATCH_PARAMS = 10;

/**
 * A step end with no message to patch (p-pgnopatch): its texts built without the patches' `WITH`s
 * (nothing reads $1…$10 then), every parameter numbered 10 lower (`leanText`), nothing to check
 * before writing (`ready`: no message to find), its own shape.
 */
function leanShape(
  full: Pick<PrecedingWrite<unknown>, 'ctes' | 'last' | 'answer' | 'shape'>,
): Pick<PrecedingWrite<unknown>, 'ready' | 'ctes' | 'last' | 'answer' | 'shape'> {
  return {
    ready: 'true',
    ctes: (go) => leanText(full.ctes(go)),
    last: full.last,
    answer: (go) => leanText(full.answer(go)),
    ...(full.shape === undefined ? {} : { shape: `${full.shape} lean` }),
  };
}

/**
 * `text` (a lean step end's, its parameters numbered as the full one's) with every `$n` n − 10.
 * Kept per text: the run ledger keeps the statement's text per shape (one build a shape), but a
 * step end's other statement (`updateRunWithEventAfter`) builds its text every time.
 */
function leanText(text: string): string {
  const kept = leanTexts.get(text);
  if (kept !== undefined) return kept;
  const lean = text.replace(/\$(\d+)/g, (_, digits: string) => {
    const n = Number(digits);
    if (n <= PATCH_PARAMS) throw new Error(`a lean step end's text reads the patches' $${n}`);
    return `$${n - PATCH_PARAMS}`;
  });
  if (leanTexts.size >= 64) leanTexts.clear();
  leanTexts.set(text, lean);
  return lean;
}
const leanTexts = new Map<string, string>();

/**
 * A following write's part of the step end's shape (`PrecedingWrite.shape`, p-pgappend): its SQL
 * function (its text for an offset and a `go`; handed over, the one that function's write swaps
 * in), its parameter count (the offsets after it) and its name.
 */
const followingShape = (write: FollowingWrite) =>
  `${shapeIdOf(write.sql)}:${write.values.length}:${write.name}`;

const notFound = (id: string) => new SvcError('not_found', `message_id: no message "${id}"`);

/** `answerOf`'s value as the driver parses it (json). */
interface StepAnswer {
  go: boolean;
  found: string[] | null;
  updated: string[] | null;
  session: SessionRow | null;
  created?: string | null;
  following?: unknown;
  opened?: string | null;
  opening?: unknown;
}
