/**
 * Applying a queued reshape at a safe boundary (the session's run has ended, or a run is about to
 * start): it is cleared when the layer is off or the genome changed since it was proposed,
 * blocked when a policy withholds a tool the new genome needs, failed (`runtime_apply_error`,
 * retried at the next boundary) when this runtime cannot run it; otherwise it is applied with a
 * compare-and-set on the genome revision, so two processes never both apply one.
 * @module
 */
import type { Committer } from './commit';
import { type AdaptiveContext, describe } from './context';
import type { GenomeGates } from './gates';
import { fingerprint } from './genome';
import { bounded, type ReshapeAction, rowFingerprint } from './snapshot';
import { type AdaptiveRow, EVALUATION_RETENTION, type StoredProposal } from './store';

export interface Reshaper {
  /** Apply the queued reshape of the session (or clear, block or fail it); nothing queued: no-op. */
  applyPending(root: string): Promise<void>;
}

export function createReshaper(ctx: AdaptiveContext, committer: Committer, gates: GenomeGates): Reshaper {
  const { store, deps } = ctx;

  const drop = async (root: string, reason: string, action: ReshapeAction) =>
    await committer.commit(
      root,
      (current) => ({
        ...current,
        proposal: null,
        apply_status: 'applied',
        pending_since: null,
        pending_reason: '',
        apply_error: '',
        last_action: current.genome ? 'updated' : current.last_action,
        cleared_reason: action === 'cleared' ? reason : current.cleared_reason,
      }),
      { reshape: [action] },
    );

  /** Step 1 of the contract for an apply: the new genome and its history entry, in one transaction. */
  async function write(root: string, proposal: StoredProposal, previous: string | null, next: string) {
    let conflict = false;
    const applied = await store.update(root, (current) => {
      if (!current?.proposal) return undefined;
      // Compare-and-set on the revision the proposal was made against.
      if (current.revision !== proposal.base_revision) {
        conflict = true;
        return undefined;
      }
      const updated: AdaptiveRow = {
        ...current,
        genome: JSON.stringify(proposal.genome),
        revision: current.revision + 1,
        reshapes: current.reshapes + 1,
        last_reshape_reason: bounded(proposal.reason, 400),
        last_reshape_signal_id: proposal.signal_id,
        proposal: null,
        apply_status: 'applied',
        pending_since: null,
        pending_reason: '',
        apply_error: '',
        window_runs: [],
        runs_since_eval: 0,
        efficacy: { before: proposal.baseline, after: { failed: 0, attributable: 0 } },
        last_action: 'updated',
        updated_at: deps.clock.now(),
      };
      return {
        row: updated,
        evaluation: {
          row: {
            session_id: root,
            event_kind: 'reshape_applied',
            at: deps.clock.now(),
            evaluation: proposal.evaluation,
            previous_fingerprint: previous,
            next_fingerprint: next,
            effective_preset: proposal.genome.choreography_preset,
            signals: { failed: proposal.baseline.failed, attributable: proposal.baseline.attributable },
            shadow: null,
          },
          keep: Math.max(ctx.historyMax(), EVALUATION_RETENTION),
        },
      };
    });
    return { applied, conflict };
  }

  async function applyPending(root: string) {
    // With the layer off a proposal is rare (it is cleared at the next boundary): ask the store's
    // kept answer first, so an idle state with nothing queued reads nothing (PostgreSQL).
    if (!ctx.enabled() && store.mayHaveProposal && !(await store.mayHaveProposal(root))) return;
    const row = await store.get(root);
    if (!row?.proposal) return;
    const proposal = row.proposal;
    if (!ctx.enabled())
      return void (await drop(root, 'options.adaptive_orchestration.enabled is false', 'cleared'));
    if (proposal.base_revision !== row.revision) {
      return void (await drop(
        root,
        'superseded: the genome changed after the reshape was proposed',
        'cleared',
      ));
    }
    const blocked = await gates.blockedReason(root, proposal.genome);
    if (blocked) {
      ctx.log.info('adaptive reshape blocked', { session_id: root, reason: blocked });
      return void (await drop(root, blocked, 'blocked'));
    }
    try {
      gates.validate(proposal.genome);
    } catch (error) {
      const message = bounded(deps.redactor.string(describe(error)));
      ctx.log.warn('adaptive reshape apply failed', { session_id: root, error: message });
      await committer.commit(root, (current) => ({
        ...current,
        apply_status: 'pending',
        pending_since: current.pending_since ?? deps.clock.now(),
        pending_reason: current.pending_reason || bounded(`${proposal.rule}: retried at the next boundary`),
        apply_error: message,
      }));
      return;
    }
    const previous = rowFingerprint(row) ?? null;
    const next = fingerprint(proposal.genome);
    const { applied, conflict } = await write(root, proposal, previous, next);
    if (conflict)
      return void (await drop(root, 'superseded: another process changed the genome first', 'cleared'));
    if (!applied) return;
    ctx.stats.reshapes_applied++;
    ctx.log.info('adaptive reshape applied', {
      session_id: root,
      rule: proposal.rule,
      from: previous,
      to: next,
    });
    try {
      await gates.applyPlanGate(root, applied);
    } catch (error) {
      ctx.log.warn('adaptive plan gate failed', { session_id: root, error: describe(error) });
    }
    await committer.announce(root, ['applied']);
  }

  return { applyPending };
}
