/**
 * A run's prompt stack build held for the run ledger's statement (`PromptStackLedger.hold`,
 * src/observe/prompt-stack.ts, p-pgprep): with a store that hands its insert out (PostgreSQL),
 * `record` during the hold writes nothing and the hold's end gives the build, its insert and the
 * prune check; other runs' builds and a store without `insertWrite` (SQLite) are written as before.
 */
import { describe, expect, it } from 'vitest';
import {
  createPromptStackLedger,
  PROMPT_STACK_PRUNE_BATCH,
  PROMPT_STACK_RETENTION,
} from '../../src/observe/prompt-stack';
import type { PromptBuild, PromptStackStore } from '../../src/observe/prompt-stack-store';

function store(handsOut: boolean) {
  const inserted: string[] = [];
  const prunes: number[] = [];
  const s: PromptStackStore = {
    insert: async (build: PromptBuild) => inserted.push(build.build_id),
    pruneThrough: async (id: number) => {
      prunes.push(id);
    },
    recent: async () => [],
    count: async () => inserted.length,
    probe: async () => {},
    ...(handsOut
      ? { insertWrite: (build: PromptBuild) => ({ text: 'INSERT … RETURNING id', values: [build.build_id] }) }
      : {}),
  };
  return { store: s, inserted, prunes };
}

const ledgerOver = (s: PromptStackStore) => {
  let n = 0;
  return createPromptStackLedger({
    store: s,
    clock: { now: () => 1 },
    ids: { next: (p: string) => `${p}_${++n}` },
  } as never);
};
const record = (ledger: ReturnType<typeof createPromptStackLedger>, runId: string) =>
  ledger.record({
    runId,
    agent: 'build',
    system: 'base',
    sections: [{ name: 'base', source: 'builtin', text: 'base' }],
  });

describe('a run’s prompt stack build held', () => {
  it('STORE-PG-227: a held build is not written by record; the hold gives its insert and prune check; others write as before', async () => {
    const { store: s, inserted, prunes } = store(true);
    const ledger = ledgerOver(s);
    const end = ledger.hold('run_a');
    const build = await record(ledger, 'run_a');
    await record(ledger, 'run_b');
    expect(inserted).toEqual(['psb_2']);
    const held = end();
    expect(held?.build).toEqual(build);
    expect(held?.insert).toEqual({ text: 'INSERT … RETURNING id', values: [build.build_id] });
    // The row id its statement answered: the same prune check as record's.
    await held?.written(PROMPT_STACK_RETENTION + 1);
    expect(prunes).toEqual([PROMPT_STACK_PRUNE_BATCH + 1]);
    // The hold is over: the run's next build is written.
    expect(end()).toBeUndefined();
    await record(ledger, 'run_a');
    expect(inserted).toEqual(['psb_2', 'psb_3']);
    // Held but nothing to write it with: written alone.
    const again = ledger.hold('run_c');
    await record(ledger, 'run_c');
    await again()?.writeAlone();
    expect(inserted).toEqual(['psb_2', 'psb_3', 'psb_4']);
  });

  it('STORE-PG-228: a store without insertWrite (SQLite) writes a build made during a hold; the hold gives nothing', async () => {
    const { store: s, inserted } = store(false);
    const ledger = ledgerOver(s);
    const end = ledger.hold('run_a');
    await record(ledger, 'run_a');
    expect(inserted).toEqual(['psb_1']);
    expect(end()).toBeUndefined();
  });
});
