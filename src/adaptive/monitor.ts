/**
 * The monitor: every ended run of a session family joins its window; every `cadence` ended runs
 * it evaluates the window's signals (run ledger) against the genome and may propose a reshape,
 * which is recorded, then queued while the session's run is active (or applied at once when it
 * is idle), or blocked when a policy withholds a tool the new genome needs. The eval shadow
 * scores an alternative genome on the same signals and, once it has enough scored evaluations,
 * may redirect the reshape.
 * @module
 */
import type { Committer } from './commit';
import { type AdaptiveContext, describe } from './context';
import type { GenomeGates } from './gates';
import { fingerprint, type Genome, type Preset, presetGenome } from './genome';
import type { SnapshotReader } from './reads';
import { holdReason, type RegulatorProposal, type RegulatorSettings, regulate } from './regulator';
import type { Reshaper } from './reshape';
import { EMPTY_SIGNALS, type WindowSignals, windowSignals } from './signals';
import { bounded } from './snapshot';
import {
  type AdaptiveRow,
  EVALUATION_RETENTION,
  type Evaluation,
  emptyRow,
  type ShadowScore,
  type StoredProposal,
} from './store';

export interface Monitor {
  /** An ended run of the family joins the window; at the cadence the window is evaluated. */
  runEnded(root: string, runId: string, status: string): Promise<void>;
}

/** What one evaluation found. */
interface Assessment {
  evaluation: Evaluation;
  signals: WindowSignals;
  proposal?: RegulatorProposal;
  /** Why the proposal cannot apply (a withheld tool). */
  blocked?: string;
  shadow: ShadowScore | null;
  hints: string;
}

export function createMonitor(
  ctx: AdaptiveContext,
  reads: SnapshotReader,
  committer: Committer,
  gates: GenomeGates,
  reshaper: Reshaper,
): Monitor {
  const { store, deps } = ctx;

  async function runEnded(root: string, runId: string, status: string) {
    const monitor = ctx.settings().monitor;
    if (!monitor.enabled) return;
    let row = (await store.get(root)) ?? emptyRow(root, deps.clock.now());
    const attributable = status === 'completed' || status === 'failed';
    row = {
      ...row,
      window_runs: [...row.window_runs.filter((id) => id !== runId), runId].slice(-monitor.window_runs),
      runs_since_eval: row.runs_since_eval + 1,
      efficacy:
        row.efficacy && attributable
          ? {
              ...row.efficacy,
              after: {
                attributable: row.efficacy.after.attributable + 1,
                failed: row.efficacy.after.failed + (status === 'failed' ? 1 : 0),
              },
            }
          : row.efficacy,
    };
    if (row.runs_since_eval < monitor.cadence) {
      const before = JSON.stringify(await reads.read(root));
      await store.put({ ...row, updated_at: deps.clock.now() });
      // The efficacy verdict may have moved: a snapshot change is always published.
      if (JSON.stringify(await reads.read(root)) !== before) await committer.announce(root);
      return;
    }
    await store.put({ ...row, updated_at: deps.clock.now() });
    await evaluate(root, runId);
  }

  async function evaluate(root: string, triggerRunId: string) {
    ctx.stats.evaluations++;
    const row = (await store.get(root))!;
    const signalId = deps.ids.next('sig');
    const genome = ctx.genomeOf(row);
    const { evaluation, signals, proposal, blocked, shadow, hints } = await assess(ctx, gates, {
      root,
      row,
      genome,
      signalId,
    });
    const fpNow = genome ? fingerprint(genome) : null;
    const fpNext = proposal && !blocked ? fingerprint(proposal.genome) : null;
    await ctx.ledger(triggerRunId, 'adaptive.evaluation', {
      decision: evaluation.decision,
      signal_id: signalId,
      ...(evaluation.skip_reason ? { skip_reason: evaluation.skip_reason } : {}),
      ...(proposal ? { rule: proposal.rule, blocked: blocked !== undefined } : {}),
    });
    const accepted = proposal && !blocked ? proposal : undefined;
    const next = await committer.commit(
      root,
      (current) => {
        const stored: StoredProposal | null = accepted
          ? {
              genome: accepted.genome,
              rule: accepted.rule,
              reason: accepted.reason,
              signal_id: signalId,
              base_revision: current.revision,
              recorded_at: deps.clock.now(),
              evaluation,
              baseline: { failed: signals.failed, attributable: signals.attributable },
            }
          : null;
        return {
          ...current,
          runs_since_eval: 0,
          last_evaluation: evaluation,
          hint_sources: evaluation.decision === 'recorded' ? hints : current.hint_sources,
          last_action: genome ? 'updated' : 'monitor_evaluation',
          proposal: evaluation.decision === 'skipped' ? current.proposal : stored,
        };
      },
      {
        evaluation: {
          row: {
            session_id: root,
            event_kind: evaluation.decision === 'skipped' ? 'eval_skipped' : 'eval_recorded',
            at: deps.clock.now(),
            evaluation,
            previous_fingerprint: fpNext ? fpNow : null,
            next_fingerprint: fpNext,
            effective_preset: genome?.choreography_preset ?? '',
            signals,
            shadow,
          },
          keep: Math.max(ctx.historyMax(), EVALUATION_RETENTION),
        },
        monitorEvaluation: true,
        reshape: proposal ? (blocked ? ['recorded', 'blocked'] : ['recorded']) : [],
      },
    );
    if (!next || !accepted) return;
    if (await ctx.sessionActive(root)) await queue(ctx, committer, root, accepted);
    else await reshaper.applyPending(root);
  }

  return { runEnded };
}

const regulatorSettings = (ctx: AdaptiveContext): RegulatorSettings => {
  const m = ctx.settings().monitor;
  return {
    failureRate: m.failure_rate,
    minFailures: m.min_failures,
    tokenPressure: m.token_pressure,
    pressureCompactionThreshold: m.pressure_compaction_threshold,
    toolErrors: m.tool_errors,
    parallelCap: ctx.settings().max_parallel_agents,
  };
};

/** The evaluation of the window: skipped, recorded (monitor only), or a regulator decision. */
async function assess(
  ctx: AdaptiveContext,
  gates: GenomeGates,
  input: { root: string; row: AdaptiveRow; genome: Genome | undefined; signalId: string },
): Promise<Assessment> {
  const { root, row, genome, signalId } = input;
  const { store, deps } = ctx;
  const cadence = ctx.settings().monitor.cadence;
  const skipped = (reason: string, skip_reason: Evaluation['skip_reason']): Assessment => ({
    evaluation: { cadence, decision: 'skipped', reason, signal_id: signalId, skip_reason },
    signals: EMPTY_SIGNALS,
    shadow: null,
    hints: row.hint_sources,
  });
  if (row.apply_status === 'pending' && row.proposal) {
    return skipped(
      `a reshape to ${row.proposal.genome.choreography_preset} is queued; the monitor waits until it is applied`,
      'reshape_pending',
    );
  }
  let signals: WindowSignals;
  try {
    const rejections = (await store.reviewsOfRuns(row.window_runs)).filter(
      (r) => r.status === 'changes_requested',
    ).length;
    signals = await windowSignals(deps.runs, row.window_runs, rejections);
  } catch (error) {
    return skipped(bounded(`the run ledger could not be read: ${describe(error)}`), 'ledger_unavailable');
  }
  if (signals.attributable === 0) {
    return {
      ...skipped(
        `${signals.runs} run(s) in the window, none completed or failed: cancelled and interrupted runs say nothing about the genome`,
        'no_attributable_runs',
      ),
      signals,
    };
  }
  if (!genome) {
    return {
      evaluation: {
        cadence,
        decision: 'recorded',
        reason: `monitor only (no effective genome): ${holdReason(signals).replace(/^no signal crossed its threshold /, '')}`,
        signal_id: signalId,
      },
      signals,
      shadow: null,
      hints: row.hint_sources,
    };
  }
  const regulated = await regulateWithShadow(ctx, root, row, genome, signals);
  let blocked: string | undefined;
  if (regulated.proposal) {
    try {
      blocked = await gates.blockedReason(root, regulated.proposal.genome);
    } catch (error) {
      blocked = `the tool set could not be checked: ${describe(error)}`;
    }
  }
  const proposal = regulated.proposal;
  return {
    evaluation: {
      cadence,
      decision: 'recorded',
      reason: bounded(
        proposal ? `${proposal.reason}${blocked ? `; blocked: ${blocked}` : ''}` : holdReason(signals),
        400,
      ),
      signal_id: signalId,
    },
    signals,
    proposal,
    blocked,
    shadow: regulated.shadow,
    hints: regulated.hints,
  };
}

/**
 * The regulator's decision, scored against the shadow genome's. The eval-shadow aggregate feeds
 * the monitor once the session has enough scored evaluations: when the two regulators have
 * mostly disagreed (agreement below half) and the shadow genome needs no reshape under these
 * very signals, it already answers them, so the reshape goes to the shadow preset instead of
 * the effective regulator's target.
 */
async function regulateWithShadow(
  ctx: AdaptiveContext,
  root: string,
  row: AdaptiveRow,
  genome: Genome,
  signals: WindowSignals,
) {
  const regulator = regulatorSettings(ctx);
  let proposal = regulate(genome, signals, regulator);
  const settings = ctx.settings();
  // hint_sources names what this evaluation consulted (nothing unless the shadow feeds it).
  let hints = '';
  let shadow: ShadowScore | null = null;
  if (!settings.eval_shadow.enabled || row.shadow_preset === '') return { proposal, shadow, hints };
  const shadowPreset = row.shadow_preset as Preset;
  const target = presetGenome(shadowPreset, ctx.defaults(genome.compaction_threshold));
  const shadowDecision = regulate(target, signals, regulator);
  const describeDecision = (p: RegulatorProposal | undefined) =>
    p ? `reshape:${p.genome.choreography_preset}` : 'hold';
  shadow = {
    preset: shadowPreset,
    decision: describeDecision(shadowDecision),
    effective_decision: describeDecision(proposal),
    agreed: describeDecision(shadowDecision) === describeDecision(proposal),
  };
  const min = settings.eval_shadow.min_evaluations;
  const scored = await ctx.store.scored(root, Math.max(min, 2 * min));
  if (scored.length < min) return { proposal, shadow, hints };
  hints = 'eval_shadow';
  const agreed = scored.filter((s) => s.shadow?.agreed).length;
  if (
    proposal &&
    !shadowDecision &&
    agreed * 2 < scored.length &&
    target.choreography_preset !== proposal.genome.choreography_preset &&
    fingerprint(target) !== fingerprint(genome)
  ) {
    proposal = {
      rule: proposal.rule,
      genome: target,
      reason: `${proposal.reason}; eval_shadow: the regulators agreed in ${agreed} of ${scored.length} scored evaluations and ${shadowPreset} holds under these signals, so the reshape goes to it`,
    };
  }
  return { proposal, shadow, hints };
}

/** The session's run is active: the reshape waits for the next safe boundary. */
async function queue(ctx: AdaptiveContext, committer: Committer, root: string, accepted: RegulatorProposal) {
  const { deps } = ctx;
  const runId = (await ctx.safeState(root))?.run_id;
  await committer.commit(
    root,
    (current) =>
      current.proposal
        ? {
            ...current,
            apply_status: 'pending',
            pending_since: deps.clock.now(),
            pending_reason: bounded(
              `${accepted.rule}: waiting for the active run${runId ? ` ${runId}` : ''} to end`,
            ),
          }
        : undefined,
    { reshape: ['queued'] },
  );
}
