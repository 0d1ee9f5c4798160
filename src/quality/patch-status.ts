/**
 * `get_apply_patch_status`: the formats apply_patch takes, how hunks match, and what the log of
 * attempts says (counts, failures by reason, the latest failures).
 * @module
 */
import { FUZZ_LEVELS } from './patch-apply';
import type { PatchLogRepository } from './patch-log-repository';
import type { PatchFormat } from './patch-parse';
import type { ApplyPatchStatus } from './patch-types';

const FORMATS: ApplyPatchStatus['formats'] = [
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
];

export async function applyPatchStatus(
  repo: Pick<PatchLogRepository, 'aggregates' | 'recentFailures'>,
  options: { limit?: number; sessionId?: string },
): Promise<ApplyPatchStatus> {
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
  let lastApplied: number | null = null;
  let lastFailed: number | null = null;
  for (const row of await repo.aggregates(options.sessionId)) {
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
  const failures = await repo.recentFailures(options.sessionId, limit);
  return {
    formats: FORMATS.map((format) => ({ ...format, operations: [...format.operations] })),
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
}
