/**
 * The genome of a session at its first run: the classifier picks it (an override, the active
 * operating pack's choreography, the configured default or the heuristic), and picks again when
 * the pack that chose it changes. `reset` clears the state; the next run classifies again.
 * @module
 */
import { classify } from './classifier';
import type { Committer } from './commit';
import type { AdaptiveContext } from './context';
import type { GenomeGates } from './gates';
import { decodeGenome, fingerprint } from './genome';
import type { SnapshotReader } from './reads';
import { type AdaptiveSnapshot, bounded } from './snapshot';

export interface Classification {
  /** At a top-level run's start, before its prompt and tool set are assembled. */
  atRunStart(root: string, runId: string): Promise<void>;
  /** Remove a session's adaptive state (`action` cleared); the next run classifies again. */
  reset(sessionId: string, reason: string): Promise<AdaptiveSnapshot>;
}

export function createClassification(
  ctx: AdaptiveContext,
  reads: SnapshotReader,
  committer: Committer,
  gates: GenomeGates,
): Classification {
  const { store, deps } = ctx;

  async function reset(sessionId: string, reason: string): Promise<AdaptiveSnapshot> {
    await deps.sessions.require(sessionId);
    const row = await store.get(sessionId);
    const hadProposal = row?.proposal !== null && row?.proposal !== undefined;
    if (row && (row.genome !== null || hadProposal)) {
      await committer.commit(
        sessionId,
        (current) => ({
          ...current,
          genome: null,
          revision: current.revision + 1,
          classification_source: '',
          classified_preset: '',
          shadow_preset: '',
          proposal: null,
          apply_status: 'applied',
          pending_since: null,
          pending_reason: '',
          apply_error: '',
          hint_sources: '',
          window_runs: [],
          runs_since_eval: 0,
          efficacy: null,
          reshapes: 0,
          last_reshape_reason: '',
          last_reshape_signal_id: '',
          last_action: 'cleared',
          cleared_reason: bounded(reason, 160),
        }),
        { reshape: hadProposal ? ['cleared'] : [] },
      );
      ctx.log.info('adaptive state cleared', { session_id: sessionId, reason });
    }
    return await reads.snapshot(sessionId, { posture: true });
  }

  async function atRunStart(root: string, runId: string) {
    const row = await store.get(root);
    const decoded = row ? decodeGenome(row.genome) : undefined;
    if (decoded && !decoded.ok) return; // written by a newer svc: leave it alone
    const session = await deps.sessions.require(root);
    const packPreset = await deps.packs?.choreography(root);
    if (decoded?.ok && row) {
      const source = row.classification_source;
      const packChanged =
        (source === 'pack' && packPreset !== row.classified_preset) ||
        ((source === 'heuristic' || source === 'config') && packPreset !== undefined);
      if (!packChanged) return;
      await reset(
        root,
        packPreset === undefined
          ? 'the operating pack that chose the genome no longer sets a choreography'
          : `the operating pack now sets the choreography ${packPreset}`,
      );
    }
    const run = await deps.runs.get(runId);
    const settings = ctx.settings();
    const result = classify({
      mode: settings.classifier,
      prompt: run?.prompt ?? '',
      defaultPreset: settings.default_preset,
      packPreset,
      override: session.metadata.adaptive_preset,
      defaults: ctx.defaults(),
    });
    if (!result) return;
    ctx.stats.classifications++;
    await ctx.ledger(runId, 'adaptive.classified', {
      preset: result.genome.choreography_preset,
      source: result.source,
      genome_fingerprint: fingerprint(result.genome),
      shadow_preset: result.shadow_preset,
      scores: result.scores,
    });
    ctx.log.info('adaptive genome classified', {
      session_id: root,
      preset: result.genome.choreography_preset,
      source: result.source,
    });
    await committer.commit(
      root,
      (current) => ({
        ...current,
        genome: JSON.stringify(result.genome),
        revision: current.revision + 1,
        classification_source: result.source,
        classified_preset: result.genome.choreography_preset,
        shadow_preset: result.shadow_preset,
        proposal: null,
        apply_status: 'applied',
        pending_since: null,
        pending_reason: '',
        apply_error: '',
        window_runs: [],
        runs_since_eval: 0,
        last_action: 'updated',
        cleared_reason: '',
      }),
      { effects: async (next) => await gates.applyPlanGate(root, next) },
    );
  }

  return { atRunStart, reset };
}
