/**
 * Per-session file history: every change a file tool makes is recorded with its before and after
 * content, so any change can be shown as a diff later (TUI, readouts, undo of a single edit).
 * Text up to MAX_TEXT bytes is stored; larger or binary content keeps only its hash and size.
 * @module
 */
import type { Clock } from '../util/ids';
import { unifiedDiff } from './diff';
import type { FileHistoryQueries } from './file-history-queries';
import type { FileChangeKind, FileHistoryRepository, FileHistoryRow } from './file-history-repository';
import { sha256 } from './file-io';

const MAX_TEXT = 1024 * 1024;

export type { FileChangeKind };

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
  record(input: FileChangeInput): Promise<FileChange>;
  /** Changes of a session (or of every session), oldest first; optionally for one path or run. */
  list(filter?: { sessionId?: string; runId?: string; path?: string; limit?: number }): Promise<FileChange[]>;
  get(id: number): Promise<(FileChange & { before: string | null; after: string | null }) | undefined>;
  /** A unified diff of one recorded change; undefined for binary or oversized content. */
  diff(id: number): Promise<string | undefined>;
  /** The aggregate reads the read models use (counts per session, per tool, edits since). */
  readonly queries: FileHistoryQueries;
}

export function createFileHistory(deps: {
  history: FileHistoryRepository;
  queries: FileHistoryQueries;
  clock: Clock;
}): FileHistory {
  const repository = deps.history;
  const toChange = (row: FileHistoryRow): FileChange => ({
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

  const get = async (id: number) => {
    const row = await repository.get(id);
    return row ? { ...toChange(row), before: row.before_text, after: row.after_text } : undefined;
  };

  return {
    queries: deps.queries,
    async record(input) {
      const before = input.before ?? null;
      const after = input.after ?? null;
      const storable = (value: Buffer | string | null) =>
        value === null || input.binary || Buffer.byteLength(value) > MAX_TEXT ? null : value.toString();
      const id = await repository.insert({
        session_id: input.sessionId ?? null,
        run_id: input.runId ?? null,
        tool: input.tool,
        path: input.path,
        change: input.change,
        before_text: storable(before),
        after_text: storable(after),
        before_sha: before === null ? null : sha256(before),
        after_sha: after === null ? null : sha256(after),
        before_size: before === null ? null : Buffer.byteLength(before),
        after_size: after === null ? null : Buffer.byteLength(after),
        binary: input.binary ? 1 : 0,
        created_at: deps.clock.now(),
      });
      const change = await get(id);
      if (!change) throw new Error('file history row vanished');
      const { before: _b, after: _a, ...summary } = change;
      return summary;
    },
    async list(filter = {}) {
      return (await repository.list(filter)).map(toChange);
    },
    get,
    async diff(id) {
      const change = await get(id);
      if (!change?.has_content) return undefined;
      return (await unifiedDiff(change.path, change.before ?? '', change.after ?? '')).diff;
    },
  };
}
