/**
 * The recommendation outcome ledger: whenever the runtime recommends something to the operator it
 * records the recommendation with its signal zone; later evidence sets the outcome (followed,
 * dismissed, expired). Read by the operator cognition readout.
 * @module
 */
import { createHash } from 'node:crypto';
import { memoByDataVersion } from '../../store/data-version';
import type { Db } from '../../store/db';
import { createChangeQueue } from '../../util/change-queue';
import type { Clock, Ids } from '../../util/ids';

export const COGNITION_ZONES = [
  'token_pressure',
  'loop_detection',
  'permission_policy',
  'compaction',
  'provider_recovery',
] as const;
export type CognitionZone = (typeof COGNITION_ZONES)[number];
export type Outcome = 'pending' | 'followed' | 'dismissed' | 'expired';

export interface Recommendation {
  id: string;
  zone: CognitionZone;
  kind: string;
  recommended_at: number;
  session_id: string | null;
  run_id: string | null;
  payload_digest: string;
  outcome: Outcome;
  outcome_at: number | null;
  evidence: Record<string, unknown>;
  window_seconds: number;
}

export interface RecordInput {
  zone: CognitionZone;
  kind: string;
  session_id?: string | null;
  run_id?: string | null;
  /** What was recommended, digested (never stored verbatim). */
  payload: unknown;
  window_seconds: number;
  evidence?: Record<string, unknown>;
}

export interface PendingFilter {
  session_id?: string;
  zone?: CognitionZone;
  kind?: string;
}

/**
 * `recommendations` (issue 18: async; PostgreSQL twin ./pg-recommendation-store.ts). The ledger
 * (below) runs its changes in order over it.
 */
export interface RecommendationRepository {
  record(input: RecordInput): Promise<Recommendation>;
  /** Sets the outcome of a pending recommendation; returns false if it was already closed. */
  close(
    id: string,
    outcome: Exclude<Outcome, 'pending'>,
    evidence?: Record<string, unknown>,
  ): Promise<boolean>;
  /** Oldest first. */
  pending(filter?: PendingFilter): Promise<Recommendation[]>;
  /**
   * Whether any recommendation matching `filter` is pending, answered at once where the store can
   * (SQLite: its kept pending rows, checked against `data_version`); undefined where it cannot
   * (PostgreSQL).
   */
  anyPendingNow?(filter: PendingFilter): boolean | undefined;
  /** Newest first, within the calibration window (days and max count, whichever is smaller). */
  window(options: { since: number; max: number; zone?: string }): Promise<Recommendation[]>;
  get(id: string): Promise<Recommendation | undefined>;
  /** Marks pending recommendations whose window passed as expired. */
  expire(): Promise<number>;
  /** When the first pending recommendation's window ends (ms); null when none is pending. */
  nextExpiry(): Promise<number | null>;
}

/**
 * The recommendation outcome ledger. Its changes run one at a time in call order (the recorder,
 * a sync bus listener, queues one step per event); its reads wait for the changes called before
 * them, so "recorded once" checks see every earlier record.
 */
export interface RecommendationLedger extends RecommendationRepository {
  /** Several reads and writes as one step in the ledger's order (no other change in between). */
  serial<T>(step: (store: RecommendationRepository) => Promise<T>): Promise<T>;
  /** Resolves once every change called so far is applied (or has failed). */
  flush(): Promise<void>;
  /**
   * No change is queued and a sweep now would expire nothing (`dueSweeps`; never without a
   * clock): a signal whose only step is the sweep has nothing to do.
   */
  quiet(): boolean;
  /**
   * `quiet()`, and the store answers at once that nothing matching `filter` is pending: a signal
   * whose rule would only follow such recommendations (then sweep) has nothing to do.
   */
  nonePending(filter: PendingFilter): boolean;
}

export function createRecommendationLedger(deps: {
  store: RecommendationRepository;
  /** With a clock, `expire` sweeps only when a window can have ended (`dueSweeps`). */
  clock?: Clock;
}): RecommendationLedger {
  const swept = deps.clock ? dueSweeps(deps.store, deps.clock) : undefined;
  const store = swept ?? deps.store;
  const { serial, settled, flush, idle } = createChangeQueue();
  return {
    quiet: () => swept !== undefined && idle() && !swept.due(),
    nonePending: (filter) =>
      swept !== undefined && idle() && !swept.due() && store.anyPendingNow?.(filter) === false,
    record: (input) => serial(() => store.record(input)),
    close: (id, outcome, evidence) => serial(() => store.close(id, outcome, evidence)),
    expire: () => serial(() => store.expire()),
    nextExpiry: () => settled(() => store.nextExpiry()),
    pending: (filter) => settled(() => store.pending(filter)),
    window: (options) => settled(() => store.window(options)),
    get: (id) => settled(() => store.get(id)),
    serial: (step) => serial(() => step(store)),
    flush,
  };
}

/** The shortest window svc records a recommendation with (the recorder, the health follow-ons). */
const SHORTEST_WINDOW_MS = 3600 * 1000;

/**
 * `store` whose `expire` skips the sweep (a statement, run after every signal the recorder
 * handles) while no pending recommendation's window can have ended: until the first pending
 * one's end as of the last sweep (`nextExpiry`), at most an hour on (what another process records
 * meanwhile has a window of an hour or more), or earlier when something recorded here ends
 * earlier. A skipped sweep would have expired nothing, so `expire` answers the same.
 */
function dueSweeps(
  store: RecommendationRepository,
  clock: Clock,
): RecommendationRepository & { due(): boolean } {
  let nothingExpiresUntil = 0;
  return {
    ...store,
    /** Whether `expire` now would sweep. */
    due: () => clock.now() > nothingExpiresUntil,
    async record(input) {
      const recorded = await store.record(input);
      nothingExpiresUntil = Math.min(
        nothingExpiresUntil,
        recorded.recommended_at + recorded.window_seconds * 1000,
      );
      return recorded;
    },
    async expire() {
      const now = clock.now();
      if (now <= nothingExpiresUntil) return 0;
      const expired = await store.expire();
      const next = (await store.nextExpiry()) ?? Number.POSITIVE_INFINITY;
      nothingExpiresUntil = Math.min(next, now + SHORTEST_WINDOW_MS);
      return expired;
    },
  };
}

interface Row extends Omit<Recommendation, 'evidence'> {
  evidence: string;
}

/** What was recommended, digested (never stored verbatim). */
export function payloadDigest(payload: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(payload ?? null))
    .digest('hex')
    .slice(0, 16);
}

export const toRecommendation = (row: Row): Recommendation => ({
  ...row,
  evidence: JSON.parse(row.evidence),
});

/** The pending filter applied to rows read oldest first (shared by both backends). */
export function matchesPending(filter: PendingFilter): (r: Recommendation) => boolean {
  return (r) =>
    (!filter.session_id || r.session_id === filter.session_id) &&
    (!filter.zone || r.zone === filter.zone) &&
    (!filter.kind || r.kind === filter.kind);
}

const matchesRow = (filter: PendingFilter, r: Row) =>
  (!filter.session_id || r.session_id === filter.session_id) &&
  (!filter.zone || r.zone === filter.zone) &&
  (!filter.kind || r.kind === filter.kind);

export function createRecommendationRepository(deps: {
  db: () => Db;
  clock: Clock;
  ids: Ids;
}): RecommendationRepository {
  const toRec = toRecommendation;
  // Every pending row, oldest first, kept while no other connection committed and this process
  // wrote no recommendation (issue 17 item 3: the recorder asks at each session's creation and
  // each run's start); a filter picks from it the rows, in the order, its own statement returns.
  const pendingRows = memoByDataVersion(
    deps.db,
    (_all: 'pending') =>
      deps
        .db()
        .prepare("SELECT * FROM recommendations WHERE outcome = 'pending' ORDER BY recommended_at, id")
        .all() as Row[],
  );
  const get = (id: string) => {
    const row = deps.db().prepare('SELECT * FROM recommendations WHERE id = ?').get(id) as Row | undefined;
    return row ? toRec(row) : undefined;
  };
  return {
    async record(input) {
      const id = deps.ids.next('rec');
      pendingRows.invalidate();
      deps
        .db()
        .prepare(
          `INSERT INTO recommendations (id, zone, kind, recommended_at, session_id, run_id, payload_digest, evidence, window_seconds)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          id,
          input.zone,
          input.kind,
          deps.clock.now(),
          input.session_id ?? null,
          input.run_id ?? null,
          payloadDigest(input.payload),
          JSON.stringify(input.evidence ?? {}),
          input.window_seconds,
        );
      return get(id) as Recommendation;
    },
    async close(id, outcome, evidence) {
      const current = get(id);
      if (current?.outcome !== 'pending') return false;
      pendingRows.invalidate();
      deps
        .db()
        .prepare(
          "UPDATE recommendations SET outcome = ?, outcome_at = ?, evidence = ? WHERE id = ? AND outcome = 'pending'",
        )
        .run(outcome, deps.clock.now(), JSON.stringify({ ...current.evidence, ...evidence }), id);
      return true;
    },
    anyPendingNow(filter) {
      for (const row of pendingRows.get('pending')) if (matchesRow(filter, row)) return true;
      return false;
    },
    async pending(filter = {}) {
      const matches = (r: Row) => matchesRow(filter, r);
      // One loop, not filter then map: an empty list from TurboFan's inlined `filter` has another
      // map than the builtin's, and the `map` after it deopted the optimized caller once (p-jit).
      const found: Recommendation[] = [];
      for (const row of pendingRows.get('pending')) if (matches(row)) found.push(toRec(row));
      return found;
    },
    async window(options) {
      const rows = (
        options.zone
          ? deps
              .db()
              .prepare(
                'SELECT * FROM recommendations WHERE recommended_at >= ? AND zone = ? ORDER BY recommended_at DESC, id DESC LIMIT ?',
              )
              .all(options.since, options.zone, options.max)
          : deps
              .db()
              .prepare(
                'SELECT * FROM recommendations WHERE recommended_at >= ? ORDER BY recommended_at DESC, id DESC LIMIT ?',
              )
              .all(options.since, options.max)
      ) as Row[];
      return rows.map(toRec);
    },
    get: async (id) => get(id),
    async expire() {
      pendingRows.invalidate();
      return deps
        .db()
        .prepare(
          "UPDATE recommendations SET outcome = 'expired', outcome_at = ? WHERE outcome = 'pending' AND recommended_at + window_seconds * 1000 < ?",
        )
        .run(deps.clock.now(), deps.clock.now()).changes;
    },
    async nextExpiry() {
      const row = deps
        .db()
        .prepare(
          "SELECT min(recommended_at + window_seconds * 1000) AS at FROM recommendations WHERE outcome = 'pending'",
        )
        .get() as { at: number | null } | undefined;
      return row?.at ?? null;
    },
  };
}
