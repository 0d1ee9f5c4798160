/**
 * Where the durable engine plugs into the agent (issue 19): the agent is built with the slot's
 * `durable`, which runs a run in-process until a serving node launches DBOS and `attach`es it
 * (src/app.ts `launchDurableRuns`); root runs started from then on are its workflows.
 * @module
 */
import type { DurableRuns } from '../agent/deps';

export function createDurableSlot(): {
  durable: DurableRuns;
  attach(engine: DurableRuns): void;
  /** Whether a durable engine is attached (this node runs runs the engine's queue gives it). */
  attached(): boolean;
} {
  let attached: DurableRuns | undefined;
  return {
    durable: {
      execute: (runId, body) => (attached ? attached.execute(runId, body) : body()),
      handOver: async () => (await attached?.handOver?.()) ?? new Set<string>(),
      enqueue: async (runId, workspace) => await attached?.enqueue?.(runId, workspace),
      queues: () => attached?.enqueue !== undefined && (attached.queues?.() ?? true),
      outside: (fn) => (attached?.outside ? attached.outside(fn) : fn()),
      workflows: () => attached !== undefined,
    },
    attach(engine) {
      attached = engine;
    },
    attached: () => attached !== undefined,
  };
}
