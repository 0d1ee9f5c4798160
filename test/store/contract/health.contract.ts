/**
 * The health activation store's contract (issue 18): what every backend's `health_activations`
 * answers, run on SQLite and on PostgreSQL by ./health.contract.test.ts. Pins: a row round-trips
 * (actions parsed, event_published a boolean, nulls kept, a fractional ratio); list is newest
 * first (ties in creation order, newest first), filtered by session and since, limited (50 by
 * default).
 */
import { expect, it } from 'vitest';
import type { ActivationStore, HealthActivation } from '../../../src/health/activation-store';
import { withOpened } from './fixture';

export type OpenActivationStore = () => Promise<{ store: ActivationStore; close: () => Promise<void> }>;

export function activationStoreContract(open: OpenActivationStore): void {
  const withStore = withOpened(open, (f) => f.store);

  const activation = (n: number, over: Partial<HealthActivation> = {}): HealthActivation => ({
    id: `hfa_${String(n).padStart(4, '0')}`,
    session_id: 's1',
    run_id: 'run_1',
    signal: 'token_pressure',
    rule_id: 'token_pressure.compact',
    outcome: 'dispatched',
    actions: ['compact'],
    actions_planned: 1,
    actions_run: 1,
    reason: null,
    ratio: 0.62,
    event_published: true,
    created_at: 1000 + n,
    ...over,
  });

  it(
    'STORE-PG-health: an activation round-trips with parsed actions, a boolean flag and its nulls',
    withStore(async (store) => {
      expect(await store.list()).toEqual([]);
      const skipped = activation(1, {
        run_id: null,
        outcome: 'skipped',
        actions: ['compact', 'summarize'],
        actions_planned: 2,
        actions_run: 0,
        reason: 'session_hour_cap',
        ratio: null,
        event_published: false,
      });
      await store.insert(skipped);
      await store.insert(activation(2));
      expect(await store.list()).toEqual([activation(2), skipped]);
    }),
  );

  it(
    'STORE-PG-health: list is newest first (ties newest id first), by session, since and limit',
    withStore(async (store) => {
      await store.insert(activation(1, { created_at: 500 }));
      await store.insert(activation(2, { created_at: 700, session_id: 's2' }));
      await store.insert(activation(3, { created_at: 700 }));
      await store.insert(activation(4, { created_at: 600 }));
      const ids = (rows: HealthActivation[]) => rows.map((r) => r.id);
      expect(ids(await store.list())).toEqual(['hfa_0003', 'hfa_0002', 'hfa_0004', 'hfa_0001']);
      expect(ids(await store.list({ sessionId: 's1' }))).toEqual(['hfa_0003', 'hfa_0004', 'hfa_0001']);
      expect(ids(await store.list({ since: 600 }))).toEqual(['hfa_0003', 'hfa_0002', 'hfa_0004']);
      expect(ids(await store.list({ sessionId: 's1', since: 600, limit: 1 }))).toEqual(['hfa_0003']);
      expect(await store.list({ sessionId: 'nobody' })).toEqual([]);
      for (let n = 10; n < 70; n++) await store.insert(activation(n));
      expect(await store.list()).toHaveLength(50);
    }),
  );
}
