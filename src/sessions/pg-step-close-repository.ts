/**
 * A step's end on PostgreSQL in one statement (issue 18 item 6, p-pgstep): the step's message
 * updates (the assistant's usage, cost and finish; the tool message's finish) and the session's
 * usage were three statements a tool step, each ≈ 0.12 ms of svc CPU (driver, pg layer, GC), on a
 * round trip they already shared. Here they are data-modifying `WITH`s of one statement: each
 * message updated as `updateMessage` updates it (its search row following new parts), then the
 * session as `addUsage` updates it. The session's UPDATE reads the messages' CTE, so it runs after
 * them: the rows are locked in the order the separate statements locked them (messages, session).
 * @module
 */
import { SvcError } from '../errors';
import type { SqlClient } from '../store/postgres/client';
import type { Clock } from '../util/ids';
import { wroteMessages, wroteSession } from './pg-session-rows';
import { searchDocOf, tsvectorOf } from './search-doc';
import type { Session, SessionRow, StepClose } from './types';

// $1…$10: the messages, one array element each (unnest keeps them aligned); $11 the time;
// $12…$16 the usage (applied when $12). The search row follows only messages whose parts changed
// ($7), as in updateMessage.
const CLOSE_STEP = `WITH p AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::double precision[],
                         $6::boolean[], $7::boolean[], $8::text[], $9::text[], $10::text[])
      AS p(id, parts, has_usage, usage, cost, finished, has_doc, tools, body, terms)),
  m AS (UPDATE messages x SET parts = coalesce(p.parts, x.parts),
          usage = CASE WHEN p.has_usage THEN p.usage ELSE x.usage END, cost = coalesce(p.cost, x.cost),
          updated_at = $11, finished_at = CASE WHEN p.finished THEN $11 ELSE x.finished_at END
        FROM p WHERE x.id = p.id RETURNING x.id),
  d AS (UPDATE message_search_docs y SET tools = p.tools, body = p.body, terms = p.terms::tsvector
        FROM p WHERE p.has_doc AND y.message_id = p.id AND p.id IN (SELECT id FROM m)),
  s AS (UPDATE sessions SET prompt_tokens = prompt_tokens + $13, completion_tokens = completion_tokens + $14,
          cost = cost + $15, updated_at = $11
        WHERE $12 AND id = $16 AND (SELECT count(*) FROM m) >= 0 RETURNING *)
  SELECT (SELECT array_agg(id) FROM m) AS svc_updated, s.* FROM (SELECT 1) AS one LEFT JOIN s ON true`;

type Answer = SessionRow & { svc_updated: string[] | null };

export function createPostgresStepClose(deps: {
  sql: SqlClient;
  clock: Clock;
}): (input: StepClose) => Promise<Session | undefined> {
  const { sql } = deps;
  return async ({ sessionId, messages, usage }) => {
    const docs = messages.map(({ patch }) => (patch.parts ? searchDocOf(patch.parts) : undefined));
    const answer = await sql.one<Answer>(CLOSE_STEP, [
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
    ]);
    if (messages.length) wroteMessages(sessionId);
    if (usage) wroteSession(sql, sessionId);
    const updated = new Set(answer?.svc_updated ?? []);
    // As the separate updateMessage calls: the others' writes stand (a transaction around rolls
    // them back with this error).
    const missing = messages.find((m) => !updated.has(m.id));
    if (missing) throw new SvcError('not_found', `message_id: no message "${missing.id}"`);
    if (!usage || !answer || answer.id === null) return undefined;
    const { svc_updated: _, ...row } = answer;
    return { ...row, metadata: JSON.parse(row.metadata) };
  };
}
