/**
 * Adaptive orchestration (`app.adaptive`): the per-session genome and the monitor that reshapes
 * it. It listens to the session bus (a passive subscription; nothing runs until a session's run
 * does) and works at run boundaries:
 *
 * - **run start** (top-level run, before its prompt and tool set are assembled): the classifier
 *   picks the session's genome at its first run (and again when the operating pack that chose it
 *   changes); a queued reshape is applied;
 * - **run end** (any ended run of the session family): the run joins the monitor's window; every
 *   `cadence` ended runs the monitor evaluates the window's signals (run ledger) and may propose a
 *   reshape, which is recorded, then queued while the session's run is active, blocked when a
 *   policy withholds a tool the new genome needs;
 * - **idle** (the session's run released): the queued reshape is applied (or cleared, or fails
 *   with `runtime_apply_error` and is retried at the next boundary); a `review_gate` genome starts
 *   the reviewer pass of the run that completed.
 *
 * The genome shapes the run through `promptSection` (guidance), the staged workflow (`plan_gate`
 * enters planning), `spawnLimit`/`acquireSpawnSlot` (the `agent` tool fans out in parallel),
 * `compactionThreshold` (the run loop's auto-compaction threshold) and the reviewer pass.
 *
 * Every change follows the spec's ordering contract: the state is committed, the prompt trace is
 * assembled from the committed state, then the snapshot-backed payloads are published on the bus
 * (whose ring and log serve replay). States and transitions: docs/adaptive-orchestration.md.
 * @module
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { agentKind } from '../agent/agent-kinds';
import { workflowPhase } from '../agent/views';
import type { AdaptiveResync, App } from '../app';
import { SvcError } from '../errors';
import type { SessionEvent } from '../events/bus';
import { DB_FILE } from '../store/db';
import { classify } from './classifier';
import {
  decodeGenome,
  fingerprint,
  type Genome,
  type Preset,
  presetGenome,
  renderGuidance,
  requiredTools,
} from './genome';
import { holdReason, type RegulatorProposal, type RegulatorSettings, regulate } from './regulator';
import { FINDINGS_MAX, parseVerdict, reviewerPrompt, reviewPromptBlock } from './reviewer';
import { EMPTY_SIGNALS, type WindowSignals, windowSignals } from './signals';
import {
  type AdaptiveSnapshot,
  bounded,
  buildSnapshot,
  HISTORY_RESPONSE_CAP,
  type ReshapeAction,
  rowFingerprint,
} from './snapshot';
import {
  type AdaptiveRow,
  type AdaptiveStore,
  createAdaptiveStore,
  EVALUATION_RETENTION,
  type Evaluation,
  emptyRow,
  type ShadowScore,
  type StoredProposal,
} from './store';

/** The prompt section of a session as last assembled from committed state. */
export interface PromptTrace {
  session_id: string;
  genome_fingerprint: string | null;
  revision: number;
  chars: number;
  review_included: boolean;
}

/** What this process's monitor did (never anything a read does). */
export interface MonitorStats {
  classifications: number;
  evaluations: number;
  reshapes_applied: number;
  reviews_started: number;
}

export interface AdaptiveService {
  /**
   * The snapshot of a session. Without `posture`, the gate must be on and the session must
   * exist (the native and MCP tools fail closed). With `posture` (the CLI projection and the SSE
   * resync) it never throws for a closed gate or an unknown session: the posture says so.
   * Reading never classifies, evaluates or writes.
   */
  snapshot(sessionId: string | undefined, options?: { posture?: boolean }): AdaptiveSnapshot;
  /** The SSE `include_snapshot` resync event of a session. */
  resync(sessionId: string): AdaptiveResync;
  /** Pushed into `app.promptSections`: the genome guidance (and the last reviewer findings). */
  promptSection(sessionId: string): { source: string; text: string } | undefined;
  /** The prompt trace last assembled for the session (ordering contract, step 2). */
  promptTrace(sessionId: string): PromptTrace | undefined;
  /** The session's auto-compaction threshold from its genome; undefined → the config default. */
  compactionThreshold(sessionId: string): number | undefined;
  /** Sub-agents a run of the session may run at once: `max_parallel_agents` of its genome, else 1. */
  spawnLimit(sessionId: string | undefined): number;
  /**
   * Wait for a sub-agent slot of the session family (limit: its genome's `max_parallel_agents`;
   * unlimited without a genome). Returns the release function.
   */
  acquireSpawnSlot(sessionId: string | undefined, signal?: AbortSignal): Promise<() => void>;
  /** Sub-agents running and waiting for a slot in this process, per session family. */
  spawnSlots(): Map<string, { active: number; waiting: number }>;
  /** Remove a session's adaptive state (`action` cleared); the next run classifies again. */
  reset(sessionId: string, reason: string): AdaptiveSnapshot;
  readonly store: AdaptiveStore;
  /** Whether a database exists to read (reads never create one). */
  dbPresent(): boolean;
  /** The current genome of a session (decoded), if any. */
  genome(sessionId: string): Genome | undefined;
  monitorStats(): MonitorStats;
  /** Resolves when every reviewer pass started by this process has finished. */
  idle(): Promise<void>;
  close(): void;
}

const HANDLED = new Set([
  'run.started',
  'run.finished',
  'state.changed',
  'provider_recovery.changed',
  'file.changed',
]);

const EVENT = {
  changed: 'adaptive_orchestration.changed',
  genome: 'adaptive_orchestration.genome',
  monitor: 'adaptive_orchestration.monitor_evaluation',
  reshape: 'adaptive_orchestration.reshape',
} as const;

export function createAdaptiveService(app: App): AdaptiveService {
  const store = createAdaptiveStore(() => app.db);
  const log = app.log.child({ component: 'adaptive' });
  const traces = new Map<string, PromptTrace>();
  const stats: MonitorStats = { classifications: 0, evaluations: 0, reshapes_applied: 0, reviews_started: 0 };
  /** Root session → the completed run whose reviewer pass starts at the next idle boundary. */
  const reviewDue = new Map<string, string>();
  /** Reviewed run id → review row id, while the pass runs. */
  const reviewsInFlight = new Map<string, number>();
  const reviewerRuns = new Set<string>();
  const inflight = new Set<Promise<void>>();
  /** Run id → paths the run changed (for the reviewer's prompt). */
  const changedPaths = new Map<string, Set<string>>();
  const slots = new Map<string, { active: number; waiting: (() => void)[] }>();
  let closed = false;

  const settings = () => app.config.options.adaptive_orchestration;
  const enabled = () => settings().enabled === true;
  const dbPresent = () => app.hasDb() || existsSync(join(app.dataDir, DB_FILE));
  const historyMax = () => settings().monitor.regulatory_history_max_events;
  const defaults = (compactionThreshold?: number) => ({
    parallelCap: settings().max_parallel_agents,
    compactionThreshold: compactionThreshold ?? app.config.options.compaction_threshold,
  });
  const regulatorSettings = (): RegulatorSettings => {
    const m = settings().monitor;
    return {
      failureRate: m.failure_rate,
      minFailures: m.min_failures,
      tokenPressure: m.token_pressure,
      pressureCompactionThreshold: m.pressure_compaction_threshold,
      toolErrors: m.tool_errors,
      parallelCap: settings().max_parallel_agents,
    };
  };

  const rootOf = (sessionId: string): string | undefined => {
    const session = app.sessions.get(sessionId);
    if (!session) return undefined;
    return session.parent_id ? app.sessions.root(sessionId) : session.id;
  };
  const genomeOf = (row: AdaptiveRow | undefined): Genome | undefined => {
    const decoded = row ? decodeGenome(row.genome) : undefined;
    return decoded?.ok ? decoded.genome : undefined;
  };
  const sessionActive = (root: string) => {
    try {
      return app.agent.state(root).state !== 'idle';
    } catch {
      return false;
    }
  };
  const ledger = (runId: string | null | undefined, type: string, payload: Record<string, unknown>) => {
    if (!runId) return;
    try {
      app.runs.append(runId, type, payload);
    } catch (error) {
      log.warn('run ledger append failed', { run_id: runId, type, error });
    }
  };

  // ---- reads ---------------------------------------------------------------------------------

  function readSnapshot(sessionId: string): AdaptiveSnapshot {
    const row = store.get(sessionId);
    const max = historyMax();
    return buildSnapshot({
      sessionId,
      implemented: true,
      configured: enabled(),
      historyMax: max,
      row,
      history: max > 0 ? store.evaluations(sessionId, Math.min(max, HISTORY_RESPONSE_CAP)) : [],
    });
  }

  function snapshot(sessionId: string | undefined, options: { posture?: boolean } = {}): AdaptiveSnapshot {
    const posture = options.posture === true;
    if (!posture && !enabled()) {
      throw new SvcError(
        'unavailable',
        'adaptive orchestration is not available: options.adaptive_orchestration.enabled is false',
      );
    }
    const id = sessionId ?? '';
    const base = {
      sessionId: id,
      implemented: true,
      configured: enabled(),
      historyMax: historyMax(),
      history: [],
    };
    if (!sessionId) {
      if (!posture)
        throw new SvcError('invalid_input', 'session_id: required (no current session to default to)');
      return buildSnapshot(base);
    }
    if (posture && !dbPresent()) {
      return buildSnapshot({
        ...base,
        unavailable: enabled()
          ? `no session "${sessionId}": this data directory has no database yet`
          : undefined,
      });
    }
    try {
      if (!app.sessions.get(sessionId)) {
        if (!posture)
          throw new SvcError('not_found', `session_id: no session "${sessionId}"; see svc session list`);
        return buildSnapshot({
          ...base,
          unavailable: enabled() ? `no session "${sessionId}" in this workspace` : undefined,
        });
      }
      return readSnapshot(sessionId);
    } catch (error) {
      if (SvcError.is(error) && error.code === 'not_found') throw error;
      const reason = `adaptive state could not be read: ${describe(error)}`;
      if (!posture) throw new SvcError('unavailable', reason, { cause: error });
      return buildSnapshot({ ...base, unavailable: reason });
    }
  }

  // ---- the ordering contract -----------------------------------------------------------------

  /** Step 2: the prompt section of the committed state (also recorded on the active run). */
  function assembleTrace(root: string): PromptTrace {
    const section = renderSection(root);
    const row = store.get(root);
    const trace: PromptTrace = {
      session_id: root,
      genome_fingerprint: rowFingerprint(row) ?? null,
      revision: row?.revision ?? 0,
      chars: section?.text.length ?? 0,
      review_included: section?.review ?? false,
    };
    traces.set(root, trace);
    const runId = safeState(root)?.run_id;
    if (runId) {
      ledger(runId, 'adaptive.prompt_trace', {
        genome_fingerprint: trace.genome_fingerprint,
        revision: trace.revision,
        chars: trace.chars,
      });
    }
    return trace;
  }

  const safeState = (root: string) => {
    try {
      return app.agent.state(root);
    } catch {
      return undefined;
    }
  };

  /** Step 3: the snapshot-backed payloads, read from the committed state. */
  function publish(root: string, reshape: ReshapeAction[] = [], monitorEvaluation = false) {
    const snap = snapshot(root, { posture: true });
    if (snap.action === 'updated') {
      app.bus.publish(root, EVENT.changed, { type: EVENT.changed, session_id: root, action: 'updated' });
    }
    if (snap.action === 'monitor_evaluation') {
      if (monitorEvaluation) app.bus.publish(root, EVENT.monitor, monitorPayload(snap));
    } else {
      app.bus.publish(root, EVENT.genome, { ...snap });
    }
    for (const action of reshape) app.bus.publish(root, EVENT.reshape, { ...snap, reshape_action: action });
  }

  /** Commit a change (step 1), then assemble the trace (2) and publish (3). */
  function commit(
    root: string,
    mutate: (row: AdaptiveRow) => AdaptiveRow | undefined,
    options: {
      reshape?: ReshapeAction[];
      monitorEvaluation?: boolean;
      effects?: (row: AdaptiveRow) => void;
    } = {},
  ): AdaptiveRow | undefined {
    const next = app.db.transaction(() => {
      const current = store.get(root) ?? emptyRow(root, app.clock.now());
      const updated = mutate(current);
      if (updated) store.put({ ...updated, updated_at: app.clock.now() });
      return updated;
    })();
    if (!next) return undefined;
    try {
      options.effects?.(next);
    } catch (error) {
      log.warn('adaptive effect failed', { session_id: root, error: describe(error) });
    }
    assembleTrace(root);
    publish(root, options.reshape, options.monitorEvaluation);
    return next;
  }

  // ---- the genome in force -------------------------------------------------------------------

  function renderSection(root: string): { text: string; review: boolean; preset: Preset } | undefined {
    if (!enabled()) return undefined;
    const row = store.get(root);
    const genome = genomeOf(row);
    if (!genome) return undefined;
    const blocks = [renderGuidance(genome)];
    let review = false;
    if (genome.review_gate) {
      const latest = app.runs.list({ session_id: root, status: ['completed'], limit: 1 })[0];
      const last = latest ? store.reviews(root, 5).find((r) => r.run_id === latest.id) : undefined;
      if (last && (last.status === 'approved' || last.status === 'changes_requested') && last.findings) {
        blocks.push(reviewPromptBlock(last.status, last.findings));
        review = true;
      }
    }
    return { text: blocks.join('\n\n'), review, preset: genome.choreography_preset };
  }

  function promptSection(sessionId: string) {
    if (!enabled() || !dbPresent()) return undefined;
    try {
      const session = app.sessions.get(sessionId);
      if (!session || session.parent_id) return undefined;
      const section = renderSection(sessionId);
      const row = store.get(sessionId);
      traces.set(sessionId, {
        session_id: sessionId,
        genome_fingerprint: rowFingerprint(row) ?? null,
        revision: row?.revision ?? 0,
        chars: section?.text.length ?? 0,
        review_included: section?.review ?? false,
      });
      return section ? { source: `adaptive genome ${section.preset}`, text: section.text } : undefined;
    } catch (error) {
      log.warn('adaptive prompt section failed', { session_id: sessionId, error: describe(error) });
      return undefined;
    }
  }

  const currentGenome = (sessionId: string | undefined): Genome | undefined => {
    if (!sessionId || !enabled() || !dbPresent()) return undefined;
    try {
      const root = rootOf(sessionId);
      return root ? genomeOf(store.get(root)) : undefined;
    } catch {
      return undefined;
    }
  };

  /** Why the session's policy forbids a genome (a tool it needs is withheld), if it does. */
  function blockedReason(root: string, genome: Genome): string | undefined {
    const needed = requiredTools(genome);
    if (!needed.length) return undefined;
    const entries = app.funnel(app.funnelContext(root));
    for (const name of needed) {
      const entry = entries.find((e) => e.name === name);
      if (!entry?.registered) return `${name} is not registered (${entry?.reason ?? 'unknown tool'})`;
      if (entry.removed_by === 'disabled_tools' || entry.removed_by === 'agent_policy') {
        return `${name} is withheld by ${entry.removed_by}: ${entry.reason ?? 'policy'}`;
      }
    }
    return undefined;
  }

  /** Throws when this runtime cannot run the genome (checked before every apply). */
  function validateGenome(genome: Genome) {
    if (genome.review_gate) {
      const id = settings().reviewer_agent;
      try {
        agentKind(app.config, id, 'subagent');
      } catch (error) {
        throw new SvcError(
          'config_error',
          `options.adaptive_orchestration.reviewer_agent: ${describe(error).replace(/^agent: /, '')}`,
        );
      }
    }
  }

  /** plan_gate: enter the staged workflow's planning phase once per genome revision. */
  function applyPlanGate(root: string, row: AdaptiveRow) {
    const genome = genomeOf(row);
    if (!genome?.plan_gate) return;
    const session = app.sessions.get(root);
    if (!session || workflowPhase(session) !== 'none') return;
    const history = Array.isArray(session.metadata.workflow_history) ? session.metadata.workflow_history : [];
    app.sessions.update(root, {
      metadata: {
        workflow_phase: 'planning',
        workflow_history: [
          ...history,
          { from: 'none', to: 'planning', at: app.clock.now(), by: 'adaptive' },
        ].slice(-20),
      },
    });
    app.bus.publish(root, 'workflow.phase_changed', {
      session_id: root,
      phase: 'planning',
      previous: 'none',
    });
  }

  // ---- classification ------------------------------------------------------------------------

  function classifyAtRunStart(root: string, runId: string) {
    const row = store.get(root);
    const decoded = row ? decodeGenome(row.genome) : undefined;
    if (decoded && !decoded.ok) return; // written by a newer svc: leave it alone
    const session = app.sessions.require(root);
    const packPreset = app.packs?.choreography(root);
    if (decoded?.ok && row) {
      const source = row.classification_source;
      const packChanged =
        (source === 'pack' && packPreset !== row.classified_preset) ||
        ((source === 'heuristic' || source === 'config') && packPreset !== undefined);
      if (!packChanged) return;
      reset(
        root,
        packPreset === undefined
          ? 'the operating pack that chose the genome no longer sets a choreography'
          : `the operating pack now sets the choreography ${packPreset}`,
      );
    }
    const run = app.runs.get(runId);
    const result = classify({
      mode: settings().classifier,
      prompt: run?.prompt ?? '',
      defaultPreset: settings().default_preset,
      packPreset,
      override: session.metadata.adaptive_preset,
      defaults: defaults(),
    });
    if (!result) return;
    stats.classifications++;
    const fp = fingerprint(result.genome);
    ledger(runId, 'adaptive.classified', {
      preset: result.genome.choreography_preset,
      source: result.source,
      genome_fingerprint: fp,
      shadow_preset: result.shadow_preset,
      scores: result.scores,
    });
    log.info('adaptive genome classified', {
      session_id: root,
      preset: result.genome.choreography_preset,
      source: result.source,
    });
    commit(
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
      { effects: (next) => applyPlanGate(root, next) },
    );
  }

  // ---- the monitor ---------------------------------------------------------------------------

  function runEnded(root: string, runId: string, status: string) {
    const monitor = settings().monitor;
    if (!monitor.enabled) return;
    let row = store.get(root) ?? emptyRow(root, app.clock.now());
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
      const before = JSON.stringify(readSnapshot(root));
      store.put({ ...row, updated_at: app.clock.now() });
      // The efficacy verdict may have moved: a snapshot change is always published.
      if (JSON.stringify(readSnapshot(root)) !== before) {
        assembleTrace(root);
        publish(root);
      }
      return;
    }
    store.put({ ...row, updated_at: app.clock.now() });
    evaluate(root, runId);
  }

  function evaluate(root: string, triggerRunId: string) {
    stats.evaluations++;
    const row = store.get(root)!;
    const cadence = settings().monitor.cadence;
    const signalId = app.ids.next('sig');
    const genome = genomeOf(row);
    let evaluation: Evaluation;
    let signals: WindowSignals = EMPTY_SIGNALS;
    let proposal: RegulatorProposal | undefined;
    let blocked: string | undefined;
    let shadow: ShadowScore | null = null;
    let hints = row.hint_sources;
    if (row.apply_status === 'pending' && row.proposal) {
      evaluation = {
        cadence,
        decision: 'skipped',
        reason: `a reshape to ${row.proposal.genome.choreography_preset} is queued; the monitor waits until it is applied`,
        signal_id: signalId,
        skip_reason: 'reshape_pending',
      };
    } else {
      let failure: string | undefined;
      try {
        const rejections = store
          .reviewsOfRuns(row.window_runs)
          .filter((r) => r.status === 'changes_requested').length;
        signals = windowSignals(app.runs, row.window_runs, rejections);
      } catch (error) {
        failure = describe(error);
      }
      if (failure !== undefined) {
        evaluation = {
          cadence,
          decision: 'skipped',
          reason: bounded(`the run ledger could not be read: ${failure}`),
          signal_id: signalId,
          skip_reason: 'ledger_unavailable',
        };
      } else if (signals.attributable === 0) {
        evaluation = {
          cadence,
          decision: 'skipped',
          reason: `${signals.runs} run(s) in the window, none completed or failed: cancelled and interrupted runs say nothing about the genome`,
          signal_id: signalId,
          skip_reason: 'no_attributable_runs',
        };
      } else if (!genome) {
        evaluation = {
          cadence,
          decision: 'recorded',
          reason: `monitor only (no effective genome): ${holdReason(signals).replace(/^no signal crossed its threshold /, '')}`,
          signal_id: signalId,
        };
      } else {
        const regulator = regulatorSettings();
        proposal = regulate(genome, signals, regulator);
        const shadowOn = settings().eval_shadow.enabled && row.shadow_preset !== '';
        // hint_sources names what this evaluation consulted (nothing unless the shadow feeds it).
        hints = '';
        if (shadowOn) {
          const shadowPreset = row.shadow_preset as Preset;
          const shadowDecision = regulate(
            presetGenome(shadowPreset, defaults(genome.compaction_threshold)),
            signals,
            regulator,
          );
          const describeDecision = (p: RegulatorProposal | undefined) =>
            p ? `reshape:${p.genome.choreography_preset}` : 'hold';
          shadow = {
            preset: shadowPreset,
            decision: describeDecision(shadowDecision),
            effective_decision: describeDecision(proposal),
            agreed: describeDecision(shadowDecision) === describeDecision(proposal),
          };
          // The eval-shadow aggregate feeds the monitor once the session has enough scored
          // evaluations. When the two regulators have mostly disagreed (agreement below half) and
          // the shadow genome needs no reshape under these very signals, it already answers them:
          // the reshape goes to the shadow preset instead of the effective regulator's target.
          const min = settings().eval_shadow.min_evaluations;
          const scored = store.scored(root, Math.max(min, 2 * min));
          if (scored.length >= min) {
            hints = 'eval_shadow';
            const agreed = scored.filter((s) => s.shadow?.agreed).length;
            const target = presetGenome(shadowPreset, defaults(genome.compaction_threshold));
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
          }
        }
        if (proposal) {
          try {
            blocked = blockedReason(root, proposal.genome);
          } catch (error) {
            blocked = `the tool set could not be checked: ${describe(error)}`;
          }
        }
        evaluation = {
          cadence,
          decision: 'recorded',
          reason: bounded(
            proposal ? `${proposal.reason}${blocked ? `; blocked: ${blocked}` : ''}` : holdReason(signals),
            400,
          ),
          signal_id: signalId,
        };
      }
    }
    const fpNow = genome ? fingerprint(genome) : null;
    const fpNext = proposal && !blocked ? fingerprint(proposal.genome) : null;
    ledger(triggerRunId, 'adaptive.evaluation', {
      decision: evaluation.decision,
      signal_id: signalId,
      ...(evaluation.skip_reason ? { skip_reason: evaluation.skip_reason } : {}),
      ...(proposal ? { rule: proposal.rule, blocked: blocked !== undefined } : {}),
    });
    const accepted = proposal && !blocked ? proposal : undefined;
    const next = commit(
      root,
      (current) => {
        store.addEvaluation(
          {
            session_id: root,
            event_kind: evaluation.decision === 'skipped' ? 'eval_skipped' : 'eval_recorded',
            at: app.clock.now(),
            evaluation,
            previous_fingerprint: fpNext ? fpNow : null,
            next_fingerprint: fpNext,
            effective_preset: genome?.choreography_preset ?? '',
            signals,
            shadow,
          },
          Math.max(historyMax(), EVALUATION_RETENTION),
        );
        const stored: StoredProposal | null = accepted
          ? {
              genome: accepted.genome,
              rule: accepted.rule,
              reason: accepted.reason,
              signal_id: signalId,
              base_revision: current.revision,
              recorded_at: app.clock.now(),
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
        monitorEvaluation: true,
        reshape: proposal ? (blocked ? ['recorded', 'blocked'] : ['recorded']) : [],
      },
    );
    if (!next || !accepted) return;
    if (sessionActive(root)) {
      const runId = safeState(root)?.run_id;
      commit(
        root,
        (current) =>
          current.proposal
            ? {
                ...current,
                apply_status: 'pending',
                pending_since: app.clock.now(),
                pending_reason: bounded(
                  `${accepted.rule}: waiting for the active run${runId ? ` ${runId}` : ''} to end`,
                ),
              }
            : undefined,
        { reshape: ['queued'] },
      );
    } else {
      applyPending(root);
    }
  }

  /** Apply the queued reshape at a safe boundary (or clear, block or fail it). */
  function applyPending(root: string) {
    const row = store.get(root);
    if (!row?.proposal) return;
    const proposal = row.proposal;
    const drop = (reason: string, action: ReshapeAction) =>
      commit(
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
    if (!enabled()) return drop('options.adaptive_orchestration.enabled is false', 'cleared');
    if (proposal.base_revision !== row.revision) {
      return drop('superseded: the genome changed after the reshape was proposed', 'cleared');
    }
    const blocked = blockedReason(root, proposal.genome);
    if (blocked) {
      log.info('adaptive reshape blocked', { session_id: root, reason: blocked });
      return drop(blocked, 'blocked');
    }
    try {
      validateGenome(proposal.genome);
    } catch (error) {
      const message = bounded(app.redactor.string(describe(error)));
      log.warn('adaptive reshape apply failed', { session_id: root, error: message });
      commit(root, (current) => ({
        ...current,
        apply_status: 'pending',
        pending_since: current.pending_since ?? app.clock.now(),
        pending_reason: current.pending_reason || bounded(`${proposal.rule}: retried at the next boundary`),
        apply_error: message,
      }));
      return;
    }
    const previous = rowFingerprint(row) ?? null;
    const next = fingerprint(proposal.genome);
    let conflict = false;
    const applied = app.db.transaction(() => {
      const current = store.get(root);
      if (!current?.proposal) return undefined;
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
        updated_at: app.clock.now(),
      };
      if (!store.putIfRevision(updated, proposal.base_revision)) {
        conflict = true;
        return undefined;
      }
      store.addEvaluation(
        {
          session_id: root,
          event_kind: 'reshape_applied',
          at: app.clock.now(),
          evaluation: proposal.evaluation,
          previous_fingerprint: previous,
          next_fingerprint: next,
          effective_preset: proposal.genome.choreography_preset,
          signals: { failed: proposal.baseline.failed, attributable: proposal.baseline.attributable },
          shadow: null,
        },
        Math.max(historyMax(), EVALUATION_RETENTION),
      );
      return updated;
    })();
    if (conflict) {
      return drop('superseded: another process changed the genome first', 'cleared');
    }
    if (!applied) return;
    stats.reshapes_applied++;
    log.info('adaptive reshape applied', {
      session_id: root,
      rule: proposal.rule,
      from: previous,
      to: next,
    });
    try {
      applyPlanGate(root, applied);
    } catch (error) {
      log.warn('adaptive plan gate failed', { session_id: root, error: describe(error) });
    }
    assembleTrace(root);
    publish(root, ['applied']);
  }

  function reset(sessionId: string, reason: string): AdaptiveSnapshot {
    app.sessions.require(sessionId);
    const row = store.get(sessionId);
    const hadProposal = row?.proposal !== null && row?.proposal !== undefined;
    if (row && (row.genome !== null || hadProposal)) {
      commit(
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
      log.info('adaptive state cleared', { session_id: sessionId, reason });
    }
    return snapshot(sessionId, { posture: true });
  }

  // ---- the reviewer pass ---------------------------------------------------------------------

  function startReview(root: string, runId: string) {
    const run = app.runs.get(runId);
    if (run?.status !== 'completed') return;
    const reviewer = settings().reviewer_agent;
    const now = app.clock.now();
    try {
      agentKind(app.config, reviewer, 'subagent');
    } catch (error) {
      store.addReview({
        session_id: root,
        run_id: runId,
        child_session_id: null,
        child_run_id: null,
        status: 'failed',
        findings: '',
        created_at: now,
        finished_at: now,
      });
      log.warn('adaptive reviewer pass not started', { session_id: root, error: describe(error) });
      return;
    }
    stats.reviews_started++;
    const reviewId = store.addReview({
      session_id: root,
      run_id: runId,
      child_session_id: null,
      child_run_id: null,
      status: 'running',
      findings: '',
      created_at: now,
      finished_at: null,
    });
    reviewsInFlight.set(runId, reviewId);
    const answer = app.agent.result(runId).text;
    const promise = app.agent
      .runChild({
        parentSessionId: root,
        parentRunId: runId,
        prompt: reviewerPrompt({ task: run.prompt, answer, paths: [...(changedPaths.get(runId) ?? [])] }),
        agent: reviewer,
        title: 'reviewer pass',
        yolo: run.options.yolo,
        unattended: 'fail',
      })
      .then((result) => {
        if (closed) return;
        const status = result.status === 'completed' ? parseVerdict(result.text) : 'failed';
        store.updateReview(reviewId, {
          status,
          findings: status === 'failed' ? '' : app.redactor.string(result.text).slice(0, FINDINGS_MAX),
          child_session_id: result.session_id,
          child_run_id: result.run_id,
          finished_at: app.clock.now(),
        });
        ledger(runId, 'adaptive.review', { child_run_id: result.run_id, status });
      })
      .catch((error) => {
        if (closed) return;
        try {
          store.updateReview(reviewId, { status: 'failed', finished_at: app.clock.now() });
        } catch {
          // the database is closing
        }
        log.warn('adaptive reviewer pass failed', { session_id: root, error: describe(error) });
      })
      .finally(() => {
        reviewsInFlight.delete(runId);
        changedPaths.delete(runId);
        inflight.delete(promise);
      });
    inflight.add(promise);
  }

  // ---- the bus -------------------------------------------------------------------------------

  function onRunStarted(sessionId: string, runId: string, parentRunId: string | null) {
    const session = app.sessions.get(sessionId);
    if (!session) return;
    if (session.parent_id) {
      const reviewId = parentRunId ? reviewsInFlight.get(parentRunId) : undefined;
      if (reviewId !== undefined) {
        reviewerRuns.add(runId);
        store.updateReview(reviewId, { child_session_id: sessionId, child_run_id: runId });
      }
      return;
    }
    classifyAtRunStart(sessionId, runId);
    // A run start is a safe boundary too (nothing of this run is assembled yet).
    applyPending(sessionId);
  }

  function onRunFinished(sessionId: string, runId: string, status: string) {
    if (reviewerRuns.delete(runId)) return;
    const root = rootOf(sessionId);
    if (!root) return;
    if (root === sessionId && status === 'completed' && genomeOf(store.get(root))?.review_gate) {
      reviewDue.set(root, runId);
    }
    // The session's run has ended: a reshape queued during it applies before this run is evaluated.
    if (!sessionActive(root)) applyPending(root);
    runEnded(root, runId, status);
  }

  function onIdle(sessionId: string) {
    const session = app.sessions.get(sessionId);
    if (!session || session.parent_id) return;
    applyPending(sessionId);
    const due = reviewDue.get(sessionId);
    if (due) {
      reviewDue.delete(sessionId);
      if (enabled()) startReview(sessionId, due);
    }
  }

  const onEvent = (event: SessionEvent) => {
    if (closed) return;
    const p = event.payload as Record<string, unknown>;
    try {
      if (!enabled()) {
        // A reshape queued before the gate closed is cleared at the next boundary.
        if (event.type === 'state.changed' && p.state === 'idle' && dbPresent())
          applyPending(event.session_id);
        return;
      }
      switch (event.type) {
        case 'run.started':
          onRunStarted(event.session_id, String(p.run_id), (p.parent_run_id as string | null) ?? null);
          break;
        case 'run.finished':
          onRunFinished(event.session_id, String(p.run_id), String(p.status));
          break;
        case 'state.changed':
          if (p.state === 'idle') onIdle(event.session_id);
          break;
        case 'provider_recovery.changed':
          ledger(p.run_id as string | undefined, 'provider_recovery.changed', {
            from: p.from,
            to: p.to,
            reason: p.reason,
          });
          break;
        case 'file.changed':
          if (typeof p.run_id === 'string' && typeof p.path === 'string') {
            let set = changedPaths.get(p.run_id);
            if (!set) {
              set = new Set();
              changedPaths.set(p.run_id, set);
              if (changedPaths.size > 200) changedPaths.delete(changedPaths.keys().next().value!);
            }
            set.add(p.path);
          }
          break;
      }
    } catch (error) {
      log.warn('adaptive monitor failed', {
        type: event.type,
        session_id: event.session_id,
        error: describe(error),
      });
    }
  };
  // The monitor handles each event after its delivery has finished (a microtask, in publish
  // order): its own events are then delivered at once, so a subscriber that reads the state
  // when one arrives reads exactly the state it was built from (EVT-28). A run.started is handled
  // before the run goes on to assemble its prompt and tool set (the run awaits the model first).
  const work: SessionEvent[] = [];
  let scheduled = false;
  const drain = () => {
    try {
      for (let event = work.shift(); event; event = work.shift()) onEvent(event);
    } finally {
      scheduled = false;
    }
  };
  const unsubscribe = app.bus.subscribe('*', (event) => {
    if (closed || !HANDLED.has(event.type)) return;
    work.push(event);
    if (!scheduled) {
      scheduled = true;
      queueMicrotask(drain);
    }
  });

  return {
    snapshot,
    resync(sessionId) {
      const snap = snapshot(sessionId, { posture: true });
      if (snap.action === 'monitor_evaluation') {
        return { event: EVENT.monitor, payload: { ...monitorPayload(snap) } };
      }
      return { event: EVENT.genome, payload: { ...snap } };
    },
    promptSection,
    promptTrace: (sessionId) => traces.get(sessionId),
    compactionThreshold(sessionId) {
      const session = app.sessions.get(sessionId);
      if (!session || session.parent_id) return undefined;
      return currentGenome(sessionId)?.compaction_threshold;
    },
    spawnLimit(sessionId) {
      return currentGenome(sessionId)?.max_parallel_agents ?? 1;
    },
    async acquireSpawnSlot(sessionId, signal) {
      const root = (sessionId && rootOf(sessionId)) || '';
      const genome = currentGenome(root || undefined);
      const limit = genome ? genome.max_parallel_agents : Number.POSITIVE_INFINITY;
      let slot = slots.get(root);
      if (!slot) {
        slot = { active: 0, waiting: [] };
        slots.set(root, slot);
      }
      const state = slot;
      const release = () => {
        state.active--;
        const next = state.waiting.shift();
        if (next) next();
        else if (state.active === 0) slots.delete(root);
      };
      if (state.active < limit) {
        state.active++;
        return release;
      }
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          signal?.removeEventListener('abort', onAbort);
          state.active++;
          resolve();
        };
        const onAbort = () => {
          state.waiting = state.waiting.filter((w) => w !== wake);
          reject(new SvcError('cancelled', 'cancelled while waiting for a sub-agent slot'));
        };
        state.waiting.push(wake);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
      return release;
    },
    spawnSlots() {
      return new Map([...slots].map(([k, v]) => [k, { active: v.active, waiting: v.waiting.length }]));
    },
    reset,
    store,
    dbPresent,
    genome: (sessionId) => currentGenome(sessionId),
    monitorStats: () => ({ ...stats }),
    async idle() {
      while (inflight.size) await Promise.allSettled([...inflight]);
    },
    close() {
      closed = true;
      unsubscribe();
    },
  };
}

function monitorPayload(snap: AdaptiveSnapshot) {
  return {
    type: EVENT.monitor,
    session_id: snap.session_id,
    action: 'monitor_evaluation' as const,
    posture: snap.posture,
    last_monitor_evaluation: snap.last_monitor_evaluation,
  };
}

function describe(error: unknown): string {
  return SvcError.is(error) ? error.message : error instanceof Error ? error.message : String(error);
}
