/**
 * Sub-agent slots per session family: a run of the family may run `max_parallel_agents` of its
 * genome sub-agents at once (unlimited without a genome); the rest wait, in order, for a slot.
 * Slots are this process's: they bound the `agent` tool's fan-out, not other processes'.
 * @module
 */
import { SvcError } from '../errors';

export interface SpawnSlots {
  /** Wait for a slot of the family; returns the release function. */
  acquire(root: string, limit: number, signal?: AbortSignal): Promise<() => void>;
  /** Sub-agents running and waiting for a slot, per session family. */
  usage(): Map<string, { active: number; waiting: number }>;
}

export function createSpawnSlots(): SpawnSlots {
  const slots = new Map<string, { active: number; waiting: (() => void)[] }>();
  return {
    async acquire(root, limit, signal) {
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
    usage() {
      return new Map([...slots].map(([k, v]) => [k, { active: v.active, waiting: v.waiting.length }]));
    },
  };
}
