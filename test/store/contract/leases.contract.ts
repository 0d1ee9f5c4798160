/**
 * The workspace lease's contract (issue 18, one writer per workspace), run on SQLite and on
 * PostgreSQL by ./leases.contract.test.ts: the database decides who holds a workspace, an
 * expired hold is taken over, only the holder renews or releases, and the lease service makes a
 * second holder wait until the first releases.
 */
import { expect, it } from 'vitest';
import type { LeaseRepository } from '../../../src/workspace/lease-repository';
import { createWorkspaceLeases } from '../../../src/workspace/leases';
import { withOpened } from './fixture';

export interface LeaseFixture {
  repo: LeaseRepository;
  /** A second repository on its own connection (another node), on the same database. */
  other: LeaseRepository;
  close(): Promise<void>;
}

const claim = (holder: string, now: number, ttlMs = 1000) => ({
  workspace: '/srv/ws',
  holder,
  runId: holder === 'h-none' ? null : `run_${holder}`,
  node: `node-${holder}`,
  now,
  ttlMs,
});

export function leasesContract(open: () => Promise<LeaseFixture>) {
  const withFixture = withOpened(open, (f) => f);

  it(
    'STORE-PG-lease-1: a free workspace is taken; another holder is refused while it stands, the holder extends it',
    withFixture(async ({ repo, other }) => {
      const first = await repo.tryAcquire(claim('a', 1000));
      expect(first).toEqual({
        acquired: true,
        lease: {
          workspace: '/srv/ws',
          holder: 'a',
          runId: 'run_a',
          node: 'node-a',
          acquiredAt: 1000,
          expiresAt: 2000,
        },
      });
      const refused = await other.tryAcquire(claim('b', 1500));
      expect(refused.acquired).toBe(false);
      expect(refused.lease.holder).toBe('a');
      const again = await repo.tryAcquire(claim('a', 1800));
      expect(again.acquired).toBe(true);
      expect(again.lease).toMatchObject({ acquiredAt: 1000, expiresAt: 2800 });
      expect(await other.get('/srv/ws')).toMatchObject({ holder: 'a', expiresAt: 2800 });
      expect(await repo.get('/elsewhere')).toBeUndefined();
    }),
  );

  it(
    'STORE-PG-lease-2: an expired hold is taken over; the old holder can then neither renew nor release it',
    withFixture(async ({ repo, other }) => {
      await repo.tryAcquire(claim('a', 1000));
      const taken = await other.tryAcquire(claim('b', 2000));
      expect(taken.acquired).toBe(true);
      expect(taken.lease).toMatchObject({ holder: 'b', acquiredAt: 2000, expiresAt: 3000, node: 'node-b' });
      expect(await repo.renew('/srv/ws', 'a', 2100, 1000)).toBe(false);
      expect(await repo.release('/srv/ws', 'a')).toBe(false);
      expect(await other.renew('/srv/ws', 'b', 2500, 1000)).toBe(true);
      expect((await repo.get('/srv/ws'))?.expiresAt).toBe(3500);
      // A renewal after the hold expired does not revive it.
      expect(await other.renew('/srv/ws', 'b', 3600, 1000)).toBe(false);
      expect(await other.release('/srv/ws', 'b')).toBe(true);
      expect(await repo.get('/srv/ws')).toBeUndefined();
    }),
  );

  it(
    'STORE-PG-lease-3: holders racing for a free workspace: exactly one wins',
    withFixture(async ({ repo, other }) => {
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? other : repo).tryAcquire(claim(`h${i}`, 5000))),
      );
      const winners = results.filter((r) => r.acquired);
      expect(winners).toHaveLength(1);
      const holder = winners[0]?.lease.holder;
      for (const r of results) expect(r.lease.holder).toBe(holder);
    }),
  );

  it(
    'STORE-PG-lease-4: the lease service makes a second holder wait until the first releases, and renews while held',
    withFixture(async ({ repo, other }) => {
      const clock = { now: () => Date.now() };
      const a = createWorkspaceLeases({ repo, clock, node: 'A', ttlMs: 300, pollMs: 20 });
      const b = createWorkspaceLeases({ repo: other, clock, node: 'B', ttlMs: 300, pollMs: 20 });
      const held = await a.acquire('/srv/ws', 'run_1', { runId: 'run_1' });
      const waited: string[] = [];
      const order: string[] = [];
      const second = b
        .acquire('/srv/ws', 'run_2', { runId: 'run_2', onWait: (lease) => waited.push(lease.holder) })
        .then((h) => {
          order.push('b acquired');
          return h;
        });
      // Held past two expiries of its ttl: the renewals keep it.
      await new Promise((r) => setTimeout(r, 700));
      expect(held.lost).toBe(false);
      expect(waited).toEqual(['run_1']);
      order.push('a releases');
      await held.release();
      const h2 = await second;
      expect(order).toEqual(['a releases', 'b acquired']);
      expect(await a.current('/srv/ws')).toMatchObject({ holder: 'run_2', node: 'B', runId: 'run_2' });
      // A waiter is cancelled by its signal.
      const abort = new AbortController();
      const third = a.acquire('/srv/ws', 'run_3', { signal: abort.signal });
      abort.abort();
      await expect(third).rejects.toThrow(/cancelled while waiting for the workspace lease/);
      await h2.release();
      expect(await a.current('/srv/ws')).toBeUndefined();
    }),
  );
}
