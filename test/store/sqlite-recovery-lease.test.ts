/**
 * A run left `running` by a dead svc process, on SQLite: the recovery that marks it `interrupted`
 * (at the next process's start, or a claim that finds it in the way) deletes the workspace leases
 * it held in the same transaction, as PostgreSQL's does (STORE-PG-nodes, 753d41ad), so a lease
 * of a dead run never stands until its expiry. Today only PostgreSQL's runs take the lease
 * (src/app/work.ts); this keeps the SQLite ledger's recovery the same should a SQLite run hold one.
 */
import { describe, expect, it } from 'vitest';
import { createLeaseRepository } from '../../src/workspace/lease-repository';
import { runLeases } from '../helpers/run-lease';
import { closedAfterEach, openTestLedger, RUN_INPUT } from '../helpers/sqlite-ledger';

const { opened } = closedAfterEach();
const hour = 3_600_000;

describe('recovery of a dead process run on SQLite', () => {
  it('SQLITE-LEASE-1 the interrupted run releases its workspace lease; a live run keeps its own', async () => {
    const { db, ledger } = openTestLedger(opened);
    db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)').run('ses_2');
    const leases = createLeaseRepository(() => db);
    const hold = runLeases(leases);
    const dead = await ledger.create({ ...RUN_INPUT });
    expect((await ledger.claim(dead.id)).ok).toBe(true);
    const live = await ledger.create({ ...RUN_INPUT, session_id: 'ses_2', family_session_id: 'ses_2' });
    expect((await ledger.claim(live.id)).ok).toBe(true);
    // Both hold a lease, as a run that used `write` does (src/agent/run-leases.ts); the first's
    // process is gone (kill -9: nothing released it).
    expect((await hold('/ws/dead', dead.id)).acquired).toBe(true);
    expect((await hold('/ws/live', live.id)).acquired).toBe(true);
    db.prepare("UPDATE agent_runs SET runner = 'rnr_gone', pid = NULL WHERE id = ?").run(dead.id);

    expect((await ledger.recover()).map((run) => run.id)).toEqual([dead.id]);
    expect(await ledger.get(dead.id)).toMatchObject({ status: 'interrupted' });
    expect(await leases.get('/ws/dead')).toBeUndefined();
    expect(await leases.get('/ws/live')).toMatchObject({ holder: `run:${live.id}` });
    // The next writer takes the workspace now, not an hour later.
    const next = await hold('/ws/dead', 'run_next');
    expect(next).toMatchObject({ acquired: true, lease: { holder: 'run:run_next' } });
  });

  it('SQLITE-LEASE-2 a claim that interrupts a dead process run in its way releases that run’s lease too', async () => {
    const { db, ledger } = openTestLedger(opened);
    const leases = createLeaseRepository(() => db);
    const first = await ledger.create({ ...RUN_INPUT });
    const second = await ledger.create({ ...RUN_INPUT });
    await ledger.claim(first.id);
    const now = Date.now();
    await leases.tryAcquire({
      workspace: '/ws',
      holder: `run:${first.id}`,
      runId: first.id,
      node: 'n',
      now,
      ttlMs: hour,
    });
    db.prepare("UPDATE agent_runs SET runner = 'rnr_gone', pid = NULL WHERE id = ?").run(first.id);
    expect(await ledger.claim(second.id)).toMatchObject({ ok: true, run: { id: second.id } });
    expect(await ledger.get(first.id)).toMatchObject({ status: 'interrupted' });
    expect(await leases.get('/ws')).toBeUndefined();
  });
});
