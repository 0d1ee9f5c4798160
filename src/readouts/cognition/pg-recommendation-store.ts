/**
 * `recommendations` on PostgreSQL (issue 18): the twin of ./recommendation-store.ts's SQLite
 * repository, the same answers: evidence as a JSON object, pending oldest first, the window newest
 * first (ties by id, bytewise), a close only of a pending recommendation (its evidence merged, in
 * one transaction with the row locked), expiry by each row's own window. The pending rows are kept
 * in memory while no write to the table is notified (../../store/postgres/table-changes.ts), as
 * SQLite keeps them by data_version: the recorder asks at each session's creation and each run's
 * start.
 * @module
 */
import type { SqlClient } from '../../store/postgres/client';
import { memoByTableChanges, tableChanges } from '../../store/postgres/table-changes';
import type { Clock, Ids } from '../../util/ids';
import {
  matchesPending,
  payloadDigest,
  type Recommendation,
  type RecommendationRepository,
  toRecommendation,
} from './recommendation-store';

const COLUMNS =
  'id, zone, kind, recommended_at, session_id, run_id, payload_digest, outcome, outcome_at, evidence, window_seconds';

type Row = Omit<Recommendation, 'evidence'> & { evidence: string } & Record<string, unknown>;

export function createPostgresRecommendationRepository(deps: {
  sql: SqlClient;
  clock: Clock;
  ids: Ids;
}): RecommendationRepository {
  const { sql } = deps;
  const changes = tableChanges(sql);
  const write = <T>(fn: () => Promise<T>) => changes.write('recommendations', fn);
  // Every pending row, oldest first; a filter picks from it the rows, in the order, its own
  // statement would return.
  const pendingRows = memoByTableChanges(changes, 'recommendations', (_all: 'pending') =>
    sql.query<Row>(
      `SELECT ${COLUMNS} FROM recommendations WHERE outcome = 'pending' ORDER BY recommended_at, id COLLATE "C"`,
    ),
  );
  const get = async (id: string) => {
    const row = await sql.one<Row>(`SELECT ${COLUMNS} FROM recommendations WHERE id = $1`, [id]);
    return row ? toRecommendation(row) : undefined;
  };
  return {
    async record(input) {
      const row = await write(() =>
        sql.one<Row>(
          `INSERT INTO recommendations (id, zone, kind, recommended_at, session_id, run_id, payload_digest, evidence, window_seconds)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
          [
            deps.ids.next('rec'),
            input.zone,
            input.kind,
            deps.clock.now(),
            input.session_id ?? null,
            input.run_id ?? null,
            payloadDigest(input.payload),
            JSON.stringify(input.evidence ?? {}),
            input.window_seconds,
          ],
        ),
      );
      return toRecommendation(row as Row);
    },
    close(id, outcome, evidence) {
      return write(() =>
        sql.transaction(async (tx) => {
          const row = await tx.one<Row>(`SELECT ${COLUMNS} FROM recommendations WHERE id = $1 FOR UPDATE`, [
            id,
          ]);
          if (row?.outcome !== 'pending') return false;
          const current = toRecommendation(row);
          await tx.run(
            'UPDATE recommendations SET outcome = $1, outcome_at = $2, evidence = $3 WHERE id = $4',
            [outcome, deps.clock.now(), JSON.stringify({ ...current.evidence, ...evidence }), id],
          );
          return true;
        }),
      );
    },
    async pending(filter = {}) {
      return (await pendingRows.get('pending')).map(toRecommendation).filter(matchesPending(filter));
    },
    async window(options) {
      const rows = options.zone
        ? await sql.query<Row>(
            `SELECT ${COLUMNS} FROM recommendations WHERE recommended_at >= $1 AND zone = $2
             ORDER BY recommended_at DESC, id COLLATE "C" DESC LIMIT $3`,
            [options.since, options.zone, options.max],
          )
        : await sql.query<Row>(
            `SELECT ${COLUMNS} FROM recommendations WHERE recommended_at >= $1
             ORDER BY recommended_at DESC, id COLLATE "C" DESC LIMIT $2`,
            [options.since, options.max],
          );
      return rows.map(toRecommendation);
    },
    get,
    expire() {
      const now = deps.clock.now();
      return write(() =>
        sql.run(
          `UPDATE recommendations SET outcome = 'expired', outcome_at = $1
         WHERE outcome = 'pending' AND recommended_at + window_seconds * 1000 < $2`,
          [now, now],
        ),
      );
    },
    async nextExpiry() {
      const row = await sql.one<{ at: number | null }>(
        "SELECT min(recommended_at + window_seconds * 1000) AS at FROM recommendations WHERE outcome = 'pending'",
      );
      return row?.at ?? null;
    },
  };
}
