/**
 * A run's events appended as a list in one statement on PostgreSQL (`RunLedger.appendList`,
 * src/runs/pg-run-ledger.ts, migration 39), with another domain's insert riding along (the prompt
 * stack row, src/observe/pg-prompt-stack-store.ts `insertWrite`), p-pgprep. Pins: one statement;
 * the events stored, answered and announced as the same appends one after another (consecutive
 * seqs in the list's order, each at its time); the riding row written and its id answered; all or
 * nothing (a failing riding insert writes no event; a missing run writes neither); and a list
 * appended while another node appends to the run keeps the seqs unique and the list contiguous.
 */
import { describe, expect, it } from 'vitest';
import { createPostgresPromptStackStore } from '../../src/observe/pg-prompt-stack-store';
import type { PromptBuild } from '../../src/observe/prompt-stack-store';
import type { RunEvent } from '../../src/runs/types';
import { postgresForFile, recordingClient } from '../helpers/postgres';
import { ledgerNodes, runInput } from './ledger-nodes';

const pg = postgresForFile();

const build = (build_id: string, run_id: string): PromptBuild => ({
  build_id,
  session_id: 's-one',
  run_id,
  agent: 'build',
  section_count: 1,
  total_chars: 12,
  token_estimate: 3,
  sha256_prefix: '0123456789abcdef',
  sections: [
    { name: 'base', source: 'builtin', chars: 12, token_estimate: 3, sha256_prefix: 'fedcba9876543210' },
  ],
  created_at: 1_234,
});

const comparable = (list: RunEvent[]) => list.map((e) => [e.seq, e.type, e.payload, e.session_id]);

describe.skipIf(!pg.available)('a run’s events as a list in one statement', () => {
  it('STORE-PG-220: one statement stores the events as appends one by one would, with the riding row, and announces them', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      await nodes.sessions('s-one');
      const sent: string[] = [];
      const ledger = nodes.open('rnr_a', 'host-a', 3_600_000, recordingClient(nodes.sql, sent));
      const stack = createPostgresPromptStackStore({ sql: nodes.sql });
      const run = await ledger.create(runInput('s-one'));
      const separate = await ledger.create(runInput('s-one'));
      const seen: RunEvent[] = [];
      ledger.onAppend((event) => seen.push(event));
      sent.length = 0;

      const listed = await ledger.appendList!(
        run.id,
        [
          { type: 'model.resolved', payload: { model: 'fake/m1' }, created_at: 5_000 },
          { type: 'prompt.assembled', payload: { chars: 12 }, created_at: 5_001 },
        ],
        stack.insertWrite!(build('psb_a', run.id)),
      );
      expect(sent).toHaveLength(1);

      await ledger.append(separate.id, 'model.resolved', { model: 'fake/m1' });
      await ledger.append(separate.id, 'prompt.assembled', { chars: 12 });
      const events = await ledger.events(run.id);
      expect(comparable(events)).toEqual(comparable(await ledger.events(separate.id)));
      expect(events.slice(-2).map((e) => e.created_at)).toEqual([5_000, 5_001]);
      // Answered and announced as stored, in order.
      expect(listed.events).toEqual(events.slice(-2));
      expect(seen.slice(0, 2)).toEqual(events.slice(-2));
      // The riding row, with the id the statement answered.
      const rows = await nodes.sql.query<{ id: number; build_id: string; run_id: string }>(
        'SELECT id, build_id, run_id FROM prompt_stack_builds',
      );
      expect(rows.map((r) => [Number(r.id), r.build_id, r.run_id])).toEqual([
        [listed.ridingId, 'psb_a', run.id],
      ]);
      expect((await stack.recent({ limit: 5 }))[0]).toEqual(build('psb_a', run.id));

      // Without a riding insert: the events alone.
      const alone = await ledger.appendList!(run.id, [{ type: 'phase', payload: { phase: 'model' } }]);
      expect(alone.ridingId).toBeUndefined();
      expect(alone.events.map((e) => [e.seq, e.type])).toEqual([[events.length + 1, 'phase']]);
    } finally {
      await nodes.close();
    }
  });

  it('STORE-PG-221: all or nothing: a failing riding insert writes no event, a missing run writes neither', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      await nodes.sessions('s-one');
      const ledger = nodes.open('rnr_a', 'host-a', 3_600_000);
      const stack = createPostgresPromptStackStore({ sql: nodes.sql });
      const run = await ledger.create(runInput('s-one'));
      await stack.insert(build('psb_dup', run.id));
      const seen: RunEvent[] = [];
      ledger.onAppend((event) => seen.push(event));
      const before = (await ledger.events(run.id)).length;
      // A duplicate build id: the row fails, so no event is written or announced.
      await expect(
        ledger.appendList!(
          run.id,
          [{ type: 'model.resolved', payload: {} }],
          stack.insertWrite!(build('psb_dup', run.id)),
        ),
      ).rejects.toThrow();
      expect(await ledger.events(run.id)).toHaveLength(before);
      expect(seen).toEqual([]);

      await expect(
        ledger.appendList!(
          'run_missing',
          [{ type: 'model.resolved', payload: {} }],
          stack.insertWrite!(build('psb_b', 'run_missing')),
        ),
      ).rejects.toThrow(/no run "run_missing"/);
      expect(await stack.count()).toBe(1);
    } finally {
      await nodes.close();
    }
  });

  it('STORE-PG-222: a list appended while another node appends to the run takes contiguous seqs, none taken twice', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      await nodes.sessions('s-one');
      const a = nodes.open('rnr_a', 'host-a', 3_600_000);
      const b = nodes.open('rnr_b', 'host-b', 3_600_000, nodes.other);
      const run = await a.create(runInput('s-one'));
      const list = ['one', 'two', 'three', 'four'].map((type) => ({ type, payload: {} }));
      const [listed] = await Promise.all([
        Promise.all([a.appendList!(run.id, list), a.appendList!(run.id, list)]),
        Promise.all(Array.from({ length: 8 }, (_, i) => b.append(run.id, `other.${i}`, {}))),
      ]);
      const events = await a.events(run.id);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events).toHaveLength(1 + 8 + 8);
      for (const { events: written } of listed) {
        const seqs = written.map((e) => e.seq);
        expect(seqs).toEqual(seqs.map((_, i) => seqs[0] + i));
        expect(written.map((e) => e.type)).toEqual(['one', 'two', 'three', 'four']);
        const stored = events.filter((e) => seqs.includes(e.seq)).map((e) => e.type);
        expect(stored).toEqual(['one', 'two', 'three', 'four']);
      }
    } finally {
      await nodes.close();
    }
  });
});
