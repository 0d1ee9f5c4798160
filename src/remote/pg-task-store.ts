/**
 * Delegation's tables on PostgreSQL (issue 18): the twin of ./task-store.ts, the same answers
 * (cards by name then URL in byte order, skills parsed; tasks newest first with the id breaking
 * ties, limited, one session's when given; `not_found` for a missing task).
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import type { Clock } from '../util/ids';
import {
  type A2aStore,
  CARD_UPSERT,
  type CardRow,
  cardOf,
  cardUpsertValues,
  knownCard,
  TASK_INSERT,
  type TaskRow,
  taskInsertValues,
  taskNotFound,
  taskPatch,
} from './task-store';

type Row = TaskRow & Record<string, unknown>;
const p = (n: number) => `$${n}`;

export function createPostgresA2aStore(deps: { sql: SqlClient; clock: Clock }): A2aStore {
  const { sql } = deps;
  return {
    async rememberCard(fetched, source) {
      const known = knownCard(fetched, source, deps.clock.now());
      await sql.run(CARD_UPSERT(p), cardUpsertValues(known, fetched));
      return known;
    },

    cards: async () =>
      (
        await sql.query<CardRow & Record<string, unknown>>(
          'SELECT * FROM a2a_cards ORDER BY name COLLATE "C", card_url COLLATE "C"',
        )
      ).map(cardOf),

    async insertTask(task) {
      await sql.run(TASK_INSERT(p), taskInsertValues(task, deps.clock.now()));
    },

    async task(id) {
      const found = await sql.one<Row>('SELECT * FROM a2a_tasks WHERE id = $1', [id]);
      if (!found) throw taskNotFound(id);
      return found;
    },

    async updateTask(id, patch) {
      const update = taskPatch(id, patch, deps.clock.now(), p);
      await sql.run(update.sql, update.values);
    },

    async deleteTask(id) {
      await sql.run('DELETE FROM a2a_tasks WHERE id = $1', [id]);
    },

    tasks(options = {}) {
      const limit = options.limit ?? 50;
      return options.session_id
        ? sql.query<Row>(
            'SELECT * FROM a2a_tasks WHERE session_id = $1 ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $2',
            [options.session_id, limit],
          )
        : sql.query<Row>('SELECT * FROM a2a_tasks ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $1', [
            limit,
          ]);
    },
  };
}
