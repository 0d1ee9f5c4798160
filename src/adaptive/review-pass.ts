/**
 * The reviewer pass of a `review_gate` genome: after a completed top-level run, at the session's
 * next idle boundary, a reviewer sub-agent (`options.adaptive_orchestration.reviewer_agent`)
 * checks the work; its verdict is stored (a monitor signal) and its findings join the executor's
 * next prompt (./prompt-trace.ts). The paths the run changed go into the reviewer's prompt.
 * @module
 */
import { agentKind } from '../agent/agent-kinds';
import { type AdaptiveContext, describe } from './context';
import { FINDINGS_MAX, parseVerdict, reviewerPrompt } from './reviewer';

export interface ReviewPasses {
  /** A completed run whose pass starts at the session's next idle boundary. */
  due(root: string, runId: string): void;
  /** The session is idle: start its due pass (when the layer is on). */
  startDue(root: string): Promise<void>;
  /** A child run started: when it is a reviewer's, link it to its pass. */
  childStarted(sessionId: string, runId: string, parentRunId: string | null): Promise<void>;
  /** A run ended: true when it was a reviewer's run (the monitor ignores those). */
  reviewerRunEnded(runId: string): boolean;
  /** A file a run changed (for the reviewer's prompt). */
  fileChanged(runId: string, path: string): void;
  /** Resolves when every pass started by this process has finished. */
  idle(): Promise<void>;
}

export function createReviewPasses(ctx: AdaptiveContext): ReviewPasses {
  const { store, deps } = ctx;
  /** Root session → the completed run whose reviewer pass starts at the next idle boundary. */
  const reviewDue = new Map<string, string>();
  /** Reviewed run id → review row id, while the pass runs. */
  const reviewsInFlight = new Map<string, number>();
  const reviewerRuns = new Set<string>();
  const inflight = new Set<Promise<void>>();
  /** Run id → paths the run changed (for the reviewer's prompt). */
  const changedPaths = new Map<string, Set<string>>();

  async function start(root: string, runId: string) {
    const run = await deps.runs.get(runId);
    if (run?.status !== 'completed') return;
    const reviewer = ctx.settings().reviewer_agent;
    const now = deps.clock.now();
    try {
      agentKind(deps.config(), reviewer, 'subagent');
    } catch (error) {
      await store.addReview({
        session_id: root,
        run_id: runId,
        child_session_id: null,
        child_run_id: null,
        status: 'failed',
        findings: '',
        created_at: now,
        finished_at: now,
      });
      ctx.log.warn('adaptive reviewer pass not started', { session_id: root, error: describe(error) });
      return;
    }
    ctx.stats.reviews_started++;
    const reviewId = await store.addReview({
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
    const answer = (await deps.agent.result(runId)).text;
    const promise = deps.agent
      .runChild({
        parentSessionId: root,
        parentRunId: runId,
        prompt: reviewerPrompt({ task: run.prompt, answer, paths: [...(changedPaths.get(runId) ?? [])] }),
        agent: reviewer,
        title: 'reviewer pass',
        yolo: run.options.yolo,
        unattended: 'fail',
      })
      .then(async (result) => {
        if (ctx.lifecycle.closed) return;
        const status = result.status === 'completed' ? parseVerdict(result.text) : 'failed';
        await store.updateReview(reviewId, {
          status,
          findings: status === 'failed' ? '' : deps.redactor.string(result.text).slice(0, FINDINGS_MAX),
          child_session_id: result.session_id,
          child_run_id: result.run_id,
          finished_at: deps.clock.now(),
        });
        await ctx.ledger(runId, 'adaptive.review', { child_run_id: result.run_id, status });
      })
      .catch(async (error) => {
        if (ctx.lifecycle.closed) return;
        try {
          await store.updateReview(reviewId, { status: 'failed', finished_at: deps.clock.now() });
        } catch {
          // the database is closing
        }
        ctx.log.warn('adaptive reviewer pass failed', { session_id: root, error: describe(error) });
      })
      .finally(() => {
        reviewsInFlight.delete(runId);
        changedPaths.delete(runId);
        inflight.delete(promise);
      });
    inflight.add(promise);
  }

  return {
    due: (root, runId) => void reviewDue.set(root, runId),
    async startDue(root) {
      const due = reviewDue.get(root);
      if (!due) return;
      reviewDue.delete(root);
      if (ctx.enabled()) await start(root, due);
    },
    async childStarted(sessionId, runId, parentRunId) {
      const reviewId = parentRunId ? reviewsInFlight.get(parentRunId) : undefined;
      if (reviewId === undefined) return;
      reviewerRuns.add(runId);
      await store.updateReview(reviewId, { child_session_id: sessionId, child_run_id: runId });
    },
    reviewerRunEnded: (runId) => reviewerRuns.delete(runId),
    fileChanged(runId, path) {
      let set = changedPaths.get(runId);
      if (!set) {
        set = new Set();
        changedPaths.set(runId, set);
        if (changedPaths.size > 200) changedPaths.delete(changedPaths.keys().next().value!);
      }
      set.add(path);
    },
    async idle() {
      while (inflight.size) await Promise.allSettled([...inflight]);
    },
  };
}
