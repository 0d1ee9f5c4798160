/**
 * The cached codebase summary (`codebase_context_cache`, one row per workspace): computed on the
 * first read, recomputed on an explicit refresh at most once per
 * `options.codebase_context.min_refresh_interval_seconds` (LIM-03: a refresh inside the interval
 * is not rerun; the answer says when the next one is allowed). Concurrent refreshes in one
 * process share one walk.
 * @module
 */
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { Clock } from '../util/ids';
import type { CachedSummaryRow, CodebaseCacheStore } from './codebase-cache-store';
import {
  type CodebaseSummary,
  computeCodebaseSummary,
  summaryPromptText,
  type WorkspaceFiles,
} from './codebase-summary';

export interface CachedSummary {
  summary: CodebaseSummary;
  computed_at: number;
  compute_ms: number;
  computations: number;
}

export interface RefreshOutcome {
  requested: boolean;
  performed: boolean;
  /** refreshed, or rate_limited (inside the minimum interval). */
  reason: 'refreshed' | 'rate_limited' | null;
  /** When a refresh may run again (ms since the epoch). */
  next_allowed_at: number | null;
  retry_after_seconds: number | null;
}

export interface CodebaseContextService {
  /** The cached summary, computing it once when there is none. Refresh obeys the interval. */
  describe(options: { refresh: boolean; signal?: AbortSignal }): Promise<{
    cached: CachedSummary;
    refresh: RefreshOutcome;
  }>;
  /** The cached summary without computing anything (undefined when none or unreadable). */
  peek(): Promise<CachedSummary | undefined>;
  /** The system-prompt section from the cached summary, or undefined. */
  promptSection(): Promise<{ source: string; text: string } | undefined>;
}

export interface CodebaseContextDeps {
  /** The summary cache (`codebase_context_cache`). */
  codebaseCache: CodebaseCacheStore;
  clock: Clock;
  config: () => Config;
  /** The workspace the summary describes (the cache key). */
  workspace: string;
  /** The file walker of that workspace. */
  ws: () => WorkspaceFiles;
}

export function createCodebaseContext(deps: CodebaseContextDeps): CodebaseContextService {
  const store = deps.codebaseCache;
  let inflight: Promise<CachedSummary> | undefined;
  /** The last prompt section: the row's text and time it was rendered from. */
  let section: { summary: string; computedAt: number; text: string } | undefined;

  const peek = async (): Promise<CachedSummary | undefined> => {
    const row = await store.get(deps.workspace);
    if (!row) return undefined;
    try {
      return {
        summary: JSON.parse(row.summary) as CodebaseSummary,
        computed_at: row.computed_at,
        compute_ms: row.compute_ms,
        computations: row.computations,
      };
    } catch {
      return undefined;
    }
  };

  const compute = (signal?: AbortSignal): Promise<CachedSummary> => {
    inflight ??= (async () => {
      const started = Date.now();
      try {
        const summary = await computeCodebaseSummary(deps.ws(), signal);
        const computedAt = deps.clock.now();
        const computeMs = Date.now() - started;
        await store.put(deps.workspace, {
          summary: JSON.stringify(summary),
          computed_at: computedAt,
          compute_ms: computeMs,
        });
        const stored = await peek();
        if (!stored) throw new SvcError('internal', 'the codebase summary was not stored');
        return stored;
      } finally {
        inflight = undefined;
      }
    })();
    return inflight;
  };

  return {
    async describe(options) {
      const intervalMs = deps.config().options.codebase_context.min_refresh_interval_seconds * 1000;
      const current = await peek();
      if (!current) {
        const cached = await compute(options.signal);
        return {
          cached,
          refresh: options.refresh
            ? {
                requested: true,
                performed: true,
                reason: 'refreshed',
                next_allowed_at: cached.computed_at + intervalMs,
                retry_after_seconds: null,
              }
            : notRequested(),
        };
      }
      if (!options.refresh) return { cached: current, refresh: notRequested() };
      const now = deps.clock.now();
      const nextAllowed = current.computed_at + intervalMs;
      if (now < nextAllowed) {
        return {
          cached: current,
          refresh: {
            requested: true,
            performed: false,
            reason: 'rate_limited',
            next_allowed_at: nextAllowed,
            retry_after_seconds: Math.ceil((nextAllowed - now) / 1000),
          },
        };
      }
      const cached = await compute(options.signal);
      return {
        cached,
        refresh: {
          requested: true,
          performed: true,
          reason: 'refreshed',
          next_allowed_at: cached.computed_at + intervalMs,
          retry_after_seconds: null,
        },
      };
    },
    async peek() {
      try {
        return await peek();
      } catch {
        return undefined;
      }
    },
    async promptSection() {
      let row: CachedSummaryRow | undefined;
      try {
        row = await store.get(deps.workspace);
      } catch {
        return undefined;
      }
      if (!row) return undefined;
      // Every run's prompt asks: the row's text is parsed and rendered again only when it changed.
      if (section?.summary !== row.summary || section.computedAt !== row.computed_at) {
        let summary: CodebaseSummary;
        try {
          summary = JSON.parse(row.summary) as CodebaseSummary;
        } catch {
          return undefined;
        }
        const text = summaryPromptText(summary, row.computed_at);
        section = { summary: row.summary, computedAt: row.computed_at, text };
      }
      return { source: 'codebase_context', text: section.text };
    },
  };
}

function notRequested(): RefreshOutcome {
  return {
    requested: false,
    performed: false,
    reason: null,
    next_allowed_at: null,
    retry_after_seconds: null,
  };
}
