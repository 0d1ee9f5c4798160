/**
 * The ordering contract of every change (spec): the state is committed (1), the prompt trace is
 * assembled from the committed state (2), then the snapshot-backed payloads are published on the
 * bus (3), whose ring and log serve replay.
 * @module
 */
import { type AdaptiveContext, describe, EVENT } from './context';
import type { PromptTraces } from './prompt-trace';
import { monitorPayload, type SnapshotReader } from './reads';
import type { ReshapeAction } from './snapshot';
import { type AdaptiveRow, type EvaluationRow, emptyRow } from './store';

export interface CommitOptions {
  reshape?: ReshapeAction[];
  monitorEvaluation?: boolean;
  /** An evaluation recorded in the same transaction as the change (when there is one). */
  evaluation?: { row: Omit<EvaluationRow, 'id'>; keep: number };
  /** Runs after the commit, before the trace (a failure is logged). */
  effects?: (row: AdaptiveRow) => Promise<void>;
}

export interface Committer {
  /** Commit a change (step 1), then assemble the trace (2) and publish (3); undefined: no change. */
  commit(
    root: string,
    mutate: (row: AdaptiveRow) => AdaptiveRow | undefined,
    options?: CommitOptions,
  ): Promise<AdaptiveRow | undefined>;
  /** Steps 2 and 3 for a change already committed. */
  announce(root: string, reshape?: ReshapeAction[], monitorEvaluation?: boolean): Promise<void>;
}

export function createCommitter(
  ctx: AdaptiveContext,
  reads: SnapshotReader,
  traces: PromptTraces,
): Committer {
  const { store, deps } = ctx;

  /** Step 3: the snapshot-backed payloads, read from the committed state. */
  async function publish(root: string, reshape: ReshapeAction[] = [], monitorEvaluation = false) {
    const snap = await reads.snapshot(root, { posture: true });
    if (snap.action === 'updated') {
      deps.bus.publish(root, EVENT.changed, { type: EVENT.changed, session_id: root, action: 'updated' });
    }
    if (snap.action === 'monitor_evaluation') {
      if (monitorEvaluation) deps.bus.publish(root, EVENT.monitor, monitorPayload(snap));
    } else {
      deps.bus.publish(root, EVENT.genome, { ...snap });
    }
    for (const action of reshape) deps.bus.publish(root, EVENT.reshape, { ...snap, reshape_action: action });
  }

  const announce = async (root: string, reshape?: ReshapeAction[], monitorEvaluation?: boolean) => {
    await traces.assemble(root);
    await publish(root, reshape, monitorEvaluation);
  };

  return {
    async commit(root, mutate, options = {}) {
      let next: AdaptiveRow | undefined;
      await store.update(root, (stored) => {
        const current = stored ?? emptyRow(root, deps.clock.now());
        next = mutate(current);
        if (!next) return undefined;
        return { row: { ...next, updated_at: deps.clock.now() }, evaluation: options.evaluation };
      });
      if (!next) return undefined;
      try {
        await options.effects?.(next);
      } catch (error) {
        ctx.log.warn('adaptive effect failed', { session_id: root, error: describe(error) });
      }
      await announce(root, options.reshape, options.monitorEvaluation);
      return next;
    },
    announce,
  };
}
