/**
 * Putting back a run left on a node that is gone (issue 19, docs/engine.md "The run queue"; the
 * ledger's side of src/engine/dbos-recovery.ts), on PostgreSQL with two nodes' connections:
 * - `requeue` runs its check-and-put-back under the lock the session's claims take, so of many
 *   nodes trying at once exactly one puts the run back (one `run.enqueued`); the check reads the
 *   run as stored now (a running run: the engine decides, adopting or leaving it);
 * - the recovery hands the stranded hook the rule of a run's owner for a node: a stale heartbeat on
 *   another machine is gone, a fresh one is not, this node never is, and a node with no heartbeat
 *   row only for work it was given more than `node_stale_ms` ago by the database's clock (the
 *   watcher's own clock may be off).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { postgresForFile } from '../helpers/postgres';
import { until } from '../helpers/until';
import { runInput as input, ledgerNodes } from './ledger-nodes';

const pg = postgresForFile();

describe.skipIf(!pg.available)('putting back a run left on a node that is gone', () => {
  it("STORE-PG-requeue: of many nodes putting one queued run back at once exactly one does; the check reads the run as stored; the rule for a gone node, by the database's clock", async () => {
    const nodes = await ledgerNodes(pg.cluster(), 300);
    const open = nodes.open;
    try {
      await nodes.sessions('s-queued', 's-running');
      const a = open('rnr_a', 'host-a', 3_600_000);
      const b = open('rnr_b', 'host-b', 3_600_000, nodes.other);
      const queued = await a.create(input('s-queued'));

      // The workflow, as DBOS holds it: left on the dead node until one node puts it back.
      let left = true;
      const putBack = (node: string) => async () => {
        if (!left) return false;
        await sleep(20); // a read of DBOS's row, then its update
        left = false;
        return { type: 'run.enqueued', payload: { queue: 'workspace', workspace: '/w', node } };
      };
      const tries = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? b : a).requeue!(queued.id, putBack(i % 2 ? 'rnr_b' : 'rnr_a')),
        ),
      );
      expect(tries.filter(Boolean)).toHaveLength(1);
      const enqueued = (await b.events(queued.id)).filter((e) => e.type === 'run.enqueued');
      expect(enqueued).toHaveLength(1);
      expect((await a.get(queued.id))!.status).toBe('queued');

      // The check reads the run as stored now; false: nothing done, nothing recorded.
      const running = await a.create(input('s-running'));
      expect((await a.claim(running.id)).ok).toBe(true);
      let seen: string | undefined;
      expect(
        await b.requeue!(running.id, async (run) => {
          seen = `${run.status} ${run.runner}`;
          return false;
        }),
      ).toBe(false);
      expect(seen).toBe('running rnr_a');
      expect(await b.requeue!('run_none', async () => null)).toBe(false);

      // The rule the recovery hands the hook on each heartbeat: B beat once and then never (stale
      // after 300 ms). The watcher's clock runs an hour ahead: a time the database stamped (DBOS's
      // `updated_at`) is judged by the database's clock, never the watcher's.
      const watcher = open('rnr_w', 'host-w', 50, nodes.sql, 3_600_000);
      let rule: ((node: string, since: number | undefined) => boolean) | undefined;
      watcher.onStranded!(async (gone) => {
        rule = gone;
      });
      await watcher.list();
      // B is stale once 300 ms have passed on the database's clock and a heartbeat of the watcher
      // has handed the hook its rule since: on a loaded box that can take longer than any pause.
      await until(() => rule?.('rnr_b', Date.now()) === true, "the watcher's rule to find B stale");
      const now = Date.now();
      expect(rule!('rnr_b', now)).toBe(true); // stale heartbeat, another machine
      expect(rule!('rnr_w', now - 10_000)).toBe(false); // this node
      expect(rule!('rnr_unknown', now)).toBe(false); // no row yet: may be starting
      expect(rule!('rnr_unknown', now - 10_000)).toBe(true); // no row, given long ago
      expect(rule!('rnr_unknown', undefined)).toBe(false);
    } finally {
      await nodes.close();
    }
  });
});
