/**
 * Edit capsules (`options.edit_capsules`): the file changes of one agent run, grouped at run end
 * into a reviewable, revertible unit. When the option is on, the first approved change of a run
 * takes a checkpoint of the workspace (the state the capsule can be restored to) and opens a
 * `recording` capsule; at `run.finished` the run's file history is folded into the capsule's
 * files (net change per path, line stats) and the capsule becomes `open`. Reverting a capsule
 * writes each file back to its content before the run, through the one mutation path (guards,
 * one approval with every diff, history, `file.changed`), and only when every file is still as
 * the run left it; otherwise the checkpoint is the way back.
 * @module
 */
import { existsSync, readFileSync } from 'node:fs';
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Logger } from '../log';
import type { RunLedger } from '../runs/run-ledger';
import type { Clock, Ids } from '../util/ids';
import type { Checkpoints } from '../workspace/checkpoints';
import type { OpContext } from '../workspace/context';
import { unifiedDiff } from '../workspace/diff';
import type { BeforeWriteHook, ChangeCommitter, PendingChange } from '../workspace/file-changes';
import type { FileChange, FileHistory } from '../workspace/file-history';
import { sha256 } from '../workspace/file-io';
import type { PathResolver } from '../workspace/paths';
import { lineCounts } from './line-diff';
import { jsonColumn, type QualityDb, readOr } from './store';

export type CapsuleStatus = 'recording' | 'open' | 'reverted';

export interface EditCapsuleFile {
  path: string;
  change: 'create' | 'modify' | 'delete';
  /** Net line stats of the run's change to this file; null when its content was not stored. */
  additions: number | null;
  deletions: number | null;
  /** File history rows of the run for this path. */
  edits: number;
  tools: string[];
  first_history_id: number;
  last_history_id: number;
  /** Before and after content are in the file history (text up to 1 MiB): revert can restore it. */
  revertible: boolean;
}

export interface EditCapsule {
  id: string;
  session_id: string;
  run_id: string;
  parent_run_id: string | null;
  status: CapsuleStatus;
  /** How the run ended (null while recording). */
  run_status: string | null;
  /** Checkpoint of the workspace taken before the run's first change (`checkpoint_restore`). */
  checkpoint_id: string | null;
  /** Why there is no checkpoint, when there is none. */
  checkpoint_note: string | null;
  files: EditCapsuleFile[];
  file_count: number;
  additions: number;
  deletions: number;
  created_at: number;
  closed_at: number | null;
  reverted_at: number | null;
  reverted_by_session_id: string | null;
  revert_history_ids: number[];
}

export interface CapsuleDetail extends EditCapsule {
  diff: string;
  restore_hint: string;
}

export interface RevertResult {
  capsule: EditCapsule;
  files: {
    path: string;
    change: 'create' | 'modify' | 'delete';
    additions: number;
    deletions: number;
    history_id: number;
  }[];
  diff: string;
}

export interface EditCapsulesStatus {
  enabled: boolean;
  option: 'options.edit_capsules';
  counts: {
    total: number;
    recording: number;
    open: number;
    reverted: number;
    with_checkpoint: number;
    files: number;
    additions: number;
    deletions: number;
  };
  last_capsule_at: number | null;
  recent: EditCapsule[];
}

export interface CapsuleService {
  enabled(): boolean;
  /** The checkpoint-before-first-change hook (registered on the change committer). */
  readonly beforeWrite: BeforeWriteHook;
  /** Fold a finished run's changes into its capsule (called on `run.finished`). */
  finalize(run: { sessionId: string; runId: string; status: string }): EditCapsule | undefined;
  list(filter?: { sessionId?: string; status?: CapsuleStatus; limit?: number }): EditCapsule[];
  get(id: string): EditCapsule;
  show(id: string): Promise<CapsuleDetail>;
  revert(id: string, ctx: OpContext): Promise<RevertResult>;
  status(options?: { limit?: number; sessionId?: string }): EditCapsulesStatus;
}

interface Row {
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
}

const FINAL_RUN_STATUSES = new Set(['completed', 'failed', 'cancelled', 'interrupted']);

export function createCapsuleService(deps: {
  db: QualityDb;
  clock: Clock;
  ids: Ids;
  bus: EventBus;
  log: Logger;
  enabled: () => boolean;
  history: FileHistory;
  checkpoints: Checkpoints;
  changes: ChangeCommitter;
  paths: PathResolver;
  runs: RunLedger;
}): CapsuleService {
  const toCapsule = (row: Row): EditCapsule => ({
    ...row,
    files: jsonColumn<EditCapsuleFile[]>(row.files, []),
    revert_history_ids: jsonColumn<number[]>(row.revert_history_ids, []),
  });
  const byRun = (runId: string) =>
    deps.db.write().prepare('SELECT * FROM edit_capsules WHERE run_id = ?').get(runId) as Row | undefined;
  const recording = new Map<string, Promise<void>>();

  const open = async (ctx: OpContext & { runId: string; sessionId: string }) => {
    if (byRun(ctx.runId)) return;
    let checkpointId: string | null = null;
    let note: string | null = null;
    try {
      const checkpoint = await deps.checkpoints.create(
        {
          name: `before run ${ctx.runId}`,
          description: `edit capsule: the workspace before run ${ctx.runId} first changed a file`,
        },
        { tool: 'edit_capsule', sessionId: ctx.sessionId, runId: ctx.runId },
        true,
      );
      checkpointId = checkpoint.id;
    } catch (error) {
      const message = SvcError.is(error) ? error.message : String(error);
      note = `no checkpoint (${message}); the capsule still reverts from file history`;
      deps.log.info('edit capsule without checkpoint', { run_id: ctx.runId, reason: message });
    }
    const run = deps.runs.get(ctx.runId);
    deps.db
      .write()
      .prepare(
        `INSERT INTO edit_capsules (id, session_id, run_id, parent_run_id, status, checkpoint_id, checkpoint_note, created_at)
         VALUES (?, ?, ?, ?, 'recording', ?, ?, ?) ON CONFLICT (run_id) DO NOTHING`,
      )
      .run(
        deps.ids.next('cap'),
        ctx.sessionId,
        ctx.runId,
        run?.parent_run_id ?? null,
        checkpointId,
        note,
        deps.clock.now(),
      );
  };

  const beforeWrite: BeforeWriteHook = async (_changes, ctx) => {
    const { runId, sessionId } = ctx;
    if (!runId || !sessionId || !deps.enabled()) return;
    let pending = recording.get(runId);
    if (!pending) {
      pending = open({ ...ctx, runId, sessionId }).finally(() => recording.delete(runId));
      recording.set(runId, pending);
    }
    await pending;
  };

  const get = (id: string): EditCapsule => {
    const row = readOr(
      deps.db,
      undefined,
      (db) => db.prepare('SELECT * FROM edit_capsules WHERE id = ?').get(id) as Row | undefined,
    );
    if (!row) {
      throw new SvcError(
        'not_found',
        `capsule_id: no edit capsule "${id}"; edit_capsule with action list shows them`,
      );
    }
    return toCapsule(row);
  };

  const list: CapsuleService['list'] = (filter = {}) => {
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
      deps.db,
      [] as Row[],
      (db) =>
        db
          .prepare(
            `SELECT * FROM edit_capsules ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
           ORDER BY created_at DESC, id DESC LIMIT ?`,
          )
          .all(...params, filter.limit ?? 20) as Row[],
    );
    return rows.map(toCapsule);
  };

  const finalizeRow = (runId: string, sessionId: string, runStatus: string): EditCapsule | undefined => {
    const existing = byRun(runId);
    if (!existing && !deps.enabled()) return undefined;
    if (existing && existing.status !== 'recording') return toCapsule(existing);
    const files = summarize(deps.history, deps.history.list({ runId, limit: 100_000 }));
    if (files.length === 0) {
      if (existing) {
        deps.db.write().prepare('DELETE FROM edit_capsules WHERE id = ?').run(existing.id);
        if (existing.checkpoint_id) {
          const checkpointId = existing.checkpoint_id;
          // Nothing changed in the end: the checkpoint taken for it has nothing to restore.
          void deps.checkpoints
            .delete(checkpointId, { tool: 'edit_capsule', sessionId })
            .catch((error) =>
              deps.log.warn('unused capsule checkpoint not deleted', { checkpointId, error }),
            );
        }
      }
      return undefined;
    }
    const now = deps.clock.now();
    const additions = files.reduce((n, f) => n + (f.additions ?? 0), 0);
    const deletions = files.reduce((n, f) => n + (f.deletions ?? 0), 0);
    const id = existing?.id ?? deps.ids.next('cap');
    if (existing) {
      deps.db
        .write()
        .prepare(
          `UPDATE edit_capsules SET status = 'open', run_status = ?, files = ?, file_count = ?, additions = ?,
             deletions = ?, closed_at = ? WHERE id = ?`,
        )
        .run(runStatus, JSON.stringify(files), files.length, additions, deletions, now, id);
    } else {
      deps.db
        .write()
        .prepare(
          `INSERT INTO edit_capsules (id, session_id, run_id, parent_run_id, status, run_status, checkpoint_note,
             files, file_count, additions, deletions, created_at, closed_at)
           VALUES (?, ?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          id,
          sessionId,
          runId,
          deps.runs.get(runId)?.parent_run_id ?? null,
          runStatus,
          'no checkpoint: edit capsules were off when the run first changed a file',
          JSON.stringify(files),
          files.length,
          additions,
          deletions,
          now,
          now,
        );
    }
    const capsule = get(id);
    deps.bus.publish(sessionId, 'edit_capsule.created', {
      session_id: sessionId,
      capsule_id: id,
      run_id: runId,
      files: files.length,
      additions,
      deletions,
      checkpoint_id: capsule.checkpoint_id,
    });
    return capsule;
  };

  return {
    enabled: deps.enabled,
    beforeWrite,
    finalize({ sessionId, runId, status }) {
      const capsule = finalizeRow(runId, sessionId, status);
      // Capsules left recording by a run that ended without a run.finished here (a crash).
      const stranded = deps.db
        .write()
        .prepare("SELECT run_id, session_id FROM edit_capsules WHERE status = 'recording' AND run_id != ?")
        .all(runId) as { run_id: string; session_id: string }[];
      for (const row of stranded) {
        const run = deps.runs.get(row.run_id);
        if (!run || FINAL_RUN_STATUSES.has(run.status)) {
          finalizeRow(row.run_id, row.session_id, run?.status ?? 'interrupted');
        }
      }
      return capsule;
    },
    list,
    get,
    async show(id) {
      const capsule = get(id);
      const diffs: string[] = [];
      for (const file of capsule.files) {
        const first = deps.history.get(file.first_history_id);
        const last = deps.history.get(file.last_history_id);
        if (!first || !last || !file.revertible) {
          diffs.push(`(no stored content for ${file.path}: ${file.change}, binary or over 1 MiB)\n`);
          continue;
        }
        diffs.push((await unifiedDiff(file.path, first.before ?? '', last.after ?? '')).diff);
      }
      return {
        ...capsule,
        diff: diffs.join(''),
        restore_hint:
          capsule.status === 'reverted'
            ? 'already reverted'
            : `revert_edit_capsule ${capsule.id} writes the files back${capsule.checkpoint_id ? `; checkpoint_restore ${capsule.checkpoint_id} restores the whole workspace to before the run` : ''}`,
      };
    },
    async revert(id, ctx) {
      const capsule = get(id);
      if (capsule.status !== 'open') {
        throw new SvcError(
          'conflict',
          capsule.status === 'reverted'
            ? `capsule_id: edit capsule ${id} was already reverted`
            : `capsule_id: edit capsule ${id} is still recording (its run ${capsule.run_id} has not finished)`,
          { details: { capsule_id: id, status: capsule.status } },
        );
      }
      const pending: PendingChange[] = [];
      const conflicts: string[] = [];
      const missing: string[] = [];
      for (const file of capsule.files) {
        const first = deps.history.get(file.first_history_id);
        const last = deps.history.get(file.last_history_id);
        if (!first || !last || !file.revertible) {
          missing.push(file.path);
          continue;
        }
        const target = deps.paths.resolve(file.path, 'capsule_id');
        const disk = existsSync(target.abs) ? readFileSync(target.abs) : null;
        const now = disk === null ? null : sha256(disk);
        if (now !== last.after_sha) conflicts.push(file.path);
        pending.push({
          target,
          before: disk,
          after: first.before_sha === null ? null : (first.before ?? ''),
        });
      }
      const restore = capsule.checkpoint_id
        ? ` (checkpoint_restore ${capsule.checkpoint_id} restores the whole workspace to before the run)`
        : '';
      if (missing.length) {
        throw new SvcError(
          'conflict',
          `capsule_id: edit capsule ${id} cannot be reverted file by file: the file history has no content for ${missing.join(', ')} (binary or over 1 MiB)${restore}. Nothing was written`,
          { details: { capsule_id: id, reason: 'content_not_stored', paths: missing } },
        );
      }
      if (conflicts.length) {
        throw new SvcError(
          'conflict',
          `capsule_id: ${conflicts.join(', ')} changed after run ${capsule.run_id} (a later edit or outside svc), so edit capsule ${id} cannot be reverted safely; revert later capsules first${restore}. Nothing was written`,
          { details: { capsule_id: id, reason: 'changed_since', paths: conflicts } },
        );
      }
      const applied = await deps.changes.commit(pending, ctx, {
        title: `revert edit capsule ${id} (run ${capsule.run_id}, ${pending.length} file${pending.length === 1 ? '' : 's'})`,
        scope: id,
        details: { capsule_id: id, run_id: capsule.run_id, checkpoint_id: capsule.checkpoint_id },
      });
      const historyIds = applied.map((a) => a.history_id);
      deps.db
        .write()
        .prepare(
          `UPDATE edit_capsules SET status = 'reverted', reverted_at = ?, reverted_by_session_id = ?,
             revert_history_ids = ? WHERE id = ? AND status = 'open'`,
        )
        .run(deps.clock.now(), ctx.sessionId ?? null, JSON.stringify(historyIds), id);
      deps.bus.publish(capsule.session_id, 'edit_capsule.reverted', {
        session_id: capsule.session_id,
        capsule_id: id,
        run_id: capsule.run_id,
        files: applied.length,
        ...(ctx.sessionId ? { by_session_id: ctx.sessionId } : {}),
      });
      return {
        capsule: get(id),
        files: applied.map((a) => ({
          path: a.path,
          change: a.change,
          additions: a.additions,
          deletions: a.deletions,
          history_id: a.history_id,
        })),
        diff: applied.map((a) => a.diff).join(''),
      };
    },
    status(options = {}) {
      const where = options.sessionId ? 'WHERE session_id = ?' : '';
      const params = options.sessionId ? [options.sessionId] : [];
      const totals = readOr(
        deps.db,
        undefined,
        (db) =>
          db
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
      const n = (key: string) => Number(totals?.[key] ?? 0);
      return {
        enabled: deps.enabled(),
        option: 'options.edit_capsules',
        counts: {
          total: n('total'),
          recording: n('recording'),
          open: n('open'),
          reverted: n('reverted'),
          with_checkpoint: n('with_checkpoint'),
          files: n('files'),
          additions: n('additions'),
          deletions: n('deletions'),
        },
        last_capsule_at: totals?.last ?? null,
        recent: list({ sessionId: options.sessionId, limit: options.limit ?? 10 }),
      };
    },
  };
}

/** The run's file history folded into one net change per path (paths back to their start drop out). */
function summarize(history: FileHistory, changes: FileChange[]): EditCapsuleFile[] {
  const byPath = new Map<string, FileChange[]>();
  for (const change of changes) {
    const list = byPath.get(change.path) ?? [];
    list.push(change);
    byPath.set(change.path, list);
  }
  const files: EditCapsuleFile[] = [];
  for (const [path, list] of byPath) {
    const first = list[0];
    const last = list[list.length - 1];
    if (first.before_sha === last.after_sha) continue;
    const change = first.before_sha === null ? 'create' : last.after_sha === null ? 'delete' : 'modify';
    const before = history.get(first.id);
    const after = history.get(last.id);
    const beforeText = first.before_sha === null ? '' : before?.before;
    const afterText = last.after_sha === null ? '' : after?.after;
    const revertible = typeof beforeText === 'string' && typeof afterText === 'string';
    const counts = revertible ? lineCounts(beforeText, afterText) : undefined;
    files.push({
      path,
      change,
      additions: counts?.additions ?? null,
      deletions: counts?.deletions ?? null,
      edits: list.length,
      tools: [...new Set(list.map((c) => c.tool))],
      first_history_id: first.id,
      last_history_id: last.id,
      revertible,
    });
  }
  return files;
}
