/**
 * The adaptive orchestration store on PostgreSQL (issue 18): the twin of ./store.ts over
 * `adaptive_sessions`, `adaptive_evaluations` and `adaptive_reviews`, with the same answers (JSON
 * columns parsed, a damaged one read as its empty value; newest first by id; the evaluation ring
 * kept per session). `update` is one transaction that holds a per-session advisory lock from the
 * read to the write, so two nodes never both change the revision they read (a missing row too).
 *
 * Which sessions have a pending reshape proposal is kept in memory while no write to the table is
 * notified (migration 40, ../store/postgres/table-changes.ts): with the layer off, every idle state
 * (once a compat request) asked for the session's row only to find no proposal.
 * @module
 */
import type { SqlClient, SqlExecutor } from '../store/postgres/client';
import { memoByTableChanges, tableChanges } from '../store/postgres/table-changes';
import {
  ADAPTIVE_COLUMNS,
  type AdaptiveStore,
  adaptiveRowValues,
  decodeAdaptiveRow,
  decodeEvaluation,
  type EvaluationRow,
  type RawAdaptiveRow,
  type ReviewRow,
} from './store';

const UPSERT = `INSERT INTO adaptive_sessions (${ADAPTIVE_COLUMNS.join(', ')})
  VALUES (${ADAPTIVE_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})
  ON CONFLICT (session_id) DO UPDATE SET ${ADAPTIVE_COLUMNS.slice(1)
    .map((c) => `${c} = excluded.${c}`)
    .join(', ')}`;

/** The columns a review patch may set (the keys of `updateReview`'s patch). */
const REVIEW_PATCH = new Set([
  'child_session_id',
  'child_run_id',
  'status',
  'findings',
  'created_at',
  'finished_at',
]);

async function getRow(db: SqlExecutor, sessionId: string) {
  const raw = await db.one<RawAdaptiveRow>('SELECT * FROM adaptive_sessions WHERE session_id = $1', [
    sessionId,
  ]);
  return raw ? decodeAdaptiveRow(raw) : undefined;
}

async function addEvaluation(db: SqlExecutor, row: Omit<EvaluationRow, 'id'>, keep: number) {
  const inserted = await db.one<{ id: number }>(
    `INSERT INTO adaptive_evaluations (session_id, event_kind, at, evaluation, previous_fingerprint,
       next_fingerprint, effective_preset, signals, shadow) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     RETURNING id`,
    [
      row.session_id,
      row.event_kind,
      row.at,
      JSON.stringify(row.evaluation),
      row.previous_fingerprint,
      row.next_fingerprint,
      row.effective_preset,
      JSON.stringify(row.signals),
      row.shadow ? JSON.stringify(row.shadow) : null,
    ],
  );
  // The ring: drop what is older than the newest `keep` of the session.
  await db.run(
    `DELETE FROM adaptive_evaluations WHERE session_id = $1 AND id <= coalesce(
       (SELECT id FROM adaptive_evaluations WHERE session_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2), 0)`,
    [row.session_id, keep],
  );
  return inserted!.id;
}

/** Past this many sessions with a proposal the set is not kept (every session may have one). */
const PROPOSALS_KEPT = 10_000;

export function createPostgresAdaptiveStore(deps: { sql: SqlClient }): AdaptiveStore {
  const { sql } = deps;
  const changes = tableChanges(sql);
  const write = <T>(fn: () => Promise<T>) => changes.write('adaptive_sessions', fn);
  const proposals = memoByTableChanges(changes, 'adaptive_sessions', async () => {
    const rows = await sql.query<{ session_id: string }>(
      'SELECT session_id FROM adaptive_sessions WHERE proposal IS NOT NULL LIMIT $1',
      [PROPOSALS_KEPT + 1],
    );
    return rows.length > PROPOSALS_KEPT ? undefined : new Set(rows.map((row) => row.session_id));
  });
  const evaluationRows = async (text: string, params: unknown[]) =>
    (await sql.query(text, params)).map((raw) => decodeEvaluation(raw));
  return {
    get: (sessionId) => getRow(sql, sessionId),
    async put(row) {
      await write(() => sql.run(UPSERT, adaptiveRowValues(row)));
    },
    async mayHaveProposal(sessionId) {
      // Without the LISTEN (or with an own write in flight) nothing is kept: the caller reads the row.
      if (changes.generation('adaptive_sessions') === undefined) return true;
      return (await proposals.get('pending'))?.has(sessionId) ?? true;
    },
    async all() {
      return (
        await sql.query<RawAdaptiveRow>('SELECT * FROM adaptive_sessions ORDER BY session_id COLLATE "C"')
      ).map(decodeAdaptiveRow);
    },
    update: (sessionId, change) =>
      write(() =>
        sql.transaction(async (tx) => {
          await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
            `adaptive_sessions:${sessionId}`,
          ]);
          const next = change(await getRow(tx, sessionId));
          if (!next) return undefined;
          await tx.run(UPSERT, adaptiveRowValues(next.row));
          if (next.evaluation) await addEvaluation(tx, next.evaluation.row, next.evaluation.keep);
          return next.row;
        }),
      ),
    addEvaluation: (row, keep) => sql.transaction((tx) => addEvaluation(tx, row, keep)),
    evaluations: (sessionId, limit) =>
      evaluationRows('SELECT * FROM adaptive_evaluations WHERE session_id = $1 ORDER BY id DESC LIMIT $2', [
        sessionId,
        limit,
      ]),
    scored: (sessionId, limit) =>
      sessionId
        ? evaluationRows(
            'SELECT * FROM adaptive_evaluations WHERE session_id = $1 AND shadow IS NOT NULL ORDER BY id DESC LIMIT $2',
            [sessionId, limit],
          )
        : evaluationRows(
            'SELECT * FROM adaptive_evaluations WHERE shadow IS NOT NULL ORDER BY id DESC LIMIT $1',
            [limit],
          ),
    async counts() {
      const row = await sql.one<{ recorded: number; skipped: number; reshapes: number }>(
        `SELECT
           count(*) FILTER (WHERE event_kind = 'eval_recorded') AS recorded,
           count(*) FILTER (WHERE event_kind = 'eval_skipped') AS skipped,
           count(*) FILTER (WHERE event_kind = 'reshape_applied') AS reshapes
         FROM adaptive_evaluations`,
      );
      return { recorded: row!.recorded, skipped: row!.skipped, reshapes: row!.reshapes };
    },
    async lastEvaluationAt() {
      return (await sql.one<{ at: number | null }>('SELECT max(at) AS at FROM adaptive_evaluations'))!.at;
    },
    async addReview(row) {
      const inserted = await sql.one<{ id: number }>(
        `INSERT INTO adaptive_reviews (session_id, run_id, child_session_id, child_run_id, status, findings,
           created_at, finished_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
        [
          row.session_id,
          row.run_id,
          row.child_session_id,
          row.child_run_id,
          row.status,
          row.findings,
          row.created_at,
          row.finished_at,
        ],
      );
      return inserted!.id;
    },
    async updateReview(id, patch) {
      const sets: string[] = [];
      const params: unknown[] = [];
      for (const [key, value] of Object.entries(patch)) {
        if (!REVIEW_PATCH.has(key)) throw new Error(`adaptive_reviews: no column ${key}`);
        params.push(value);
        sets.push(`${key} = $${params.length}`);
      }
      if (!sets.length) return;
      params.push(id);
      await sql.run(`UPDATE adaptive_reviews SET ${sets.join(', ')} WHERE id = $${params.length}`, params);
    },
    reviews: (sessionId, limit) =>
      sql.query<ReviewRow & Record<string, unknown>>(
        'SELECT * FROM adaptive_reviews WHERE session_id = $1 ORDER BY id DESC LIMIT $2',
        [sessionId, limit],
      ),
    async reviewsOfRuns(runIds) {
      if (!runIds.length) return [];
      return await sql.query<ReviewRow & Record<string, unknown>>(
        'SELECT * FROM adaptive_reviews WHERE run_id = ANY($1::text[]) ORDER BY id',
        [[...runIds]],
      );
    },
    reviewByChildRun: (childRunId) =>
      sql.one<ReviewRow & Record<string, unknown>>(
        'SELECT * FROM adaptive_reviews WHERE child_run_id = $1 ORDER BY id LIMIT 1',
        [childRunId],
      ),
    reviewOutcomes: (sessionId) =>
      sessionId
        ? sql.query<{ status: string; child_run_id: string | null }>(
            'SELECT status, child_run_id FROM adaptive_reviews WHERE session_id = $1 ORDER BY id',
            [sessionId],
          )
        : sql.query<{ status: string; child_run_id: string | null }>(
            'SELECT status, child_run_id FROM adaptive_reviews ORDER BY id',
          ),
  };
}
