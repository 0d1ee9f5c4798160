import { describe, expect, it } from 'vitest';
import {
  createPromptStackLedger,
  PROMPT_STACK_PRUNE_BATCH,
  PROMPT_STACK_RETENTION,
} from '../../src/observe/prompt-stack';
import type { PromptBuild, PromptStackStore } from '../../src/observe/prompt-stack-store';

/** A store keeping ids only: what a prune leaves is what the ledger asked for. */
function idStore() {
  const ids = new Set<number>();
  let next = 0;
  const prunes: number[] = [];
  const store = {
    async insert(_build: PromptBuild) {
      next++;
      ids.add(next);
      return next;
    },
    async pruneThrough(id: number) {
      prunes.push(id);
      for (const kept of ids) if (kept <= id) ids.delete(kept);
    },
  } as unknown as PromptStackStore;
  return { store, ids, prunes, skip: (n: number) => (next += n) };
}

const record = (ledger: ReturnType<typeof createPromptStackLedger>) =>
  ledger.record({
    agent: 'build',
    system: 'base',
    sections: [{ name: 'base', source: 'builtin', text: 'base' }],
  });

describe('prompt stack retention', () => {
  it('ENGINE-SIDE-20: at most PROMPT_STACK_RETENTION builds are kept, pruned once per batch of builds, not on every build', async () => {
    const { store, ids, prunes } = idStore();
    const ledger = createPromptStackLedger({
      store,
      clock: { now: () => 1 },
      ids: { next: (p: string) => `${p}_x` },
    } as never);
    const total = PROMPT_STACK_RETENTION + 3 * PROMPT_STACK_PRUNE_BATCH + 7;
    for (let i = 0; i < total; i++) {
      await record(ledger);
      expect(ids.size).toBeLessThanOrEqual(PROMPT_STACK_RETENTION);
    }
    expect(prunes.length).toBe(4);
    expect(Math.min(...ids)).toBeGreaterThan(total - PROMPT_STACK_RETENTION);
  });

  it('ENGINE-SIDE-21: ids taken by another process between this one’s builds still leave at most the retention', async () => {
    const { store, ids, skip } = idStore();
    const ledger = createPromptStackLedger({
      store,
      clock: { now: () => 1 },
      ids: { next: (p: string) => `${p}_x` },
    } as never);
    for (let i = 0; i < PROMPT_STACK_RETENTION + 50; i++) {
      await record(ledger);
      if (i % 7 === 0) skip(3);
      const newest = Math.max(...ids);
      expect(Math.min(...ids)).toBeGreaterThan(newest - PROMPT_STACK_RETENTION);
    }
  });
});
