/**
 * `edit` in apply_patch mode: a multi-file patch (Codex envelope or unified diff) planned against
 * a virtual copy of the files it touches, then committed in one piece through the workspace's one
 * mutation path (guards, one approval showing every file's diff, the re-check that nothing moved
 * on disk, atomic writes, file history, read tracking, `file.changed`). If any file section or
 * hunk does not apply, nothing is written. Every attempt, applied or failed, is logged for
 * `get_apply_patch_status`, and appended to the run ledger (`apply_patch.applied|failed`).
 * @module
 */
import { SvcError, toSvcError } from '../errors';
import type { Clock } from '../util/ids';
import type { OpContext } from '../workspace/context';
import type { ChangeCommitter, PendingChange } from '../workspace/file-changes';
import type { PathResolver } from '../workspace/paths';
import type { ReadTracker } from '../workspace/read-tracker';
import type { PatchLogRepository } from './patch-log-repository';
import { detectFormat, type FilePatch, type PatchFormat, parsePatch } from './patch-parse';
import { type Entry, planPatch } from './patch-plan';
import { applyPatchStatus } from './patch-status';
import type { PatchFileResult, PatchResult, PatchService } from './patch-types';

export type {
  ApplyPatchStatus,
  PatchFailure,
  PatchFileResult,
  PatchResult,
  PatchService,
} from './patch-types';

const MAX_PATCH_FILES = 500;

interface PatchDeps {
  /** The attempts' log (`apply_patch_log`). */
  log: PatchLogRepository;
  clock: Clock;
  paths: PathResolver;
  changes: ChangeCommitter;
  reads: ReadTracker;
  redact: (text: string) => string;
}

/** One attempt for the log. */
interface Attempt {
  format: PatchFormat | 'unknown';
  outcome: 'applied' | 'failed';
  files: unknown[];
  additions?: number;
  deletions?: number;
  fuzzy?: number;
  error?: SvcError;
}

export function createPatchService(deps: PatchDeps): PatchService {
  const repo = deps.log;
  const log = async (ctx: OpContext, row: Attempt): Promise<number> => {
    const details = (row.error?.details ?? {}) as { path?: string; hunk?: number; reason?: string };
    return await repo.insert({
      session_id: ctx.sessionId ?? null,
      run_id: ctx.runId ?? null,
      format: row.format,
      outcome: row.outcome,
      files: row.files,
      additions: row.additions ?? 0,
      deletions: row.deletions ?? 0,
      fuzzy_hunks: row.fuzzy ?? 0,
      error_code: row.error?.code ?? null,
      reason: row.error ? (details.reason ?? row.error.code) : null,
      failed_path: details.path ?? null,
      failed_hunk: typeof details.hunk === 'number' ? details.hunk : null,
      error_message: row.error ? deps.redact(row.error.message) : null,
      created_at: deps.clock.now(),
    });
  };

  const logFailure = async (ctx: OpContext, format: PatchFormat | 'unknown', error: unknown) => {
    const e = toSvcError(error);
    if (e.code === 'cancelled') return;
    try {
      const patchId = await log(ctx, { format, outcome: 'failed', files: [], error: e });
      const details = (e.details ?? {}) as Record<string, unknown>;
      ctx.event?.('apply_patch.failed', {
        patch_id: patchId,
        format,
        code: e.code,
        reason: details.reason ?? e.code,
        ...(details.path ? { path: details.path } : {}),
        ...(details.hunk ? { hunk: details.hunk } : {}),
      });
    } catch {
      // the log is a readout; a failure to write it must not hide the patch's own error
    }
  };

  return {
    async apply(input, ctx) {
      let format: PatchFormat | 'unknown' = detectFormat(input.patch) ?? 'unknown';
      try {
        const parsed = parsePatch(input.patch, input.path);
        format = parsed.format;
        await checkPatch(deps, parsed.files, input.path, ctx);
        const entries = [...(await planPatch(deps, parsed.files, parsed.format, ctx)).values()];
        return await commitPlan(deps, log, entries, parsed.format, ctx);
      } catch (error) {
        await logFailure(ctx, format, error);
        throw error;
      }
    },
    status: async (options = {}) => await applyPatchStatus(repo, options),
  };
}

/** The checks before anything is read: the size, the `path` given, hard claims (fail fast). */
async function checkPatch(
  deps: PatchDeps,
  files: FilePatch[],
  path: string | undefined,
  ctx: OpContext,
): Promise<void> {
  if (files.length > MAX_PATCH_FILES) {
    throw new SvcError(
      'invalid_input',
      `patch: it has ${files.length} file sections; split it into patches of at most ${MAX_PATCH_FILES}`,
      { details: { reason: 'too_many_files' } },
    );
  }
  if (path) checkPathMatches(path, files, deps.paths);
  // Fail fast on hard claims before reading and matching anything.
  const early = files.flatMap((f) => (f.kind === 'update' && f.moveTo ? [f.path, f.moveTo] : [f.path]));
  await deps.changes.guard(
    ctx.tool,
    ctx.sessionId,
    early
      .map((p) => deps.paths.resolve(p, 'patch'))
      .filter((t) => t.inside)
      .map((t) => t.rel),
  );
}

/** Writes the planned files in one commit, logs the attempt and appends it to the run. */
async function commitPlan(
  deps: PatchDeps,
  log: (ctx: OpContext, row: Attempt) => Promise<number>,
  entries: Entry[],
  format: PatchFormat,
  ctx: OpContext,
): Promise<PatchResult> {
  const pending: PendingChange[] = [];
  const planned: Entry[] = [];
  for (const entry of entries) {
    if (!entry.touched) continue;
    // A binary file can only be deleted (updates refuse it), so a binary entry here changes.
    if (!entry.binary && entry.current === (entry.disk?.toString('utf8') ?? null)) continue;
    pending.push({
      target: entry.target,
      before: entry.disk,
      after: entry.current,
      binary: entry.binary,
    });
    planned.push(entry);
  }
  const fuzzy = planned.reduce((n, e) => n + (e.hunks ?? []).filter((h) => h.fuzz !== 'exact').length, 0);
  if (pending.length === 0) {
    const patchId = await log(ctx, { format, outcome: 'applied', files: [] });
    ctx.event?.('apply_patch.applied', { patch_id: patchId, format, files: 0 });
    return {
      mode: 'apply_patch',
      patch_id: patchId,
      format,
      files: [],
      additions: 0,
      deletions: 0,
      fuzzy_hunks: 0,
      diff: '',
    };
  }
  const names = pending.map((p) => p.target.rel);
  const applied = await deps.changes.commit(pending, ctx, {
    title: `apply_patch: ${names.length} file${names.length === 1 ? '' : 's'} (${names.slice(0, 5).join(', ')}${names.length > 5 ? ', …' : ''})`,
    scope: names.length === 1 ? names[0] : undefined,
    details: {
      format,
      files: planned.map((e) => ({
        path: e.target.rel,
        change: e.disk === null ? 'create' : e.current === null ? 'delete' : 'modify',
        ...(e.movedFrom ? { moved_from: e.movedFrom } : {}),
        ...(e.movedTo ? { moved_to: e.movedTo } : {}),
      })),
    },
  });
  const files: PatchFileResult[] = applied.map((change, index) => {
    const entry = planned[index];
    return {
      path: change.path,
      change: change.change,
      ...(entry.movedFrom ? { moved_from: entry.movedFrom } : {}),
      ...(entry.movedTo ? { moved_to: entry.movedTo } : {}),
      additions: change.additions,
      deletions: change.deletions,
      history_id: change.history_id,
      ...(entry.hunks && entry.current !== null ? { hunks: entry.hunks } : {}),
    };
  });
  const additions = files.reduce((n, f) => n + f.additions, 0);
  const deletions = files.reduce((n, f) => n + f.deletions, 0);
  const patchId = await log(ctx, {
    format,
    outcome: 'applied',
    files: files.map(({ hunks: _h, ...f }) => f),
    additions,
    deletions,
    fuzzy,
  });
  ctx.event?.('apply_patch.applied', {
    patch_id: patchId,
    format,
    files: files.length,
    additions,
    deletions,
    fuzzy_hunks: fuzzy,
  });
  return {
    mode: 'apply_patch',
    patch_id: patchId,
    format,
    files,
    additions,
    deletions,
    fuzzy_hunks: fuzzy,
    diff: applied.map((a) => a.diff).join(''),
  };
}

/** With `path` given, the patch must touch that file (a bare unified diff applies to it). */
function checkPathMatches(path: string, files: FilePatch[], paths: PathResolver): void {
  const wanted = paths.resolve(path).abs;
  const touched = files.flatMap((f) => (f.kind === 'update' && f.moveTo ? [f.path, f.moveTo] : [f.path]));
  if (!touched.some((p) => paths.resolve(p, 'patch').abs === wanted)) {
    throw new SvcError(
      'invalid_input',
      `path: ${path} is not a file the patch changes (it changes ${touched.join(', ')}); leave path out, the patch names its files`,
      { details: { reason: 'path_mismatch' } },
    );
  }
}
