/**
 * The tools flagged `readsOnly` (src/tools/core/types.ts): calls of them may run on PostgreSQL
 * while their step's first statement is in flight (p-readonly), so the flag means "changes
 * nothing at all" and is set only on audited tools (docs/performance-log.md, p-readonly's audit).
 * Adding one is a reviewed change of this list.
 */
import { describe, expect, it } from 'vitest';
import { allTools } from '../../src/tools/index';

/**
 * The audited list: `get_plan`, `get_workflow_phase` read their session row through
 * `resolveSession`, nothing else (p-readonly); `glob`, `grep`, `ls` run ripgrep (read-only, killed
 * on abort) over the content-addressed ignore file, `view` reads the file and writes its read mark
 * only through `ctx.ahead` (p-readsmore).
 */
const AUDITED = ['get_plan', 'get_workflow_phase', 'glob', 'grep', 'ls', 'view'];

describe('readsOnly tools', () => {
  it('STORE-PG-435: the built-in tools flagged readsOnly are exactly the audited list, none mutating, asking or concurrent', () => {
    const flagged = allTools.filter((tool) => tool.readsOnly === true);
    expect(flagged.map((tool) => tool.name).sort()).toEqual(AUDITED);
    for (const tool of flagged) {
      expect(tool.mutates).toBe(false);
      expect(tool.asksPermission).toBeUndefined();
      expect(tool.concurrent).toBeUndefined();
    }
  });
});
