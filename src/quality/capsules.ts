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
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Logger } from '../log';
import type { RunLedger } from '../runs/run-ledger';
import type { Clock, Ids } from '../util/ids';
import type { Checkpoints } from '../workspace/checkpoints';
import type { OpContext } from '../workspace/context';
import type { BeforeWriteHook, ChangeCommitter } from '../workspace/file-changes';
import type { FileChange, FileHistory } from '../workspace/file-history';
import type { PathResolver } from '../workspace/paths';
import type { CapsuleRepository } from './capsule-repository';
import { revertCapsule, showCapsule } from './capsule-review';
import type { CapsuleService, EditCapsule, EditCapsuleFile } from './capsule-types';
import { lineCounts } from './line-diff';

export * from './capsule-types';

const FINAL_RUN_STATUSES = new Set(['completed', 'failed', 'cancelled', 'interrupted']);

export interface CapsuleDeps {
  /** `edit_capsules` (./capsule-repository.ts or its PostgreSQL twin). */
  capsules: CapsuleRepository;
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
}

export function createCapsuleService(deps: CapsuleDeps): CapsuleService {
  const repo = deps.capsules;
  const recording = new Map<string, Promise<void>>();

  const open = (ctx: OpContext & { runId: string; sessionId: string }) => openCapsule(deps, repo, ctx);

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

  const get = async (id: string): Promise<EditCapsule> => {
    const capsule = await repo.find(id);
    if (!capsule) {
      throw new SvcError(
        'not_found',
        `capsule_id: no edit capsule "${id}"; edit_capsule with action list shows them`,
      );
    }
    return capsule;
  };

  const list: CapsuleService['list'] = async (filter = {}) => await repo.list(filter);

  /** Nothing changed in the end: drop the capsule and the checkpoint taken for it. */
  const discard = async (existing: EditCapsule, sessionId: string) => {
    await repo.delete(existing.id);
    if (existing.checkpoint_id) {
      const checkpointId = existing.checkpoint_id;
      void deps.checkpoints
        .delete(checkpointId, { tool: 'edit_capsule', sessionId })
        .catch((error) => deps.log.warn('unused capsule checkpoint not deleted', { checkpointId, error }));
    }
  };

  const finalizeRow = async (
    runId: string,
    sessionId: string,
    runStatus: string,
    read?: { capsule: EditCapsule | undefined },
  ): Promise<EditCapsule | undefined> => {
    const existing = read ? read.capsule : await repo.byRun(runId);
    if (!existing && !deps.enabled()) return undefined;
    if (existing && existing.status !== 'recording') return existing;
    const files = await summarize(deps.history, await deps.history.list({ runId, limit: 100_000 }));
    if (files.length === 0) {
      if (existing) await discard(existing, sessionId);
      return undefined;
    }
    const now = deps.clock.now();
    const additions = files.reduce((n, f) => n + (f.additions ?? 0), 0);
    const deletions = files.reduce((n, f) => n + (f.deletions ?? 0), 0);
    const id = existing?.id ?? deps.ids.next('cap');
    if (existing) {
      await repo.close(id, runStatus, { files, additions, deletions }, now);
    } else {
      await repo.insertOpen(
        {
          id,
          session_id: sessionId,
          run_id: runId,
          parent_run_id: (await deps.runs.get(runId))?.parent_run_id ?? null,
          run_status: runStatus,
          checkpoint_note: 'no checkpoint: edit capsules were off when the run first changed a file',
          now,
        },
        { files, additions, deletions },
      );
    }
    const capsule = await get(id);
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

  const review = { ...deps, get, repo };

  const finalizeRun = async ({
    sessionId,
    runId,
    status,
  }: {
    sessionId: string;
    runId: string;
    status: string;
  }) => {
    if (await nothingAtRunEnd(deps, repo)) return undefined;
    // The run's capsule and the stranded ones in one read where the repository can (SQLite).
    const read = await repo.atRunEnd?.(runId);
    const capsule = await finalizeRow(runId, sessionId, status, read);
    // Capsules left recording by a run that ended without a run.finished here (a crash).
    for (const row of read?.stranded ?? (await repo.strandedExcept(runId))) {
      const run = await deps.runs.get(row.run_id);
      if (!run || FINAL_RUN_STATUSES.has(run.status)) {
        await finalizeRow(row.run_id, row.session_id, run?.status ?? 'interrupted');
      }
    }
    return capsule;
  };
  let finalizing: Promise<unknown> = Promise.resolve();

  return {
    enabled: deps.enabled,
    beforeWrite,
    nothingToFinalize: () => !deps.enabled() && repo.noneRecordingNow?.() === true,
    finalize(run) {
      // One at a time, in run-end order: it must not interleave with the next one's stranded sweep.
      const next = finalizing.then(() => finalizeRun(run));
      finalizing = next.catch(() => undefined);
      return next;
    },
    list,
    get,
    show: (id) => showCapsule(review, id),
    revert: (id, ctx) => revertCapsule(review, id, ctx),
    async status(options = {}) {
      const totals = await repo.totals(options.sessionId);
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
        recent: await list({ sessionId: options.sessionId, limit: options.limit ?? 10 }),
      };
    },
  };
}

/** The first change of a run: a checkpoint of the workspace and a `recording` capsule. */
async function openCapsule(
  deps: CapsuleDeps,
  repo: CapsuleRepository,
  ctx: OpContext & { runId: string; sessionId: string },
): Promise<void> {
  if (await repo.byRun(ctx.runId)) return;
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
  const run = await deps.runs.get(ctx.runId);
  await repo.insertRecording({
    id: deps.ids.next('cap'),
    session_id: ctx.sessionId,
    run_id: ctx.runId,
    parent_run_id: run?.parent_run_id ?? null,
    checkpoint_id: checkpointId,
    checkpoint_note: note,
    created_at: deps.clock.now(),
  });
}

/** The run's file history folded into one net change per path (paths back to their start drop out). */
async function summarize(history: FileHistory, changes: FileChange[]): Promise<EditCapsuleFile[]> {
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
    const before = await history.get(first.id);
    const after = await history.get(last.id);
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

/**
 * Capsules off and none recording (known without a read on SQLite): a run's end has no capsule to
 * close (one it recorded would be recording) and none stranded to sweep.
 */
async function nothingAtRunEnd(deps: CapsuleDeps, repo: CapsuleRepository): Promise<boolean> {
  return !deps.enabled() && (await repo.noneRecording?.()) === true;
}
