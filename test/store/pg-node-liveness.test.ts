/**
 * Nodes' heartbeats on PostgreSQL (issue 18; the ground issue 19's adoption stands on): a run of
 * another machine whose node stopped sending heartbeats is interrupted by the live nodes, exactly
 * once, with the reason, and its workspace leases released with it; a run whose node still beats
 * is left alone; a clean close removes the node's row, the live nodes that of a node silent for
 * ten times the stale bound.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createPostgresLeaseRepository } from '../../src/workspace/pg-lease-repository';
import { postgresForFile } from '../helpers/postgres';
import { runLeases } from '../helpers/run-lease';
import { runInput as input, ledgerNodes } from './ledger-nodes';

const pg = postgresForFile();

async function until<T>(probe: () => Promise<T | undefined>, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

describe.skipIf(!pg.available)('node heartbeats on PostgreSQL', () => {
  it("STORE-PG-nodes: a stale node's running run is interrupted by the live nodes exactly once; a beating node's run is left alone, whatever the machines' clocks say", async () => {
    // Stale after 1.5 s, beats every 50 ms: the nodes share this process, so a pause of the process
    // (a loaded CI box) delays the beating node's beats and the watchers' reads alike; 300 ms was
    // once too little for that.
    const nodes = await ledgerNodes(pg.cluster(), 1_500);
    const open = nodes.open;
    const hour = 3_600_000;
    try {
      await nodes.sessions('s-dead', 's-live');
      // The node that will die beats once (at first use) and never again; the other beats, on a
      // machine whose clock is an hour behind (its heartbeats are the database's time, not its own).
      const dying = open('rnr_dying', 'host-dying', 3_600_000);
      const beating = open('rnr_beating', 'host-beating', 50, nodes.other, -hour);
      const deadRun = await dying.create(input('s-dead'));
      expect((await dying.claim(deadRun.id)).ok).toBe(true);
      const liveRun = await beating.create(input('s-live'));
      expect((await beating.claim(liveRun.id)).ok).toBe(true);
      // Each run holds a workspace lease, as a writing run does (src/agent/run-leases.ts).
      const leases = createPostgresLeaseRepository({ sql: nodes.sql });
      const hold = runLeases(leases);
      expect((await hold('/ws/dead', deadRun.id)).acquired).toBe(true);
      expect((await hold('/ws/live', liveRun.id)).acquired).toBe(true);
      // Two live watchers on other machines, one with its clock an hour ahead: each looks on every
      // heartbeat.
      const watchers = [
        open('rnr_w1', 'host-w1', 50, nodes.sql, hour),
        open('rnr_w2', 'host-w2', 50, nodes.other),
      ];
      await Promise.all(watchers.map((w) => w.list()));

      const interrupted = await until(async () => {
        const run = await watchers[0]!.get(deadRun.id);
        return run?.status === 'interrupted' ? run : undefined;
      }, 'the dead node’s run to be interrupted');
      expect(interrupted.reason).toMatch(
        /its node \(host-dying, pid 4242\) stopped sending heartbeats \d+ s ago/,
      );
      // Every watcher had its chances; the run was marked once.
      await sleep(300);
      const events = (await watchers[1]!.events(deadRun.id)).filter((e) => e.type === 'run.interrupted');
      expect(events).toHaveLength(1);
      expect(events[0]!.payload).toMatchObject({ host: 'host-dying', pid: 4242 });
      expect(['rnr_w1', 'rnr_w2', 'rnr_beating']).toContain(events[0]!.payload.by_node);
      // The dead run's lease went with its interruption (not an hour later); the live one's stays.
      expect(await leases.get('/ws/dead')).toBeUndefined();
      expect(await leases.get('/ws/live')).toMatchObject({ holder: `run:${liveRun.id}` });
      // The beating node's run is still running, and every node sees it alive.
      expect((await watchers[1]!.get(liveRun.id))!.status).toBe('running');
      expect(watchers[0]!.ownerAlive((await watchers[0]!.get(liveRun.id))!)).toBe(true);

      // A clean close takes the node's row away.
      await beating.close?.();
      const ids = (await nodes.sql.query<{ id: string }>('SELECT id FROM cluster_nodes ORDER BY id')).map(
        (r) => r.id,
      );
      expect(ids).not.toContain('rnr_beating');
      expect(ids).toEqual(expect.arrayContaining(['rnr_dying', 'rnr_w1', 'rnr_w2']));
    } finally {
      await nodes.close();
    }
  });

  it('the live nodes remove the row of a node silent for ten times node_stale_ms; a node dead for less keeps its row', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      const silent = async (id: string, ms: number) =>
        nodes.sql.run(
          `INSERT INTO cluster_nodes (id, host, pid, url, started_at, heartbeat_at)
           VALUES ($1, 'host-gone', 1, NULL, 1, (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $2)`,
          [id, ms],
        );
      await silent('rnr_killed_long_ago', 601_000);
      await silent('rnr_killed_lately', 120_000);
      const watcher = nodes.open('rnr_watcher', 'host-w', 50);
      await watcher.list();
      const ids = async () =>
        (await nodes.sql.query<{ id: string }>('SELECT id FROM cluster_nodes ORDER BY id')).map((r) => r.id);
      await until(
        async () => ((await ids()).includes('rnr_killed_long_ago') ? undefined : true),
        'the long-dead node’s row to go',
      );
      expect(await ids()).toEqual(['rnr_killed_lately', 'rnr_watcher']);
    } finally {
      await nodes.close();
    }
  });

  it('STORE-PG-nodes-close: a clean close while a heartbeat is in flight leaves no row (the beat lands before the delete)', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      // Every beat of this node takes 400 ms in the database, so one is nearly always in flight.
      await nodes.sql.run(`
        CREATE FUNCTION slow_beat() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.id = 'rnr_slow' THEN PERFORM pg_sleep(0.4); END IF;
          RETURN NEW;
        END $$`);
      await nodes.sql.run(
        'CREATE TRIGGER slow_beat BEFORE INSERT OR UPDATE ON cluster_nodes FOR EACH ROW EXECUTE FUNCTION slow_beat()',
      );
      const slow = nodes.open('rnr_slow', 'host-slow', 20);
      await slow.list();
      // The janitor's next beat is in its trigger now.
      await sleep(150);
      await slow.close?.();
      // A beat that landed after the delete would show here once its trigger returned.
      await sleep(600);
      expect(await nodes.sql.one('SELECT id FROM cluster_nodes WHERE id = $1', ['rnr_slow'])).toBeUndefined();
    } finally {
      await nodes.close();
    }
  });

  it('STORE-PG-nodes-close-2: a node whose first recovery failed after its first beat still takes its row away on a clean close', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      // The runs' table is away for a moment: the beat lands, the recovery's read of runs fails.
      await nodes.sql.run('ALTER TABLE agent_runs RENAME TO agent_runs_away');
      const node = nodes.open('rnr_failed_first', 'host-f', 3_600_000);
      await expect(node.list()).rejects.toThrow();
      await nodes.sql.run('ALTER TABLE agent_runs_away RENAME TO agent_runs');
      expect(
        await nodes.sql.one('SELECT id FROM cluster_nodes WHERE id = $1', ['rnr_failed_first']),
      ).toBeDefined();
      await node.close?.();
      expect(
        await nodes.sql.one('SELECT id FROM cluster_nodes WHERE id = $1', ['rnr_failed_first']),
      ).toBeUndefined();
    } finally {
      await nodes.close();
    }
  });
});
