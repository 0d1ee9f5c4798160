/**
 * Workspace claims. Soft claims are advisory (they show up in lists, warnings and the dashboard);
 * hard claims make overlapping mutation tools of other sessions fail with an error naming the
 * claim. Claims expire. Process-local authority: the database is shared by every svc process of
 * the workspace, so claims are seen by all of them.
 * @module
 */
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Clock, Ids } from '../util/ids';
import type { MutationGuard } from '../workspace/context';
import type { ClaimRepository, ClaimRow } from './claim-repository';
import { normalizeScope, overlaps } from './paths';

/** A mutation a guard checks (the workspace's guard request: tool, session, paths). */
export type MutationRequest = Parameters<MutationGuard>[0];

export type ClaimMode = 'soft' | 'hard';

export interface Claim {
  id: string;
  session_id: string;
  paths: string[];
  mode: ClaimMode;
  reason: string;
  created_at: number;
  renewed_at: number;
  expires_at: number;
  released_at: number | null;
  release_reason: string | null;
  active: boolean;
}

export interface ClaimConflict {
  claim_id: string;
  session_id: string;
  mode: ClaimMode;
  paths: string[];
  expires_at: number;
}

export interface ClaimService {
  acquire(input: {
    session_id: string;
    paths: string[];
    mode: ClaimMode;
    ttl_seconds: number;
    reason?: string;
  }): Promise<{
    claim: Claim;
    overlapping: ClaimConflict[];
  }>;
  renew(input: { session_id: string; claim_id: string; ttl_seconds: number }): Promise<Claim>;
  release(input: { session_id: string; claim_id: string; reason?: string }): Promise<Claim>;
  list(input?: { session_id?: string; include_inactive?: boolean }): Promise<Claim[]>;
  negotiate(input: { session_id: string; claim_id: string; message?: string }): Promise<{
    negotiation_id: string;
    claim: Claim;
    holder_session_id: string;
    outcome: 'pending' | 'claim_expired' | 'own_claim';
  }>;
  /** Active hard claims of other sessions that overlap the paths. */
  blocking(request: MutationRequest): Promise<Claim[]>;
  /** Counts for readouts. */
  posture(): Promise<{ active: number; hard: number; soft: number }>;
}

export interface ClaimDeps {
  claims: ClaimRepository;
  /** The workspace root claim paths are relative to. */
  workspace: string;
  clock: Clock;
  ids: Ids;
  bus: Pick<EventBus, 'publish'>;
}

export function createClaimService(deps: ClaimDeps): ClaimService {
  const now = () => deps.clock.now();
  const toClaim = (row: ClaimRow): Claim => ({
    ...row,
    paths: JSON.parse(row.paths),
    active: row.released_at === null && row.expires_at > now(),
  });
  const get = async (id: string): Promise<Claim> => {
    const row = await deps.claims.get(id);
    if (!row) throw new SvcError('not_found', `claim_id: no claim "${id}"; see workspace_claim action list`);
    return toClaim(row);
  };
  const active = async (): Promise<Claim[]> => (await deps.claims.active(now())).map(toClaim);
  const owned = (claim: Claim, sessionId: string) => {
    if (claim.session_id !== sessionId) {
      throw new SvcError(
        'forbidden',
        `claim ${claim.id} is held by session ${claim.session_id}, not ${sessionId}; use action negotiate`,
      );
    }
  };
  const conflictOf = (c: Claim): ClaimConflict => ({
    claim_id: c.id,
    session_id: c.session_id,
    mode: c.mode,
    paths: c.paths,
    expires_at: c.expires_at,
  });

  return {
    async acquire(input) {
      if (input.paths.length === 0)
        throw new SvcError(
          'invalid_input',
          'paths: at least one path (a file, a directory ending in /, or . for everything)',
        );
      const paths = [...new Set(input.paths.map((p) => normalizeScope(deps.workspace, p)))];
      // The check and the insert hold the claims' write lock together (one acquire at a time).
      return deps.claims.exclusive(async () => {
        const others = (await active()).filter(
          (c) => c.session_id !== input.session_id && c.paths.some((a) => paths.some((b) => overlaps(a, b))),
        );
        const hard = others.filter((c) => c.mode === 'hard');
        if (input.mode === 'hard' && hard.length > 0) {
          const c = hard[0];
          throw new SvcError(
            'conflict',
            `workspace claim ${c.id} (hard, session ${c.session_id}) already covers ${c.paths.join(', ')} until ${new Date(c.expires_at).toISOString()}; use action negotiate or wait`,
            { details: { conflicts: hard.map(conflictOf) } },
          );
        }
        const id = deps.ids.next('clm');
        const t = now();
        await deps.claims.insert({
          id,
          session_id: input.session_id,
          paths: JSON.stringify(paths),
          mode: input.mode,
          reason: input.reason ?? '',
          created_at: t,
          renewed_at: t,
          expires_at: t + input.ttl_seconds * 1000,
        });
        return { claim: await get(id), overlapping: others.map(conflictOf) };
      });
    },
    async renew(input) {
      const claim = await get(input.claim_id);
      owned(claim, input.session_id);
      if (claim.released_at !== null)
        throw new SvcError('conflict', `claim ${claim.id} was released; acquire a new one`);
      const t = now();
      await deps.claims.renew(claim.id, t, t + input.ttl_seconds * 1000);
      return await get(claim.id);
    },
    async release(input) {
      const claim = await get(input.claim_id);
      owned(claim, input.session_id);
      if (claim.released_at === null) {
        await deps.claims.release(claim.id, now(), input.reason ?? 'released');
      }
      return await get(claim.id);
    },
    async list(input = {}) {
      const rows = await deps.claims.list({ now: now(), includeInactive: input.include_inactive === true });
      return rows.map(toClaim).filter((c) => !input.session_id || c.session_id === input.session_id);
    },
    async negotiate(input) {
      const claim = await get(input.claim_id);
      const id = deps.ids.next('neg');
      const outcome =
        claim.session_id === input.session_id ? 'own_claim' : claim.active ? 'pending' : 'claim_expired';
      await deps.claims.insertNegotiation({
        id,
        claim_id: claim.id,
        from_session_id: input.session_id,
        message: input.message ?? '',
        created_at: now(),
        outcome,
      });
      if (outcome === 'pending') {
        // The holder sees the request on its event stream (TUI, SSE) and can release.
        deps.bus.publish(claim.session_id, 'claim.negotiation_requested', {
          session_id: claim.session_id,
          claim_id: claim.id,
          negotiation_id: id,
          from_session_id: input.session_id,
        });
      }
      return { negotiation_id: id, claim, holder_session_id: claim.session_id, outcome };
    },
    async blocking(request) {
      if (request.paths.length === 0) return [];
      const scopes = request.paths.map((p) => normalizeScope(deps.workspace, p));
      return (await active()).filter(
        (c) =>
          c.mode === 'hard' &&
          c.session_id !== request.sessionId &&
          c.paths.some((a) => scopes.some((b) => overlaps(a, b))),
      );
    },
    async posture() {
      const list = await active();
      return {
        active: list.length,
        hard: list.filter((c) => c.mode === 'hard').length,
        soft: list.filter((c) => c.mode === 'soft').length,
      };
    },
  };
}

/** The mutation guard: a hard claim of another session refuses the mutation, naming the claim. */
export function hardClaimGuard(claims: ClaimService) {
  return async function hardClaimGuard(request: MutationRequest): Promise<void> {
    const [claim] = await claims.blocking(request);
    if (!claim) return;
    throw new SvcError(
      'conflict',
      `${request.tool}: ${claim.paths.join(', ')} is under hard workspace claim ${claim.id} held by session ${claim.session_id} until ${new Date(claim.expires_at).toISOString()}${claim.reason ? ` (${claim.reason})` : ''}; negotiate with workspace_claim action negotiate, or wait for it to expire`,
      { details: { claim_id: claim.id, holder_session_id: claim.session_id } },
    );
  };
}
