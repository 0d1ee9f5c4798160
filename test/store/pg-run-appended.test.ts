/**
 * A run's `tool.finished` events at its end without a read on PostgreSQL (`takeAppended`, as
 * SQLite's since stop 37; src/runs/pg-run-ledger.ts): the events this ledger appended to a run,
 * from its first on, as a read gives them; once another node appended to the run, undefined (read).
 */
import { describe, expect, it } from 'vitest';
import { postgresForFile } from '../helpers/postgres';
import { ledgerNodes, runInput } from './ledger-nodes';

const pg = postgresForFile();

describe.skipIf(!pg.available)('a run end without its tool results read', () => {
  it('STORE-PG-103: takeAppended answers the run`s tool.finished events as a read gives them, once; another node`s event makes it undefined', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      await nodes.sessions('s-own', 's-shared');
      const a = nodes.open('rnr_a', 'host-a', 3_600_000);
      const b = nodes.open('rnr_b', 'host-b', 3_600_000, nodes.other);
      const run = await a.create(runInput('s-own'));
      const claimed = await a.claim(run.id, { started: true });
      expect(claimed.ok).toBe(true);
      await a.append(run.id, 'phase', { phase: 'model' });
      await a.append(run.id, 'tool.finished', {
        tool: 'write',
        is_error: true,
        failure: { code: 'tool_refused' },
      });
      await a.updateAndAppend?.(run.id, { steps: 1 }, 'step.finished', { step: 1 });
      await a.append(run.id, 'tool.finished', { tool: 'write', is_error: false, text: 'ü "q" \\' });
      const read = await a.events(run.id, { types: ['tool.finished'] });
      expect(read).toHaveLength(2);
      expect(a.takeAppended?.(run.id, 'tool.finished')).toEqual(read);
      // Once per run.
      expect(a.takeAppended?.(run.id, 'tool.finished')).toBeUndefined();

      const shared = await a.create(runInput('s-shared'));
      await a.append(shared.id, 'tool.finished', { tool: 'read', is_error: false });
      await b.append(shared.id, 'run.cancel_requested', { reason: 'elsewhere' });
      await a.append(shared.id, 'tool.finished', { tool: 'read', is_error: false });
      expect(a.takeAppended?.(shared.id, 'tool.finished')).toBeUndefined();
    } finally {
      await nodes.close();
    }
  });
});
