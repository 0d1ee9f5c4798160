/**
 * The coordination repositories' contract (issue 18): what every backend's `workspace_claims`,
 * `claim_negotiations` and `workspace_markers` answer, run on SQLite and on PostgreSQL by
 * ./coordination.contract.test.ts. Pins: a claim round-trips (paths as the JSON text written,
 * nulls kept), active claims oldest first without the released and expired ones, list newest
 * first (or every state), renew and release; markers round-trip, open ones newest first
 * (never-expiring included), delete; and two nodes acquiring overlapping hard claims at once:
 * exactly one wins, the other gets a `conflict`.
 */
import { expect, it } from 'vitest';
import type { ClaimRepository, ClaimRow } from '../../../src/coordination/claim-repository';
import { createClaimService } from '../../../src/coordination/claims';
import type { Marker, MarkerRepository } from '../../../src/coordination/marker-repository';
import { createSequentialIds } from '../../../src/util/ids';
import { tmpWorkspace } from '../../helpers/tmp-workspace';
import { withOpened } from './fixture';

export interface CoordinationFixture {
  claims: ClaimRepository;
  markers: MarkerRepository;
  /** Claims of another node (SQLite: another service of this process), on the same database. */
  otherClaims: ClaimRepository;
  close(): Promise<void>;
}

const claimRow = (id: string, createdAt: number, patch: Partial<ClaimRow> = {}) => ({
  id,
  session_id: 'ses_a',
  paths: JSON.stringify(['src/']),
  mode: 'hard' as const,
  reason: '',
  created_at: createdAt,
  renewed_at: createdAt,
  expires_at: createdAt + 10_000,
  ...patch,
});

const marker = (id: string, createdAt: number, expiresAt: number | null): Marker => ({
  id,
  session_id: 'ses_a',
  path: 'src/a.ts',
  kind: 'note',
  message: `note ${id}`,
  created_at: createdAt,
  expires_at: expiresAt,
});

export function coordinationContract(open: () => Promise<CoordinationFixture>): void {
  const withFixture = withOpened(open, (f) => f);

  it(
    'STORE-PG-coord: claims round-trip; active oldest first without released or expired; list newest first',
    withFixture(async ({ claims }) => {
      await claims.insert(
        claimRow('clm_1', 100, { reason: 'refactor', paths: JSON.stringify(['a/', 'b.ts']) }),
      );
      await claims.insert(claimRow('clm_2', 200, { mode: 'soft' }));
      await claims.insert(claimRow('clm_3', 300, { expires_at: 1_000 }));
      await claims.insert(claimRow('clm_4', 400));
      expect(await claims.get('clm_1')).toEqual({
        ...claimRow('clm_1', 100, { reason: 'refactor', paths: JSON.stringify(['a/', 'b.ts']) }),
        released_at: null,
        release_reason: null,
      });
      expect(await claims.get('clm_missing')).toBeUndefined();
      await claims.release('clm_4', 500, 'done');
      expect(await claims.get('clm_4')).toMatchObject({ released_at: 500, release_reason: 'done' });
      const ids = (rows: ClaimRow[]) => rows.map((r) => r.id);
      expect(ids(await claims.active(2_000))).toEqual(['clm_1', 'clm_2']);
      expect(ids(await claims.list({ now: 2_000, includeInactive: false }))).toEqual(['clm_2', 'clm_1']);
      expect(ids(await claims.list({ now: 2_000, includeInactive: true }))).toEqual([
        'clm_4',
        'clm_3',
        'clm_2',
        'clm_1',
      ]);
      await claims.renew('clm_3', 2_500, 20_000);
      expect(await claims.get('clm_3')).toMatchObject({ renewed_at: 2_500, expires_at: 20_000 });
      expect(ids(await claims.active(2_000))).toEqual(['clm_1', 'clm_2', 'clm_3']);
      await claims.insertNegotiation({
        id: 'neg_1',
        claim_id: 'clm_1',
        from_session_id: 'ses_b',
        message: 'please',
        created_at: 600,
        outcome: 'pending',
      });
    }),
  );

  it(
    'STORE-PG-coord: markers round-trip; open ones newest first, never-expiring included; delete',
    withFixture(async ({ markers }) => {
      await markers.insert(marker('mrk_1', 100, null));
      await markers.insert(marker('mrk_2', 200, 1_000));
      await markers.insert(marker('mrk_3', 300, 5_000));
      expect(await markers.get('mrk_1')).toEqual(marker('mrk_1', 100, null));
      expect(await markers.get('mrk_missing')).toBeUndefined();
      expect((await markers.open(2_000)).map((m) => m.id)).toEqual(['mrk_3', 'mrk_1']);
      expect((await markers.open(500)).map((m) => m.id)).toEqual(['mrk_3', 'mrk_2', 'mrk_1']);
      await markers.delete('mrk_3');
      await markers.delete('mrk_3');
      expect((await markers.open(500)).map((m) => m.id)).toEqual(['mrk_2', 'mrk_1']);
    }),
  );

  it(
    'STORE-PG-coord: two nodes acquire overlapping hard claims at once; exactly one wins',
    withFixture(async ({ claims, otherClaims }) => {
      const workspace = tmpWorkspace();
      const ids = createSequentialIds();
      const service = (repo: ClaimRepository) =>
        createClaimService({
          claims: repo,
          workspace,
          clock: { now: () => 1_000 },
          ids,
          bus: {
            publish: () => {
              throw new Error('no negotiation in this case');
            },
          },
        });
      const [a, b] = [service(claims), service(otherClaims)];
      // Both nodes connected first, so their checks really overlap in time.
      await Promise.all([claims.active(0), otherClaims.active(0)]);
      // Every scope covers src/a/x.ts, so any two of them overlap.
      const scopes = ['src/', 'src/a/', 'src/a/x.ts', '.', 'src/a/', 'src/a/x.ts'];
      const results = await Promise.allSettled(
        scopes.map((scope, i) =>
          (i % 2 ? b : a).acquire({ session_id: `ses_${i}`, paths: [scope], mode: 'hard', ttl_seconds: 60 }),
        ),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results) {
        if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'conflict' });
      }
      expect(await claims.active(2_000)).toHaveLength(1);
    }),
  );
}
