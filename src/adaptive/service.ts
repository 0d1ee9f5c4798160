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
 *
 * The parts: reads.ts (snapshot), prompt-trace.ts, commit.ts (the ordering contract),
 * classification.ts, monitor.ts, reshape.ts, gates.ts, review-pass.ts, spawn-slots.ts; this file
 * wires them to the bus.
 * @module
 */
import type { SessionEvent } from '../events/bus';
import { createClassification } from './classification';
import { createCommitter } from './commit';
import { type AdaptiveDeps, createAdaptiveContext, describe, type MonitorStats } from './context';
import { createGenomeGates } from './gates';
import type { Genome } from './genome';
import { createMonitor } from './monitor';
import { createPromptTraces, type PromptTrace } from './prompt-trace';
import { type AdaptiveResync, createSnapshotReader } from './reads';
import { createReshaper } from './reshape';
import { createReviewPasses } from './review-pass';
import type { AdaptiveSnapshot } from './snapshot';
import { createSpawnSlots } from './spawn-slots';
import type { AdaptiveStore } from './store';

export type { AdaptiveDeps, MonitorStats, ToolFunnelEntry } from './context';
export type { PromptTrace } from './prompt-trace';
export type { AdaptiveResync } from './reads';

export interface AdaptiveService {
  /**
   * The snapshot of a session. Without `posture`, the gate must be on and the session must
   * exist (the native and MCP tools fail closed). With `posture` (the CLI projection and the SSE
   * resync) it never throws for a closed gate or an unknown session: the posture says so.
   * Reading never classifies, evaluates or writes.
   */
  snapshot(sessionId: string | undefined, options?: { posture?: boolean }): Promise<AdaptiveSnapshot>;
  /** The SSE `include_snapshot` resync event of a session. */
  resync(sessionId: string): Promise<AdaptiveResync>;
  /** The system-prompt section of a session: the genome guidance (and the last reviewer findings). */
  promptSection(sessionId: string): Promise<{ source: string; text: string } | undefined>;
  /** The prompt trace last assembled for the session (ordering contract, step 2). */
  promptTrace(sessionId: string): PromptTrace | undefined;
  /** The session's auto-compaction threshold from its genome; undefined → the config default. */
  compactionThreshold(sessionId: string): Promise<number | undefined>;
  /** Sub-agents a run of the session may run at once: `max_parallel_agents` of its genome, else 1. */
  spawnLimit(sessionId: string | undefined): Promise<number>;
  /**
   * Wait for a sub-agent slot of the session family (limit: its genome's `max_parallel_agents`;
   * unlimited without a genome). Returns the release function.
   */
  acquireSpawnSlot(sessionId: string | undefined, signal?: AbortSignal): Promise<() => void>;
  /** Sub-agents running and waiting for a slot in this process, per session family. */
  spawnSlots(): Map<string, { active: number; waiting: number }>;
  /** Remove a session's adaptive state (`action` cleared); the next run classifies again. */
  reset(sessionId: string, reason: string): Promise<AdaptiveSnapshot>;
  readonly store: AdaptiveStore;
  /** Whether a database exists to read (reads never create one). */
  dbPresent(): boolean;
  /** The current genome of a session (decoded), if any. */
  genome(sessionId: string): Promise<Genome | undefined>;
  monitorStats(): MonitorStats;
  /** Resolves when every reviewer pass started by this process has finished. */
  idle(): Promise<void>;
  /**
   * The bus events already delivered are handled (their handlers are async since the store is,
   * issue 18): the agent waits for it after a run's start and before answering its waiters, where
   * the handlers used to finish within the microtask after the event.
   */
  settled(): Promise<void>;
  /**
   * With the layer off, a run of `sessionId` starting now has nothing to wait for: every event
   * published so far is delivered, and no idle-state handler of that session is queued or running
   * (other sessions' handlers, which only clear their own proposals, do not touch this run). A
   * caller skips its `settled()` then; with the layer on, never quiet. `fresh`: the session is
   * inserted by a statement still on its way, its events joined to it (a lone PostgreSQL start's
   * run prepared during its round trip, p-pgoverlap): it has no idle state, so none of its events,
   * delivered or not, has work with the layer off.
   */
  quiet(sessionId: string, fresh?: boolean): boolean;
  close(): void;
}

const HANDLED = new Set([
  'run.started',
  'run.finished',
  'state.changed',
  'provider_recovery.changed',
  'file.changed',
]);

/** Subscribes to the session bus at once (a passive subscription); `close()` stops it. */
export function createAdaptiveService(deps: AdaptiveDeps): AdaptiveService {
  const ctx = createAdaptiveContext(deps);
  const reads = createSnapshotReader(ctx);
  const traces = createPromptTraces(ctx);
  const committer = createCommitter(ctx, reads, traces);
  const gates = createGenomeGates(ctx);
  const classification = createClassification(ctx, reads, committer, gates);
  const reshaper = createReshaper(ctx, committer, gates);
  const monitor = createMonitor(ctx, reads, committer, gates, reshaper);
  const reviews = createReviewPasses(ctx);
  const slots = createSpawnSlots();
  const subscription = subscribe(ctx, {
    async runStarted(sessionId, runId, parentRunId) {
      const session = await deps.sessions.get(sessionId);
      if (!session) return;
      if (session.parent_id) return await reviews.childStarted(sessionId, runId, parentRunId);
      await classification.atRunStart(sessionId, runId);
      // A run start is a safe boundary too (nothing of this run is assembled yet).
      await reshaper.applyPending(sessionId);
    },
    async runFinished(sessionId, runId, status) {
      if (reviews.reviewerRunEnded(runId)) return;
      const root = await ctx.rootOf(sessionId);
      if (!root) return;
      if (
        root === sessionId &&
        status === 'completed' &&
        ctx.genomeOf(await ctx.store.get(root))?.review_gate
      ) {
        reviews.due(root, runId);
      }
      // The session's run has ended: a reshape queued during it applies before this run is evaluated.
      if (!(await ctx.sessionActive(root))) await reshaper.applyPending(root);
      await monitor.runEnded(root, runId, status);
    },
    async idle(sessionId) {
      const session = await deps.sessions.get(sessionId);
      if (!session || session.parent_id) return;
      await reshaper.applyPending(sessionId);
      await reviews.startDue(sessionId);
    },
    applyPending: async (sessionId) => await reshaper.applyPending(sessionId),
    fileChanged: (runId, path) => reviews.fileChanged(runId, path),
  });

  return {
    snapshot: reads.snapshot,
    resync: reads.resync,
    promptSection: traces.promptSection,
    promptTrace: traces.get,
    async compactionThreshold(sessionId) {
      // Off (or no database): no genome, so no session read (issue 17 item 3: every run asks).
      if (!ctx.enabled() || !deps.dbPresent()) return undefined;
      const session = await deps.sessions.get(sessionId);
      if (!session || session.parent_id) return undefined;
      return (await reads.currentGenome(sessionId))?.compaction_threshold;
    },
    spawnLimit: async (sessionId) => (await reads.currentGenome(sessionId))?.max_parallel_agents ?? 1,
    async acquireSpawnSlot(sessionId, signal) {
      const root = (sessionId && (await ctx.rootOf(sessionId))) || '';
      const genome = await reads.currentGenome(root || undefined);
      return slots.acquire(root, genome ? genome.max_parallel_agents : Number.POSITIVE_INFINITY, signal);
    },
    spawnSlots: slots.usage,
    reset: classification.reset,
    store: ctx.store,
    dbPresent: deps.dbPresent,
    genome: async (sessionId) => await reads.currentGenome(sessionId),
    monitorStats: () => ({ ...ctx.stats }),
    idle: reviews.idle,
    settled: subscription.settled,
    quiet: subscription.quiet,
    close() {
      ctx.lifecycle.closed = true;
      subscription.unsubscribe();
    },
  };
}

interface BusHandlers {
  runStarted(sessionId: string, runId: string, parentRunId: string | null): Promise<void>;
  runFinished(sessionId: string, runId: string, status: string): Promise<void>;
  idle(sessionId: string): Promise<void>;
  /** With the layer off: a reshape queued before the gate closed is cleared at the next boundary. */
  applyPending(sessionId: string): Promise<void>;
  fileChanged(runId: string, path: string): void;
}

/**
 * The monitor handles each event after the publisher's stretch of work (at the end of the
 * event-loop turn, in publish order; the store's awaits resolve within the turn): its own events
 * are then delivered at once, so a subscriber that reads the state when one arrives reads exactly
 * the state it was built from (EVT-28). A run.started is handled before the run goes on to
 * assemble its prompt and tool set, a run.finished and the idle state before the run's waiters are
 * answered: the agent waits for `settled()` there, which first waits for the bus to store and
 * deliver what was published before it (on PostgreSQL an event arrives after its append).
 */
function subscribe(
  ctx: ReturnType<typeof createAdaptiveContext>,
  on: BusHandlers,
): {
  unsubscribe: () => void;
  settled: () => Promise<void>;
  quiet: (sessionId: string, fresh?: boolean) => boolean;
} {
  const onEvent = async (event: SessionEvent) => {
    if (ctx.lifecycle.closed) return;
    const p = event.payload as Record<string, unknown>;
    try {
      if (!ctx.enabled()) {
        if (event.type === 'state.changed' && p.state === 'idle' && ctx.deps.dbPresent())
          await on.applyPending(event.session_id);
        return;
      }
      switch (event.type) {
        case 'run.started':
          await on.runStarted(event.session_id, String(p.run_id), (p.parent_run_id as string | null) ?? null);
          break;
        case 'run.finished':
          await on.runFinished(event.session_id, String(p.run_id), String(p.status));
          break;
        case 'state.changed':
          if (p.state === 'idle') await on.idle(event.session_id);
          break;
        case 'provider_recovery.changed':
          await ctx.ledger(p.run_id as string | undefined, 'provider_recovery.changed', {
            from: p.from,
            to: p.to,
            reason: p.reason,
          });
          break;
        case 'file.changed':
          if (typeof p.run_id === 'string' && typeof p.path === 'string') on.fileChanged(p.run_id, p.path);
          break;
      }
    } catch (error) {
      ctx.log.warn('adaptive monitor failed', {
        type: event.type,
        session_id: event.session_id,
        error: describe(error),
      });
    }
  };
  const work: SessionEvent[] = [];
  /** Payloads of events `settled()` handled while their transaction held them: not handled again. */
  const early = new WeakSet<object>();
  let draining: Promise<void> | undefined;
  /** The session of the event being handled. */
  let handling: string | undefined;
  const drain = async () => {
    try {
      for (let event = work.shift(); event; event = work.shift()) {
        handling = event.session_id;
        await onEvent(event);
      }
    } finally {
      handling = undefined;
      draining = undefined;
    }
  };
  // In the publisher's async context, deliberately (unlike the background listeners, which run in
  // their own: src/events/own-context.ts): a run waits for `settled()` before it assembles its
  // prompt, and the monitor's reads of the run and the session must see what the run's start wrote,
  // in its transaction when that is still open (e9439a6, STORE-PG-adaptive); out of it they would
  // miss the uncommitted rows, or wait on their locks for a COMMIT that waits for them.
  const unsubscribe = ctx.deps.bus.subscribe('*', (event) => {
    if (ctx.lifecycle.closed || !HANDLED.has(event.type) || early.has(event.payload)) return;
    // With the layer off only the idle state has work (`applyPending`): the other events queue
    // nothing, so a run's `settled()` at its start does not wait a turn for a no-op (issue 17).
    // The idle state is queued even when the store knows there is no proposal to clear (its
    // handler then reads nothing): the run's waiters (`settled()` after its finish) wait for the
    // handler's turn, and with it for the finish's COMMIT and the background listeners' work on
    // run.finished (a capsule's finalization), as they always did.
    if (!ctx.enabled() && !(event.type === 'state.changed' && event.payload.state === 'idle')) return;
    work.push(event);
    draining ??= new Promise<void>((resolve) => setImmediate(() => void drain().then(resolve)));
  });
  return {
    unsubscribe,
    quiet: (sessionId, fresh) =>
      !ctx.enabled() &&
      (fresh === true ||
        (ctx.deps.bus.drained?.() === true &&
          handling !== sessionId &&
          !work.some((event) => event.session_id === sessionId))),
    async settled() {
      // The events published so far reach this monitor once stored: at once on SQLite, after
      // the append's round trip on PostgreSQL. Wait for them, then for the monitor's work.
      await ctx.deps.bus.flush();
      while (draining) await draining;
      // Not those the caller's transaction holds (a compat start's run, PostgreSQL): they are
      // delivered after its COMMIT, never before (p-heldfix). The monitor handles them here, in
      // the caller's context (its reads see the run's start in that transaction, as on SQLite's
      // one connection), and not again when they are delivered. With the layer off they have no
      // work (an idle state is not published inside a start).
      if (!ctx.enabled()) return;
      for (const event of ctx.deps.bus.heldOwn()) {
        if (!HANDLED.has(event.type) || early.has(event.payload)) continue;
        early.add(event.payload);
        work.push({ ...event, id: 0 });
      }
      if (!work.length) return;
      draining = drain();
      while (draining) await draining;
    },
  };
}
