/**
 * The observe stores' contract (issue 18): what every backend's `prompt_stack_builds` and
 * `codebase_context_cache` answer, run on SQLite and on PostgreSQL by ./observe.contract.test.ts.
 * Pins: build ids increase in insertion order, recent is newest first (per session or all) with
 * sections parsed and nulls kept, count, pruneThrough drops up to an id, probe resolves; the summary
 * cache is undefined until put, one row per workspace, counting computations.
 */
import { expect, it } from 'vitest';
import type { PromptBuild } from '../../../src/observe/prompt-stack-store';
import type { ObserveStores } from '../../../src/observe/stores';
import { withOpened } from './fixture';

export type OpenObserveStores = () => Promise<{ stores: ObserveStores; close: () => Promise<void> }>;

export function observeStoresContract(open: OpenObserveStores): void {
  const withStores = withOpened(open, (f) => f.stores);

  const build = (n: number, sessionId: string | null): PromptBuild => ({
    build_id: `psb_${n}`,
    session_id: sessionId,
    run_id: sessionId ? `run_${n}` : null,
    agent: 'build',
    section_count: 2,
    total_chars: 100 + n,
    token_estimate: 25,
    sha256_prefix: 'abcdef0123456789',
    sections: [
      { name: 'base', source: 'svc', chars: 60, token_estimate: 15, sha256_prefix: '0011223344556677' },
      {
        name: 'extension',
        source: 'pack:x',
        chars: 40 + n,
        token_estimate: 10,
        sha256_prefix: '8899aabbccddeeff',
      },
    ],
    created_at: 1000 + n,
  });

  it(
    'STORE-PG-observe: prompt builds numbered in order, newest first per session, counted and pruned',
    withStores(async ({ promptStacks }) => {
      await promptStacks.probe();
      expect(await promptStacks.count()).toBe(0);
      expect(await promptStacks.recent({ limit: 5 })).toEqual([]);
      const ids: number[] = [];
      ids.push(await promptStacks.insert(build(1, 's1')));
      ids.push(await promptStacks.insert(build(2, null)));
      ids.push(await promptStacks.insert(build(3, 's1')));
      ids.push(await promptStacks.insert(build(4, 's2')));
      expect(ids[1]).toBeGreaterThan(ids[0]);
      expect(ids[2]).toBeGreaterThan(ids[1]);
      expect(ids[3]).toBeGreaterThan(ids[2]);
      expect(await promptStacks.recent({ sessionId: 's1', limit: 5 })).toEqual([
        build(3, 's1'),
        build(1, 's1'),
      ]);
      expect((await promptStacks.recent({ limit: 3 })).map((b) => b.build_id)).toEqual([
        'psb_4',
        'psb_3',
        'psb_2',
      ]);
      expect(await promptStacks.count()).toBe(4);
      expect(await promptStacks.count('s1')).toBe(2);
      expect(await promptStacks.count('nobody')).toBe(0);
      await promptStacks.pruneThrough(ids[1]);
      expect((await promptStacks.recent({ limit: 10 })).map((b) => b.build_id)).toEqual(['psb_4', 'psb_3']);
      expect(await promptStacks.count('s1')).toBe(1);
    }),
  );

  it(
    'STORE-PG-observe: the codebase summary cache is one row per workspace and counts computations',
    withStores(async ({ codebaseCache }) => {
      expect(await codebaseCache.get('/w1')).toBeUndefined();
      await codebaseCache.put('/w1', { summary: '{"files":1}', computed_at: 100, compute_ms: 12 });
      await codebaseCache.put('/w2', { summary: '{"files":9}', computed_at: 150, compute_ms: 0 });
      expect(await codebaseCache.get('/w1')).toEqual({
        summary: '{"files":1}',
        computed_at: 100,
        compute_ms: 12,
        computations: 1,
      });
      await codebaseCache.put('/w1', { summary: '{"files":2}', computed_at: 200, compute_ms: 30 });
      expect(await codebaseCache.get('/w1')).toEqual({
        summary: '{"files":2}',
        computed_at: 200,
        compute_ms: 30,
        computations: 2,
      });
      expect((await codebaseCache.get('/w2'))?.computations).toBe(1);
    }),
  );
}
