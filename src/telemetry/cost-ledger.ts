/**
 * The cost ledger: every model call svc makes, whatever asked for it (agent and sub-agent steps,
 * compat turns, compaction, summaries), with its provider, model, purpose, tokens and catalog
 * cost. It answers `svc stats --by purpose|model|day`, the TUI status line and the `[budget]`
 * check that stops new runs once a session's or the day's spend reaches its limit.
 * @module
 */
import type { BudgetConfig } from '../config/schema';
import type { ModelCallEnd, ModelCallStart } from '../providers/types';
import type { Clock, Ids } from '../util/ids';
import type { ModelCallRow, ModelCallStore, StatsKey, StatsRow, Totals } from './model-call-store';

export interface CostLedgerDeps {
  store: ModelCallStore;
  clock: Clock;
  ids: Ids;
  budget: () => BudgetConfig;
}

export interface StatsReport {
  by: StatsKey;
  window_days: number;
  since: string;
  rows: StatsRow[];
  totals: Totals & { errors: number };
}

/** A `[budget]` limit that is reached. */
export interface BudgetSpent {
  scope: 'session' | 'day';
  spent: number;
  limit: number;
  sessionId: string;
  day: string;
}

export interface CostLedger {
  record(start: ModelCallStart, end: ModelCallEnd): Promise<ModelCallRow>;
  stats(by: StatsKey, days: number): Promise<StatsReport>;
  /** Spend of a session (every call made for it) and of today (UTC). */
  spend(sessionId?: string): Promise<{ session: Totals | null; today: Totals; day: string }>;
  calls(filter: { sessionId?: string; runId?: string; limit?: number }): Promise<ModelCallRow[]>;
  /** The first `[budget]` limit this session or today has reached, if any. */
  spent(sessionId: string): Promise<BudgetSpent | undefined>;
}

/** The last day asked for: every model call asks, and calls cluster in one day (issue 17). */
let lastDay = { from: 0, to: 0, day: '' };
export const utcDay = (ms: number): string => {
  if (ms >= lastDay.from && ms < lastDay.to) return lastDay.day;
  const day = new Date(ms).toISOString().slice(0, 10);
  if (Number.isFinite(ms)) {
    const from = Math.floor(ms / 86_400_000) * 86_400_000;
    lastDay = { from, to: from + 86_400_000, day };
  }
  return day;
};

export function createCostLedger(deps: CostLedgerDeps): CostLedger {
  const { store, clock } = deps;
  return {
    async record(start, end) {
      const at = clock.now();
      const row: ModelCallRow = {
        id: deps.ids.next('mc'),
        at,
        day: utcDay(at),
        session_id: start.session_id,
        run_id: start.run_id,
        provider: end.provider,
        model: end.model,
        purpose: start.purpose,
        input_tokens: end.input_tokens,
        output_tokens: end.output_tokens,
        reasoning_tokens: end.reasoning_tokens,
        cached_input_tokens: end.cached_input_tokens,
        cost: end.cost,
        ttft_ms: end.ttft_ms,
        duration_ms: end.duration_ms,
        status: end.status,
      };
      await store.insert(row);
      return row;
    },
    async stats(by, days) {
      const since = startOfDay(clock.now()) - (days - 1) * 86_400_000;
      const rows = await store.stats(by, since);
      const totals = rows.reduce(
        (t, r) => ({
          calls: t.calls + r.calls,
          errors: t.errors + r.errors,
          input_tokens: t.input_tokens + r.input_tokens,
          output_tokens: t.output_tokens + r.output_tokens,
          cost: t.cost + r.cost,
        }),
        { calls: 0, errors: 0, input_tokens: 0, output_tokens: 0, cost: 0 },
      );
      return { by, window_days: days, since: utcDay(since), rows, totals };
    },
    async spend(sessionId) {
      const day = utcDay(clock.now());
      return {
        session: sessionId ? await store.totals({ sessionId }) : null,
        today: await store.totals({ day }),
        day,
      };
    },
    async calls(filter) {
      return await store.list({
        sessionId: filter.sessionId,
        runId: filter.runId,
        limit: filter.limit ?? 1000,
      });
    },
    async spent(sessionId) {
      const budget = deps.budget();
      if (budget.session_usd === undefined && budget.daily_usd === undefined) return undefined;
      const day = utcDay(clock.now());
      if (budget.session_usd !== undefined) {
        const spent = (await store.totals({ sessionId })).cost;
        if (spent >= budget.session_usd)
          return { scope: 'session', spent, limit: budget.session_usd, sessionId, day };
      }
      if (budget.daily_usd !== undefined) {
        const spent = (await store.totals({ day })).cost;
        if (spent >= budget.daily_usd)
          return { scope: 'day', spent, limit: budget.daily_usd, sessionId, day };
      }
      return undefined;
    },
  };
}

function startOfDay(ms: number): number {
  return Date.parse(`${utcDay(ms)}T00:00:00.000Z`);
}
