/**
 * A run's held events handed to its finish's own list only while the finish builds its statement
 * (issue 18 item 6, p-pglone): the run ledger's following write (`followingEvents`, the step end's
 * `svc_run_events`) appends its events itself, but inside `handingOver(build)` its `WITH` only holds
 * their arrays and its answer is the finish's column. The same write sent again after a failed
 * finish (the step end alone, STORE-PG-551) must append them again: the hand-over ends with the
 * build, also when the build throws. No database: the SQL the write gives.
 */
import { describe, expect, it } from 'vitest';
import { followingEvents } from '../../src/runs/pg-run-announced';
import type { RidingInsert } from '../../src/store/preceding-write';

const events = { known() {}, announce() {} };
const list = [
  { type: 'model.resolved', payload: { model: 'm' }, created_at: 1 },
  { type: 'phase', payload: { phase: 'model' }, created_at: 2 },
];

describe('a run’s held events handed to its finish', () => {
  it('STORE-PG-651: handed over only inside the build (arrays held, the finish’s answer), its own append before and after it, also after a build that throws; with its riding row too', () => {
    const row: RidingInsert = {
      text: 'INSERT INTO prompt_stack_builds (id) VALUES ($1) RETURNING id',
      values: ['b1'],
      at: (offset) => `INSERT INTO prompt_stack_builds (id) VALUES ($${offset + 1}) RETURNING id`,
    };
    for (const riding of [undefined, row]) {
      const { write } = followingEvents(events)('run_a', list, riding);
      const own = write.sql(27, 'true');
      expect(own.cte).toContain('svc_append_run_event_list(');
      expect(write.handingOver).toBeTypeOf('function');
      const handed = write.handingOver?.(() => write.sql(27, 'true'));
      expect(handed?.cte).not.toContain('svc_append_run_event_list(');
      expect(handed?.cte).toContain('$29::text[] AS types');
      expect(handed?.cte).toContain('$30::text[] AS payloads');
      expect(handed?.cte).toContain('$31::bigint[] AS created_ats');
      expect(handed?.answer).toContain('v.svc_handed');
      // The same parameters either way: the write's values do not change with the hand-over.
      expect(write.values).toHaveLength(riding ? 5 : 4);
      if (riding) expect(handed?.cte).toContain('INSERT INTO prompt_stack_builds (id) VALUES ($32)');
      // After the build, and after one that throws: its own append again.
      expect(write.sql(27, 'true')).toEqual(own);
      expect(() =>
        write.handingOver?.(() => {
          throw new Error('build failed');
        }),
      ).toThrow('build failed');
      expect(write.sql(27, 'true')).toEqual(own);
    }
  });
});
