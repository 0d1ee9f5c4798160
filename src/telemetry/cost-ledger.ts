/**
 * The cost ledger: every model call svc makes, whatever asked for it (agent and sub-agent steps,
 * compat turns, compaction, summaries), with its provider, model, purpose, tokens and catalog
 * cost. It answers `svc stats --by purpose|model|day`, the TUI status line and the `[budget]`
 * check that stops new runs once a session's or the day's spend reaches its limit.
 * @module
 */
import type { BudgetConfig } from '../config/schema';
import type { CallPurpose, ModelCallEnd, ModelCallStart } from '../providers/types';
import type { TrailingInsert } from '../store/preceding-write';
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

/**
 * A run's step call held for the statement of its step's end (PostgreSQL, issue 18 item 6,
 * p-pgfirst): the `model_calls` row of a run's step was an INSERT of its own at the model's
 * `finish`, a round trip right before the step end's (or the tool's `tool.started`). Held, it rides
 * in the step end's statement (`take`); the run writes it alone before a tool starts (`flush`, so
 * it is never held across a tool's run) and at its end (`release`). One row at a time: a second
 * call while one is held (a compaction, a retry) is inserted at once, as before.
 */
export interface HeldCalls {
  /**
   * The held row as an insert for the next statement, taken (undefined: none held); `after()` once
   * that statement answered or failed: when it did not write the row (`wrote()` untold), it is
   * inserted alone.
   */
  take(): { insert: TrailingInsert; after(): Promise<void> } | undefined;
  /** Inserts what is held, alone (undefined when nothing is held). Throws the insert's error. */
  flush(): Promise<void> | undefined;
  /** `flush`, then holds no more for the run. */
  release(): Promise<void>;
}

export interface CostLedger {
  /** The call's row, inserted (or held, when its run holds its step calls: `hold`). */
  record(start: ModelCallStart, end: ModelCallEnd): Promise<ModelCallRow>;
  /** Holds the run's step calls (`HeldCalls`); undefined where rows cannot ride (SQLite). */
  hold(runId: string): HeldCalls | undefined;
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

/** The calls a run's step makes (a compaction's or a summary's is inserted at once). */
const STEP_CALLS: ReadonlySet<CallPurpose> = new Set<CallPurpose>(['agent_step', 'subagent', 'compat']);

export function createCostLedger(deps: CostLedgerDeps): CostLedger {
  const { store, clock } = deps;
  /** Runs that hold their step calls: the held row, if any. */
  const held = new Map<string, ModelCallRow | undefined>();
  const insertWrite = store.insertWrite?.bind(store);
  return {
    hold(runId) {
      if (!insertWrite) return undefined;
      held.set(runId, undefined);
      const flush = () => {
        const row = held.get(runId);
        if (!row) return undefined;
        held.set(runId, undefined);
        return store.insert(row);
      };
      return {
        take() {
          const row = held.get(runId);
          if (!row) return undefined;
          held.set(runId, undefined);
          let wrote = false;
          return {
            insert: insertWrite(row, () => {
              wrote = true;
            }),
            after: async () => {
              if (!wrote) await store.insert(row);
            },
          };
        },
        flush,
        async release() {
          try {
            await flush();
          } finally {
            held.delete(runId);
          }
        },
      };
    },
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
      const runId = start.run_id;
      if (runId !== null && STEP_CALLS.has(start.purpose) && held.has(runId) && !held.get(runId)) {
        held.set(runId, row);
        return row;
      }
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
