/**
 * Per-session file history: every change a file tool makes is recorded with its before and after
 * content, so any change can be shown as a diff later (TUI, readouts, undo of a single edit).
 * Text up to MAX_TEXT bytes is stored; larger or binary content keeps only its hash and size.
 * @module
 */
import type { Db } from '../store/db';
import type { Clock } from '../util/ids';
import { unifiedDiff } from './diff';
import { sha256 } from './file-io';

const MAX_TEXT = 1024 * 1024;

export type FileChangeKind = 'create' | 'modify' | 'delete';

export interface FileChangeInput {
  sessionId?: string;
  runId?: string;
  tool: string;
  /** Workspace-relative path (absolute when outside the workspace). */
  path: string;
  change: FileChangeKind;
  before?: Buffer | string | null;
  after?: Buffer | string | null;
  binary?: boolean;
}

export interface FileChange {
  id: number;
  session_id: string | null;
  run_id: string | null;
  tool: string;
  path: string;
  change: FileChangeKind;
  before_sha: string | null;
  after_sha: string | null;
  before_size: number | null;
  after_size: number | null;
  binary: boolean;
  /** False when the content was too large or binary: the change is listed but has no diff. */
  has_content: boolean;
  created_at: number;
}

export interface FileHistory {
  record(input: FileChangeInput): FileChange;
  /** Changes of a session (or of every session), oldest first; optionally for one path or run. */
  list(filter?: { sessionId?: string; runId?: string; path?: string; limit?: number }): FileChange[];
  get(id: number): (FileChange & { before: string | null; after: string | null }) | undefined;
  /** A unified diff of one recorded change; undefined for binary or oversized content. */
  diff(id: number): Promise<string | undefined>;
}

interface Row {
  id: number;
  session_id: string | null;
  run_id: string | null;
  tool: string;
  path: string;
  change: FileChangeKind;
  before_text: string | null;
  after_text: string | null;
  before_sha: string | null;
  after_sha: string | null;
  before_size: number | null;
  after_size: number | null;
  binary: number;
  created_at: number;
}

export function createFileHistory(deps: { db: () => Db; clock: Clock }): FileHistory {
  const toChange = (row: Row): FileChange => ({
    id: row.id,
    session_id: row.session_id,
    run_id: row.run_id,
    tool: row.tool,
    path: row.path,
    change: row.change,
    before_sha: row.before_sha,
    after_sha: row.after_sha,
    before_size: row.before_size,
    after_size: row.after_size,
    binary: row.binary === 1,
    has_content:
      row.binary !== 1 &&
      (row.change === 'create' || row.before_text !== null) &&
      (row.change === 'delete' || row.after_text !== null),
    created_at: row.created_at,
  });

  const get = (id: number) => {
    const row = deps.db().prepare('SELECT * FROM file_history WHERE id = ?').get(id) as Row | undefined;
    return row ? { ...toChange(row), before: row.before_text, after: row.after_text } : undefined;
  };

  return {
    record(input) {
      const before = input.before ?? null;
      const after = input.after ?? null;
      const storable = (value: Buffer | string | null) =>
        value === null || input.binary || Buffer.byteLength(value) > MAX_TEXT ? null : value.toString();
      const info = deps
        .db()
        .prepare(
          `INSERT INTO file_history (session_id, run_id, tool, path, change, before_text, after_text,
             before_sha, after_sha, before_size, after_size, binary, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          input.sessionId ?? null,
          input.runId ?? null,
          input.tool,
          input.path,
          input.change,
          storable(before),
          storable(after),
          before === null ? null : sha256(before),
          after === null ? null : sha256(after),
          before === null ? null : Buffer.byteLength(before),
          after === null ? null : Buffer.byteLength(after),
          input.binary ? 1 : 0,
          deps.clock.now(),
        );
      const change = get(Number(info.lastInsertRowid));
      if (!change) throw new Error('file history row vanished');
      const { before: _b, after: _a, ...summary } = change;
      return summary;
    },
    list(filter = {}) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (filter.sessionId) {
        where.push('session_id = ?');
        params.push(filter.sessionId);
      }
      if (filter.runId) {
        where.push('run_id = ?');
        params.push(filter.runId);
      }
      if (filter.path) {
        where.push('path = ?');
        params.push(filter.path);
      }
      const sql = `SELECT * FROM (SELECT * FROM file_history ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY id DESC LIMIT ?) ORDER BY id`;
      params.push(filter.limit ?? 1000);
      return (
        deps
          .db()
          .prepare(sql)
          .all(...params) as Row[]
      ).map(toChange);
    },
    get,
    async diff(id) {
      const change = get(id);
      if (!change?.has_content) return undefined;
      return (await unifiedDiff(change.path, change.before ?? '', change.after ?? '')).diff;
    },
  };
}
