/**
 * `edit_capsules` on PostgreSQL (issue 18): the twin of ./capsule-repository.ts, the same answers:
 * one capsule per run (the unique run_id decides: a second recording insert is ignored), files and
 * revert history ids as JSON columns, lists newest first, totals with null sums when there is no
 * capsule. Stranded capsules come oldest first. Whether any capsule is recording is kept in memory
 * while no write to the table is notified (../store/postgres/table-changes.ts), as SQLite keeps it
 * by data_version: with capsules off (the default) a run's end then reads nothing.
 * @module
 */
import type { SqlClient } from '../store/postgres/client';
import { memoByTableChanges, tableChanges } from '../store/postgres/table-changes';
import { atRunEndOf, type CapsuleRepository, type CapsuleRow, toCapsule } from './capsule-repository';

type Row = CapsuleRow;

const COLUMNS = `id, session_id, run_id, parent_run_id, status, run_status, checkpoint_id, checkpoint_note, files,
  file_count, additions, deletions, created_at, closed_at, reverted_at, reverted_by_session_id, revert_history_ids`;

export function createPostgresCapsuleRepository(deps: { sql: SqlClient }): CapsuleRepository {
  const { sql } = deps;
  const changes = tableChanges(sql);
  const write = (fn: () => Promise<unknown>) => changes.write('edit_capsules', fn).then(() => undefined);
  const recording = memoByTableChanges(
    changes,
    'edit_capsules',
    async (_none: 'none') =>
      !(await sql.one("SELECT 1 FROM edit_capsules WHERE status = 'recording' LIMIT 1")),
  );
  return {
    async byRun(runId) {
      const row = await sql.one<Row>(`SELECT ${COLUMNS} FROM edit_capsules WHERE run_id = $1`, [runId]);
      return row ? toCapsule(row) : undefined;
    },
    async insertRecording(row) {
      await write(() =>
        sql.run(
          `INSERT INTO edit_capsules (id, session_id, run_id, parent_run_id, status, checkpoint_id, checkpoint_note, created_at)
         VALUES ($1, $2, $3, $4, 'recording', $5, $6, $7) ON CONFLICT (run_id) DO NOTHING`,
          [
            row.id,
            row.session_id,
            row.run_id,
            row.parent_run_id,
            row.checkpoint_id,
            row.checkpoint_note,
            row.created_at,
          ],
        ),
      );
    },
    async insertOpen(row, content) {
      await write(() =>
        sql.run(
          `INSERT INTO edit_capsules (id, session_id, run_id, parent_run_id, status, run_status, checkpoint_note,
           files, file_count, additions, deletions, created_at, closed_at)
         VALUES ($1, $2, $3, $4, 'open', $5, $6, $7, $8, $9, $10, $11, $12)`,
          [
            row.id,
            row.session_id,
            row.run_id,
            row.parent_run_id,
            row.run_status,
            row.checkpoint_note,
            JSON.stringify(content.files),
            content.files.length,
            content.additions,
            content.deletions,
            row.now,
            row.now,
          ],
        ),
      );
    },
    async close(id, runStatus, content, now) {
      await write(() =>
        sql.run(
          `UPDATE edit_capsules SET status = 'open', run_status = $1, files = $2, file_count = $3, additions = $4,
           deletions = $5, closed_at = $6 WHERE id = $7`,
          [
            runStatus,
            JSON.stringify(content.files),
            content.files.length,
            content.additions,
            content.deletions,
            now,
            id,
          ],
        ),
      );
    },
    async delete(id) {
      await write(() => sql.run('DELETE FROM edit_capsules WHERE id = $1', [id]));
    },
    strandedExcept: (runId) =>
      sql.query<{ run_id: string; session_id: string }>(
        "SELECT run_id, session_id FROM edit_capsules WHERE status = 'recording' AND run_id != $1 ORDER BY created_at, id",
        [runId],
      ),
    // `byRun` and `strandedExcept` in one statement (a run's end), as the SQLite repository does.
    async atRunEnd(runId) {
      const rows = await sql.query<Row>(
        `SELECT ${COLUMNS} FROM edit_capsules WHERE run_id = $1 OR status = 'recording' ORDER BY created_at, id`,
        [runId],
      );
      return atRunEndOf(rows, runId);
    },
    async markReverted(id, now, bySessionId, historyIds) {
      await write(() =>
        sql.run(
          `UPDATE edit_capsules SET status = 'reverted', reverted_at = $1, reverted_by_session_id = $2,
           revert_history_ids = $3 WHERE id = $4 AND status = 'open'`,
          [now, bySessionId, JSON.stringify(historyIds), id],
        ),
      );
    },
    noneRecording: () => recording.get('none'),
    async find(id) {
      const row = await sql.one<Row>(`SELECT ${COLUMNS} FROM edit_capsules WHERE id = $1`, [id]);
      return row ? toCapsule(row) : undefined;
    },
    async list(filter) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter.sessionId) {
        params.push(filter.sessionId);
        where.push(`session_id = $${params.length}`);
      }
      if (filter.status) {
        params.push(filter.status);
        where.push(`status = $${params.length}`);
      }
      params.push(filter.limit ?? 20);
      const rows = await sql.query<Row>(
        `SELECT ${COLUMNS} FROM edit_capsules ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
        params,
      );
      return rows.map(toCapsule);
    },
    async totals(sessionId) {
      const row = await sql.one<Record<string, number | null>>(
        `SELECT count(*) AS total,
           sum((status = 'recording')::int) AS recording, sum((status = 'open')::int) AS open,
           sum((status = 'reverted')::int) AS reverted, sum((checkpoint_id IS NOT NULL)::int) AS with_checkpoint,
           sum(file_count) AS files, sum(additions) AS additions, sum(deletions) AS deletions,
           max(created_at) AS last
         FROM edit_capsules ${sessionId ? 'WHERE session_id = $1' : ''}`,
        sessionId ? [sessionId] : [],
      );
      return row;
    },
  };
}
