/**
 * The edit capsules' table (`edit_capsules`): every statement the capsule service runs. Writes
 * use the app database; reads answer empty when there is none yet (./store.ts). On SQLite whether
 * any capsule is recording is kept by data_version (../store/data-version.ts): with capsules off a
 * run's end then reads nothing (issue 17 item 3), and another connection's commit (a CLI run
 * recording a capsule) makes it read again.
 * @module
 */
import { memoByDataVersion } from '../store/data-version';
import type { Db } from '../store/db';
import type { CapsuleStatus, EditCapsule, EditCapsuleFile } from './capsule-types';
import { jsonColumn, type QualityDb, readOr } from './store';

/** An `edit_capsules` row as both backends read it. */
export type CapsuleRow = {
  id: string;
  session_id: string;
  run_id: string;
  parent_run_id: string | null;
  status: CapsuleStatus;
  run_status: string | null;
  checkpoint_id: string | null;
  checkpoint_note: string | null;
  files: string;
  file_count: number;
  additions: number;
  deletions: number;
  created_at: number;
  closed_at: number | null;
  reverted_at: number | null;
  reverted_by_session_id: string | null;
  revert_history_ids: string | null;
};

/** The files and line totals a closing capsule is written with. */
export interface CapsuleContent {
  files: EditCapsuleFile[];
  additions: number;
  deletions: number;
}

export interface CapsuleRepository {
  byRun(runId: string): Promise<EditCapsule | undefined>;
  /** A `recording` capsule for the run, unless it has one. */
  insertRecording(row: {
    id: string;
    session_id: string;
    run_id: string;
    parent_run_id: string | null;
    checkpoint_id: string | null;
    checkpoint_note: string | null;
    created_at: number;
  }): Promise<void>;
  /** A capsule opened at run end (edit capsules were off when the run first changed a file). */
  insertOpen(
    row: {
      id: string;
      session_id: string;
      run_id: string;
      parent_run_id: string | null;
      run_status: string;
      checkpoint_note: string;
      now: number;
    },
    content: CapsuleContent,
  ): Promise<void>;
  /** Recording → open with the run's changes. */
  close(id: string, runStatus: string, content: CapsuleContent, now: number): Promise<void>;
  delete(id: string): Promise<void>;
  /** Capsules still recording for runs other than this one. */
  strandedExcept(runId: string): Promise<{ run_id: string; session_id: string }[]>;
  /**
   * `byRun` and `strandedExcept` of one run in one read (what a run's end needs, issue 17).
   * Optional: without it the capsule service asks both.
   */
  atRunEnd?(
    runId: string,
  ): Promise<{ capsule: EditCapsule | undefined; stranded: { run_id: string; session_id: string }[] }>;
  markReverted(id: string, now: number, bySessionId: string | null, historyIds: number[]): Promise<void>;
  /**
   * Whether no capsule is recording, where the repository knows it without a read most of the
   * time (SQLite: kept by data_version). Optional: without it the run's end reads `atRunEnd`.
   */
  noneRecording?(): Promise<boolean>;
  /** `noneRecording` answered at once (SQLite's kept answer); absent where the store cannot. */
  noneRecordingNow?(): boolean;
  /** Reads (empty without a database). */
  find(id: string): Promise<EditCapsule | undefined>;
  list(filter: { sessionId?: string; status?: CapsuleStatus; limit?: number }): Promise<EditCapsule[]>;
  totals(sessionId?: string): Promise<Record<string, number | null> | undefined>;
}

/** The row as a capsule, its JSON columns parsed. */
/**
 * A run's end from the rows of one read (its own capsule and every recording one, in creation
 * order): its capsule and the other runs' stranded recordings. Both backends' `atRunEnd`.
 */
export function atRunEndOf(
  rows: CapsuleRow[],
  runId: string,
): { capsule: EditCapsule | undefined; stranded: { run_id: string; session_id: string }[] } {
  const own = rows.find((row) => row.run_id === runId);
  return {
    capsule: own ? toCapsule(own) : undefined,
    stranded: rows
      .filter((row) => row.run_id !== runId)
      .map((row) => ({ run_id: row.run_id, session_id: row.session_id })),
  };
}

export const toCapsule = (row: CapsuleRow): EditCapsule => ({
  ...row,
  files: jsonColumn<EditCapsuleFile[]>(row.files, []),
  revert_history_ids: jsonColumn<number[]>(row.revert_history_ids, []),
});

export function createCapsuleRepository(qdb: QualityDb): CapsuleRepository {
  const db = () => qdb.write();
  // Each write below drops it first (memoByDataVersion's rule for the owner's own writes).
  const recording = noneRecordingMemo(db);
  return {
    async byRun(runId) {
      const row = db().prepare('SELECT * FROM edit_capsules WHERE run_id = ?').get(runId) as
        | CapsuleRow
        | undefined;
      return row ? toCapsule(row) : undefined;
    },
    async insertRecording(row) {
      recording.invalidate();
      db()
        .prepare(
          `INSERT INTO edit_capsules (id, session_id, run_id, parent_run_id, status, checkpoint_id, checkpoint_note, created_at)
           VALUES (?, ?, ?, ?, 'recording', ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`,
        )
        .run(
          row.id,
          row.session_id,
          row.run_id,
          row.parent_run_id,
          row.checkpoint_id,
          row.checkpoint_note,
          row.created_at,
        );
    },
    async insertOpen(row, content) {
      recording.invalidate();
      db()
        .prepare(
          `INSERT INTO edit_capsules (id, session_id, run_id, parent_run_id, status, run_status, checkpoint_note,
             files, file_count, additions, deletions, created_at, closed_at)
           VALUES (?, ?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
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
        );
    },
    async close(id, runStatus, content, now) {
      recording.invalidate();
      db()
        .prepare(
          `UPDATE edit_capsules SET status = 'open', run_status = ?, files = ?, file_count = ?, additions = ?,
             deletions = ?, closed_at = ? WHERE id = ?`,
        )
        .run(
          runStatus,
          JSON.stringify(content.files),
          content.files.length,
          content.additions,
          content.deletions,
          now,
          id,
        );
    },
    async delete(id) {
      recording.invalidate();
      db().prepare('DELETE FROM edit_capsules WHERE id = ?').run(id);
    },
    async strandedExcept(runId) {
      return db()
        .prepare("SELECT run_id, session_id FROM edit_capsules WHERE status = 'recording' AND run_id != ?")
        .all(runId) as { run_id: string; session_id: string }[];
    },
    async atRunEnd(runId) {
      const rows = db()
        .prepare("SELECT * FROM edit_capsules WHERE run_id = ? OR status = 'recording' ORDER BY rowid")
        .all(runId) as CapsuleRow[];
      return atRunEndOf(rows, runId);
    },
    async noneRecording() {
      return recording.get('none');
    },
    noneRecordingNow: () => recording.get('none'),
    async markReverted(id, now, bySessionId, historyIds) {
      recording.invalidate();
      db()
        .prepare(
          `UPDATE edit_capsules SET status = 'reverted', reverted_at = ?, reverted_by_session_id = ?,
             revert_history_ids = ? WHERE id = ? AND status = 'open'`,
        )
        .run(now, bySessionId, JSON.stringify(historyIds), id);
    },
    async find(id) {
      const row = readOr(
        qdb,
        undefined,
        (handle) =>
          handle.prepare('SELECT * FROM edit_capsules WHERE id = ?').get(id) as CapsuleRow | undefined,
      );
      return row ? toCapsule(row) : undefined;
    },
    async list(filter) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter.sessionId) {
        where.push('session_id = ?');
        params.push(filter.sessionId);
      }
      if (filter.status) {
        where.push('status = ?');
        params.push(filter.status);
      }
      const rows = readOr(
        qdb,
        [] as CapsuleRow[],
        (handle) =>
          handle
            .prepare(
              `SELECT * FROM edit_capsules ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
             ORDER BY created_at DESC, id DESC LIMIT ?`,
            )
            .all(...params, filter.limit ?? 20) as CapsuleRow[],
      );
      return rows.map(toCapsule);
    },
    async totals(sessionId) {
      const where = sessionId ? 'WHERE session_id = ?' : '';
      const params = sessionId ? [sessionId] : [];
      return readOr(
        qdb,
        undefined,
        (handle) =>
          handle
            .prepare(
              `SELECT count(*) AS total,
               sum(status = 'recording') AS recording, sum(status = 'open') AS open,
               sum(status = 'reverted') AS reverted, sum(checkpoint_id IS NOT NULL) AS with_checkpoint,
               sum(file_count) AS files, sum(additions) AS additions, sum(deletions) AS deletions,
               max(created_at) AS last
             FROM edit_capsules ${where}`,
            )
            .get(...params) as Record<string, number | null>,
      );
    },
  };
}

/** Whether no capsule is recording, kept while data_version holds and the owner did not write. */
function noneRecordingMemo(db: () => Db) {
  return memoByDataVersion<'none', boolean>(
    db,
    () => !db().prepare("SELECT 1 FROM edit_capsules WHERE status = 'recording' LIMIT 1").get(),
  );
}
