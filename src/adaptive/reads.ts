/**
 * Reading the adaptive state of a session: the snapshot (for the tools, the CLI and the SSE
 * resync) and the genome in force. Reading never classifies, evaluates or writes.
 * @module
 */
import { SvcError } from '../errors';
import { type AdaptiveContext, describe, EVENT } from './context';
import type { Genome } from './genome';
import { type AdaptiveSnapshot, buildSnapshot, HISTORY_RESPONSE_CAP } from './snapshot';

/**
 * The adaptive-orchestration resync sent on the SSE session stream with `include_snapshot`
 * (spec, Events): the `adaptive_orchestration.genome` snapshot, or
 * `adaptive_orchestration.monitor_evaluation` when the monitor recorded an evaluation and there is
 * no effective genome.
 */
export interface AdaptiveResync {
  event: 'adaptive_orchestration.genome' | 'adaptive_orchestration.monitor_evaluation';
  payload: Record<string, unknown>;
}

export interface SnapshotReader {
  /** The snapshot from the stored state (no gate or session check). */
  read(sessionId: string): Promise<AdaptiveSnapshot>;
  snapshot(sessionId: string | undefined, options?: { posture?: boolean }): Promise<AdaptiveSnapshot>;
  resync(sessionId: string): Promise<AdaptiveResync>;
  /** The genome in force for a session's family, when the layer is on and a database exists. */
  currentGenome(sessionId: string | undefined): Promise<Genome | undefined>;
}

export function createSnapshotReader(ctx: AdaptiveContext): SnapshotReader {
  const { store } = ctx;

  async function read(sessionId: string): Promise<AdaptiveSnapshot> {
    const row = await store.get(sessionId);
    const max = ctx.historyMax();
    return buildSnapshot({
      sessionId,
      implemented: true,
      configured: ctx.enabled(),
      historyMax: max,
      row,
      history: max > 0 ? await store.evaluations(sessionId, Math.min(max, HISTORY_RESPONSE_CAP)) : [],
    });
  }

  async function snapshot(
    sessionId: string | undefined,
    options: { posture?: boolean } = {},
  ): Promise<AdaptiveSnapshot> {
    const posture = options.posture === true;
    const enabled = ctx.enabled();
    if (!posture && !enabled) {
      throw new SvcError(
        'unavailable',
        'adaptive orchestration is not available: options.adaptive_orchestration.enabled is false',
      );
    }
    const base = {
      sessionId: sessionId ?? '',
      implemented: true,
      configured: enabled,
      historyMax: ctx.historyMax(),
      history: [],
    };
    if (!sessionId) {
      if (!posture)
        throw new SvcError('invalid_input', 'session_id: required (no current session to default to)');
      return buildSnapshot(base);
    }
    if (posture && !ctx.deps.dbPresent()) {
      return buildSnapshot({
        ...base,
        unavailable: enabled
          ? `no session "${sessionId}": this data directory has no database yet`
          : undefined,
      });
    }
    try {
      if (!(await ctx.deps.sessions.get(sessionId))) {
        if (!posture)
          throw new SvcError('not_found', `session_id: no session "${sessionId}"; see svc session list`);
        return buildSnapshot({
          ...base,
          unavailable: enabled ? `no session "${sessionId}" in this workspace` : undefined,
        });
      }
      return await read(sessionId);
    } catch (error) {
      if (SvcError.is(error) && error.code === 'not_found') throw error;
      const reason = `adaptive state could not be read: ${describe(error)}`;
      if (!posture) throw new SvcError('unavailable', reason, { cause: error });
      return buildSnapshot({ ...base, unavailable: reason });
    }
  }

  return {
    read,
    snapshot,
    async resync(sessionId) {
      const snap = await snapshot(sessionId, { posture: true });
      if (snap.action === 'monitor_evaluation') {
        return { event: EVENT.monitor, payload: { ...monitorPayload(snap) } };
      }
      return { event: EVENT.genome, payload: { ...snap } };
    },
    async currentGenome(sessionId) {
      if (!sessionId || !ctx.enabled() || !ctx.deps.dbPresent()) return undefined;
      try {
        const root = await ctx.rootOf(sessionId);
        return root ? ctx.genomeOf(await store.get(root)) : undefined;
      } catch {
        return undefined;
      }
    },
  };
}

/** The `adaptive_orchestration.monitor_evaluation` payload of a snapshot. */
export function monitorPayload(snap: AdaptiveSnapshot) {
  return {
    type: EVENT.monitor,
    session_id: snap.session_id,
    action: 'monitor_evaluation' as const,
    posture: snap.posture,
    last_monitor_evaluation: snap.last_monitor_evaluation,
  };
}
