/**
 * Workspace claims. Soft claims are advisory (they show up in lists, warnings and the dashboard);
 * hard claims make overlapping mutation tools of other sessions fail with an error naming the
 * claim. Claims expire. Process-local authority: the database is shared by every svc process of
 * the workspace, so claims are seen by all of them.
 * @module
 */
import type { App, MutationRequest } from '../app';
import { SvcError } from '../errors';
import { normalizeScope, overlaps } from './paths';

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
  }): {
    claim: Claim;
    overlapping: ClaimConflict[];
  };
  renew(input: { session_id: string; claim_id: string; ttl_seconds: number }): Claim;
  release(input: { session_id: string; claim_id: string; reason?: string }): Claim;
  list(input?: { session_id?: string; include_inactive?: boolean }): Claim[];
  negotiate(input: { session_id: string; claim_id: string; message?: string }): {
    negotiation_id: string;
    claim: Claim;
    holder_session_id: string;
    outcome: 'pending' | 'claim_expired' | 'own_claim';
  };
  /** Active hard claims of other sessions that overlap the paths. */
  blocking(request: MutationRequest): Claim[];
  /** Counts for readouts. */
  posture(): { active: number; hard: number; soft: number };
}

interface Row extends Omit<Claim, 'paths' | 'active'> {
  paths: string;
}

export function createClaimService(app: App): ClaimService {
  const now = () => app.clock.now();
  const toClaim = (row: Row): Claim => ({
    ...row,
    paths: JSON.parse(row.paths),
    active: row.released_at === null && row.expires_at > now(),
  });
  const get = (id: string): Claim => {
    const row = app.db.prepare('SELECT * FROM workspace_claims WHERE id = ?').get(id) as Row | undefined;
    if (!row) throw new SvcError('not_found', `claim_id: no claim "${id}"; see workspace_claim action list`);
    return toClaim(row);
  };
  const active = (): Claim[] =>
    (
      app.db
        .prepare(
          'SELECT * FROM workspace_claims WHERE released_at IS NULL AND expires_at > ? ORDER BY created_at',
        )
        .all(now()) as Row[]
    ).map(toClaim);
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
    acquire(input) {
      if (input.paths.length === 0)
        throw new SvcError(
          'invalid_input',
          'paths: at least one path (a file, a directory ending in /, or . for everything)',
        );
      const paths = [...new Set(input.paths.map((p) => normalizeScope(app.workspace, p)))];
      const others = active().filter(
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
      const id = app.ids.next('clm');
      const t = now();
      app.db
        .prepare(
          `INSERT INTO workspace_claims (id, session_id, paths, mode, reason, created_at, renewed_at, expires_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          id,
          input.session_id,
          JSON.stringify(paths),
          input.mode,
          input.reason ?? '',
          t,
          t,
          t + input.ttl_seconds * 1000,
        );
      return { claim: get(id), overlapping: others.map(conflictOf) };
    },
    renew(input) {
      const claim = get(input.claim_id);
      owned(claim, input.session_id);
      if (claim.released_at !== null)
        throw new SvcError('conflict', `claim ${claim.id} was released; acquire a new one`);
      const t = now();
      app.db
        .prepare('UPDATE workspace_claims SET renewed_at = ?, expires_at = ? WHERE id = ?')
        .run(t, t + input.ttl_seconds * 1000, claim.id);
      return get(claim.id);
    },
    release(input) {
      const claim = get(input.claim_id);
      owned(claim, input.session_id);
      if (claim.released_at === null) {
        app.db
          .prepare('UPDATE workspace_claims SET released_at = ?, release_reason = ? WHERE id = ?')
          .run(now(), input.reason ?? 'released', claim.id);
      }
      return get(claim.id);
    },
    list(input = {}) {
      const rows = (
        input.include_inactive
          ? app.db.prepare('SELECT * FROM workspace_claims ORDER BY created_at DESC LIMIT 500').all()
          : app.db
              .prepare(
                'SELECT * FROM workspace_claims WHERE released_at IS NULL AND expires_at > ? ORDER BY created_at DESC',
              )
              .all(now())
      ) as Row[];
      return rows.map(toClaim).filter((c) => !input.session_id || c.session_id === input.session_id);
    },
    negotiate(input) {
      const claim = get(input.claim_id);
      const id = app.ids.next('neg');
      const outcome =
        claim.session_id === input.session_id ? 'own_claim' : claim.active ? 'pending' : 'claim_expired';
      app.db
        .prepare(
          'INSERT INTO claim_negotiations (id, claim_id, from_session_id, message, created_at, outcome) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run(id, claim.id, input.session_id, input.message ?? '', now(), outcome);
      if (outcome === 'pending') {
        // The holder sees the request on its event stream (TUI, SSE) and can release.
        app.bus.publish(claim.session_id, 'claim.negotiation_requested', {
          session_id: claim.session_id,
          claim_id: claim.id,
          negotiation_id: id,
          from_session_id: input.session_id,
        });
      }
      return { negotiation_id: id, claim, holder_session_id: claim.session_id, outcome };
    },
    blocking(request) {
      if (request.paths.length === 0) return [];
      const scopes = request.paths.map((p) => normalizeScope(app.workspace, p));
      return active().filter(
        (c) =>
          c.mode === 'hard' &&
          c.session_id !== request.sessionId &&
          c.paths.some((a) => scopes.some((b) => overlaps(a, b))),
      );
    },
    posture() {
      const list = active();
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
  return function hardClaimGuard(request: MutationRequest): void {
    const [claim] = claims.blocking(request);
    if (!claim) return;
    throw new SvcError(
      'conflict',
      `${request.tool}: ${claim.paths.join(', ')} is under hard workspace claim ${claim.id} held by session ${claim.session_id} until ${new Date(claim.expires_at).toISOString()}${claim.reason ? ` (${claim.reason})` : ''}; negotiate with workspace_claim action negotiate, or wait for it to expire`,
      { details: { claim_id: claim.id, holder_session_id: claim.session_id } },
    );
  };
}
