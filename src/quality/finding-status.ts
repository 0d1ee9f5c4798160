/**
 * The finding lifecycle's status readout: counts per state, active findings per kind, the open
 * ones, the log's size and where findings come from.
 * @module
 */
import type { FindingRepository } from './finding-repository';
import type { Finding, FindingKind, FindingLifecycleStatus, FindingState } from './finding-types';

/** Open findings not observed again for this long go stale (swept when a run finishes). */
export const STALE_AFTER_MS = 7 * 24 * 3600 * 1000;

export const ACTIVE: FindingState[] = ['open', 'acknowledged'];

const SOURCES: FindingLifecycleStatus['sources'] = [
  {
    kind: 'check',
    observed_from:
      'bash runs of test, lint and typecheck commands (npm test, vitest, pytest, go test, cargo test, tsc, eslint, biome…) that exit non-zero',
    fixed_by:
      'a later passing run of the same check (or of the same tool with fewer arguments) in the same directory',
  },
  {
    kind: 'diagnostic',
    observed_from: 'errors the diagnostics tool reports',
    fixed_by: 'a later complete diagnostics run of the file that no longer reports the error',
  },
  {
    kind: 'reported',
    observed_from: 'the finding tool (action report)',
    fixed_by: 'finding action resolve, or a passing run of the check given with the report',
  },
];

export async function findingStatus(
  repo: Pick<FindingRepository, 'countsByStateAndKind' | 'logSummary'>,
  listActive: (sessionId: string | undefined, limit: number) => Promise<Finding[]>,
  options: { limit?: number; sessionId?: string },
): Promise<FindingLifecycleStatus> {
  const counts = { open: 0, acknowledged: 0, fixed: 0, waived: 0, stale: 0, total: 0 };
  const active: Record<FindingKind, number> = { check: 0, diagnostic: 0, reported: 0 };
  for (const row of await repo.countsByStateAndKind(options.sessionId)) {
    counts[row.state] += row.n;
    counts.total += row.n;
    if (ACTIVE.includes(row.state)) active[row.kind] += row.n;
  }
  const log = await repo.logSummary(options.sessionId);
  return {
    counts,
    active_by_kind: active,
    open: await listActive(options.sessionId, options.limit ?? 20),
    events_total: log.n,
    last_event_at: log.last,
    stale_after_hours: Math.round(STALE_AFTER_MS / 3_600_000),
    sources: SOURCES.map((source) => ({ ...source })),
  };
}
