/**
 * `edit` in apply_patch mode: a multi-file patch (Codex envelope or unified diff) planned against
 * a virtual copy of the files it touches, then committed in one piece through the workspace's one
 * mutation path (guards, one approval showing every file's diff, the re-check that nothing moved
 * on disk, atomic writes, file history, read tracking, `file.changed`). If any file section or
 * hunk does not apply, nothing is written. Every attempt, applied or failed, is logged for
 * `get_apply_patch_status`, and appended to the run ledger (`apply_patch.applied|failed`).
 * @module
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { SvcError, toSvcError } from '../errors';
import type { Clock } from '../util/ids';
import type { OpContext } from '../workspace/context';
import type { ChangeCommitter, PendingChange } from '../workspace/file-changes';
import { looksBinary, sha256 } from '../workspace/file-io';
import type { PathResolver, ResolvedPath } from '../workspace/paths';
import type { ReadTracker } from '../workspace/read-tracker';
import { type AppliedHunk, applyHunks, FUZZ_LEVELS } from './patch-apply';
import { detectFormat, type FilePatch, type PatchFormat, parsePatch } from './patch-parse';
import { type QualityDb, readOr } from './store';

const MAX_FILE_BYTES = 50 * 1024 * 1024;
const MAX_PATCH_FILES = 500;

export interface PatchFileResult {
  path: string;
  change: 'create' | 'modify' | 'delete';
  /** The create side of a move: where the file came from. */
  moved_from?: string;
  /** The delete side of a move: where the file went. */
  moved_to?: string;
  additions: number;
  deletions: number;
  history_id: number;
  /** Where each hunk applied and how loosely it matched (updated files). */
  hunks?: AppliedHunk[];
}

export interface PatchResult {
  mode: 'apply_patch';
  patch_id: number;
  format: PatchFormat;
  files: PatchFileResult[];
  additions: number;
  deletions: number;
  /** Hunks that matched only after ignoring whitespace or normalizing punctuation. */
  fuzzy_hunks: number;
  diff: string;
}

export interface PatchFailure {
  patch_id: number;
  at: number;
  session_id: string | null;
  run_id: string | null;
  format: PatchFormat | 'unknown';
  code: string;
  reason: string;
  path: string | null;
  hunk: number | null;
  message: string;
}

export interface ApplyPatchStatus {
  formats: { format: PatchFormat; description: string; operations: string[] }[];
  entry_point: { tool: 'edit'; mode: 'apply_patch'; field: 'patch' };
  matching: { levels: readonly string[]; order: string };
  atomic: true;
  counts: {
    total: number;
    applied: number;
    failed: number;
    files_changed: number;
    fuzzy_hunks: number;
    by_format: Record<PatchFormat | 'unknown', { applied: number; failed: number }>;
    failed_by_reason: Record<string, number>;
  };
  last_applied_at: number | null;
  last_failed_at: number | null;
  recent_failures: PatchFailure[];
}

export interface PatchService {
  apply(input: { patch: string; path?: string }, ctx: OpContext): Promise<PatchResult>;
  status(options?: { limit?: number; sessionId?: string }): ApplyPatchStatus;
}

interface Entry {
  target: ResolvedPath;
  /** On disk now; null when absent. */
  disk: Buffer | null;
  binary: boolean;
  /** After the patch sections so far; null when (to be) absent; '' stands for a binary file's content. */
  current: string | null;
  /** A patch section changed it. */
  touched: boolean;
  hunks?: AppliedHunk[];
  movedFrom?: string;
  movedTo?: string;
}

export function createPatchService(deps: {
  db: QualityDb;
  clock: Clock;
  paths: PathResolver;
  changes: ChangeCommitter;
  reads: ReadTracker;
  redact: (text: string) => string;
}): PatchService {
  const log = (
    ctx: OpContext,
    row: {
      format: PatchFormat | 'unknown';
      outcome: 'applied' | 'failed';
      files: unknown[];
      additions?: number;
      deletions?: number;
      fuzzy?: number;
      error?: SvcError;
    },
  ): number => {
    const details = (row.error?.details ?? {}) as { path?: string; hunk?: number; reason?: string };
    const info = deps.db
      .write()
      .prepare(
        `INSERT INTO apply_patch_log (session_id, run_id, format, outcome, files, file_count, additions,
           deletions, fuzzy_hunks, error_code, reason, failed_path, failed_hunk, error_message, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        ctx.sessionId ?? null,
        ctx.runId ?? null,
        row.format,
        row.outcome,
        JSON.stringify(row.files),
        row.files.length,
        row.additions ?? 0,
        row.deletions ?? 0,
        row.fuzzy ?? 0,
        row.error?.code ?? null,
        row.error ? (details.reason ?? row.error.code) : null,
        details.path ?? null,
        typeof details.hunk === 'number' ? details.hunk : null,
        row.error ? deps.redact(row.error.message) : null,
        deps.clock.now(),
      );
    return Number(info.lastInsertRowid);
  };

  const plan = (files: FilePatch[], format: PatchFormat, ctx: OpContext): Map<string, Entry> => {
    const entries = new Map<string, Entry>();
    const load = (raw: string): Entry => {
      const target = deps.paths.resolve(raw, 'patch');
      const known = entries.get(target.abs);
      if (known) return known;
      let disk: Buffer | null = null;
      if (existsSync(target.abs)) {
        const stat = statSync(target.abs);
        if (stat.isDirectory()) {
          throw new SvcError('invalid_input', `patch: ${target.rel} is a directory, not a file`, {
            details: { path: target.rel, reason: 'directory' },
          });
        }
        if (stat.size > MAX_FILE_BYTES) {
          throw new SvcError(
            'invalid_input',
            `patch: ${target.rel} is ${stat.size} bytes, more than the ${MAX_FILE_BYTES} a patch handles; change it with bash`,
            { details: { path: target.rel, reason: 'too_large' } },
          );
        }
        disk = readFileSync(target.abs);
      }
      const binary = disk !== null && looksBinary(disk);
      const entry: Entry = {
        target,
        disk,
        binary,
        current: disk === null ? null : binary ? '' : disk.toString('utf8'),
        touched: false,
      };
      entries.set(target.abs, entry);
      return entry;
    };
    const refuse = (entry: Entry, message: string, reason: string): never => {
      throw new SvcError('invalid_input', `patch: ${message}. Nothing was written`, {
        details: { path: entry.target.rel, reason },
      });
    };

    for (const file of files) {
      const entry = load(file.path);
      const rel = entry.target.rel;
      entry.touched = true;
      switch (file.kind) {
        case 'add':
          if (entry.current !== null) {
            refuse(
              entry,
              `Add File ${rel}: the file already exists; change it with an Update File section (or delete it first)`,
              'file_exists',
            );
          }
          entry.current = file.content;
          break;
        case 'delete':
          if (entry.current === null) refuse(entry, `Delete File ${rel}: no such file`, 'file_not_found');
          checkFresh(entry, ctx);
          entry.current = null;
          break;
        case 'update': {
          if (entry.current === null) {
            refuse(
              entry,
              `Update File ${rel}: no such file; create it with an Add File section`,
              'file_not_found',
            );
          }
          if (entry.binary)
            refuse(entry, `Update File ${rel}: it is a binary file and cannot be patched as text`, 'binary');
          const applied = applyHunks(rel, entry.current as string, file.hunks, format);
          entry.hunks = [...(entry.hunks ?? []), ...applied.hunks];
          if (file.moveTo) {
            const destination = load(file.moveTo);
            if (destination !== entry && destination.current !== null) {
              refuse(
                destination,
                `Move to ${destination.target.rel} (from ${rel}): the destination already exists`,
                'file_exists',
              );
            }
            entry.current = null;
            entry.movedTo = destination.target.rel;
            destination.current = applied.text;
            destination.touched = true;
            destination.movedFrom = rel;
            destination.hunks = entry.hunks;
          } else {
            entry.current = applied.text;
          }
          break;
        }
        default: {
          const never: never = file;
          throw new Error(`unknown patch section ${JSON.stringify(never)}`);
        }
      }
    }
    return entries;
  };

  const checkFresh = (entry: Entry, ctx: OpContext) => {
    // A delete checks no context: refuse it when the session saw an older version of the file.
    if (!ctx.sessionId || entry.disk === null) return;
    const record = deps.reads.get(ctx.sessionId, entry.target.rel);
    if (record && record.sha256 !== sha256(entry.disk)) {
      throw new SvcError(
        'conflict',
        `patch: Delete File ${entry.target.rel}: the file changed on disk since this session last read it; view it again before deleting it. Nothing was written`,
        { details: { path: entry.target.rel, reason: 'stale_read' } },
      );
    }
  };

  return {
    async apply(input, ctx) {
      let format: PatchFormat | 'unknown' = detectFormat(input.patch) ?? 'unknown';
      try {
        const parsed = parsePatch(input.patch, input.path);
        format = parsed.format;
        if (parsed.files.length > MAX_PATCH_FILES) {
          throw new SvcError(
            'invalid_input',
            `patch: it has ${parsed.files.length} file sections; split it into patches of at most ${MAX_PATCH_FILES}`,
            { details: { reason: 'too_many_files' } },
          );
        }
        if (input.path) checkPathMatches(input.path, parsed.files, deps.paths);
        // Fail fast on hard claims before reading and matching anything.
        const early = parsed.files.flatMap((f) =>
          f.kind === 'update' && f.moveTo ? [f.path, f.moveTo] : [f.path],
        );
        deps.changes.guard(
          ctx.tool,
          ctx.sessionId,
          early
            .map((p) => deps.paths.resolve(p, 'patch'))
            .filter((t) => t.inside)
            .map((t) => t.rel),
        );

        const entries = [...plan(parsed.files, parsed.format, ctx).values()];
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
        const fuzzy = planned.reduce(
          (n, e) => n + (e.hunks ?? []).filter((h) => h.fuzz !== 'exact').length,
          0,
        );
        if (pending.length === 0) {
          const patchId = log(ctx, { format: parsed.format, outcome: 'applied', files: [] });
          ctx.event?.('apply_patch.applied', { patch_id: patchId, format: parsed.format, files: 0 });
          return {
            mode: 'apply_patch',
            patch_id: patchId,
            format: parsed.format,
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
            format: parsed.format,
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
        const patchId = log(ctx, {
          format: parsed.format,
          outcome: 'applied',
          files: files.map(({ hunks: _h, ...f }) => f),
          additions,
          deletions,
          fuzzy,
        });
        ctx.event?.('apply_patch.applied', {
          patch_id: patchId,
          format: parsed.format,
          files: files.length,
          additions,
          deletions,
          fuzzy_hunks: fuzzy,
        });
        return {
          mode: 'apply_patch',
          patch_id: patchId,
          format: parsed.format,
          files,
          additions,
          deletions,
          fuzzy_hunks: fuzzy,
          diff: applied.map((a) => a.diff).join(''),
        };
      } catch (error) {
        const e = toSvcError(error);
        if (e.code !== 'cancelled') {
          try {
            const patchId = log(ctx, { format, outcome: 'failed', files: [], error: e });
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
        }
        throw error;
      }
    },

    status(options = {}) {
      const limit = options.limit ?? 5;
      const empty = { applied: 0, failed: 0 };
      const counts: ApplyPatchStatus['counts'] = {
        total: 0,
        applied: 0,
        failed: 0,
        files_changed: 0,
        fuzzy_hunks: 0,
        by_format: { codex: { ...empty }, unified: { ...empty }, unknown: { ...empty } },
        failed_by_reason: {},
      };
      const where = options.sessionId ? 'WHERE session_id = ?' : '';
      const params = options.sessionId ? [options.sessionId] : [];
      const rows = readOr(
        deps.db,
        [] as AggregateRow[],
        (db) =>
          db
            .prepare(
              `SELECT format, outcome, reason, count(*) AS n, sum(file_count) AS files, sum(fuzzy_hunks) AS fuzzy,
               max(created_at) AS last FROM apply_patch_log ${where} GROUP BY format, outcome, reason`,
            )
            .all(...params) as AggregateRow[],
      );
      let lastApplied: number | null = null;
      let lastFailed: number | null = null;
      for (const row of rows) {
        const format = (row.format in counts.by_format ? row.format : 'unknown') as PatchFormat | 'unknown';
        counts.total += row.n;
        if (row.outcome === 'applied') {
          counts.applied += row.n;
          counts.by_format[format].applied += row.n;
          counts.files_changed += row.files ?? 0;
          counts.fuzzy_hunks += row.fuzzy ?? 0;
          lastApplied = Math.max(lastApplied ?? 0, row.last);
        } else {
          counts.failed += row.n;
          counts.by_format[format].failed += row.n;
          const reason = row.reason ?? 'unknown';
          counts.failed_by_reason[reason] = (counts.failed_by_reason[reason] ?? 0) + row.n;
          lastFailed = Math.max(lastFailed ?? 0, row.last);
        }
      }
      const failures = readOr(
        deps.db,
        [] as FailureRow[],
        (db) =>
          db
            .prepare(
              `SELECT * FROM apply_patch_log WHERE outcome = 'failed' ${options.sessionId ? 'AND session_id = ?' : ''}
             ORDER BY id DESC LIMIT ?`,
            )
            .all(...params, limit) as FailureRow[],
      );
      return {
        formats: [
          {
            format: 'codex',
            description:
              '*** Begin Patch … *** End Patch with *** Add File:, *** Update File: (optional *** Move to:, @@ [context] hunks, *** End of File) and *** Delete File: sections',
            operations: ['add', 'update', 'delete', 'move'],
          },
          {
            format: 'unified',
            description:
              'unified diff: optional diff --git headers (new/deleted file mode, rename from/to), --- a/<path> and +++ b/<path> (/dev/null to create or delete), @@ -l,c +l,c @@ hunks, \\ No newline at end of file',
            operations: ['add', 'update', 'delete', 'rename'],
          },
        ],
        entry_point: { tool: 'edit', mode: 'apply_patch', field: 'patch' },
        matching: {
          levels: FUZZ_LEVELS,
          order:
            'hunks apply in file order; each is matched exactly first, then ignoring trailing whitespace, then indentation, then with typographic punctuation normalized; a Codex @@ context line is found first, a unified @@ -l picks the nearest match',
        },
        atomic: true,
        counts,
        last_applied_at: lastApplied,
        last_failed_at: lastFailed,
        recent_failures: failures.map((row) => ({
          patch_id: row.id,
          at: row.created_at,
          session_id: row.session_id,
          run_id: row.run_id,
          format: row.format as PatchFormat | 'unknown',
          code: row.error_code ?? 'internal',
          reason: row.reason ?? 'unknown',
          path: row.failed_path,
          hunk: row.failed_hunk,
          message: row.error_message ?? '',
        })),
      };
    },
  };
}

interface AggregateRow {
  format: string;
  outcome: 'applied' | 'failed';
  reason: string | null;
  n: number;
  files: number | null;
  fuzzy: number | null;
  last: number;
}

interface FailureRow {
  id: number;
  session_id: string | null;
  run_id: string | null;
  format: string;
  error_code: string | null;
  reason: string | null;
  failed_path: string | null;
  failed_hunk: number | null;
  error_message: string | null;
  files: string;
  created_at: number;
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
