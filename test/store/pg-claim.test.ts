/**
 * A claim on PostgreSQL (src/runs/pg-run-ledger.ts, issue 18 item 6): a run this ledger created is
 * claimed without reading its row (the conditional UPDATE tells a run that is not queued), and
 * the answers are those of reading it first: not_found, "is <status>, not queued" (also when
 * another run holds the session), blocked by a live run, one winner of two nodes at once.
 */
import { describe, expect, it } from 'vitest';
import { runStartedPayload } from '../../src/runs/run-started';
import type { SqlClient } from '../../src/store/postgres/client';
import { createPostgresLeaseRepository } from '../../src/workspace/pg-lease-repository';
import { postgresForFile, recordingClient } from '../helpers/postgres';
import { svcFailure } from '../helpers/svc-failure';
import { runInput as input, ledgerNodes } from './ledger-nodes';

const pg = postgresForFile();

/** The client, counting its reads of a run row by id. */
function counting(sql: SqlClient): { sql: SqlClient; reads: () => number } {
  let reads = 0;
  const seen = (text: string) => {
    if (text.startsWith('SELECT * FROM agent_runs WHERE id = $1')) reads++;
  };
  return {
    sql: {
      ...sql,
      one: (text, params) => {
        seen(text);
        return sql.one(text, params);
      },
      query: (text, params) => {
        seen(text);
        return sql.query(text, params);
      },
    },
    reads: () => reads,
  };
}

describe.skipIf(!pg.available)('claim on PostgreSQL', () => {
  it('STORE-PG-73: a run created here is claimed without a read of its row; not_found, not queued, blocked and one winner answer as before', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      await nodes.sessions('s-one', 's-two');
      const counted = counting(nodes.sql);
      const a = nodes.open('rnr_a', 'host-a', 3_600_000, counted.sql);
      const b = nodes.open('rnr_b', 'host-b', 3_600_000, nodes.other);
      const first = await a.create(input('s-one'));
      const before = counted.reads();
      const claimed = await a.claim(first.id);
      expect(claimed.ok && claimed.run.status).toBe('running');
      expect(counted.reads() - before).toBe(0);

      // Claimed already: the same conflict as when the run was read first.
      const again = await svcFailure(a.claim(first.id));
      expect([again.code, again.message]).toEqual(['conflict', `run ${first.id} is running, not queued`]);
      const missing = await svcFailure(a.claim('run_none'));
      expect([missing.code, missing.message]).toEqual(['not_found', 'run_id: no run "run_none"']);

      // Another live run holds the session: blocked; a run that is not queued is still that conflict.
      const second = await a.create(input('s-one'));
      const blocked = await a.claim(second.id);
      expect(blocked.ok ? 'claimed' : blocked.blocking.id).toBe(first.id);
      expect((await a.get(second.id))?.status).toBe('queued');
      await a.update(second.id, { status: 'cancelled' });
      const cancelled = await svcFailure(a.claim(second.id));
      expect(cancelled.message).toBe(`run ${second.id} is cancelled, not queued`);

      // Two nodes claiming one queued run at once: exactly one wins, the other is told it is running.
      const contested = await a.create(input('s-two'));
      const both = await Promise.allSettled([a.claim(contested.id), b.claim(contested.id)]);
      const won = both.filter((r) => r.status === 'fulfilled' && r.value.ok);
      const lost = both.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
      expect(won).toHaveLength(1);
      expect(lost.map((r) => (r.reason as Error).message)).toEqual([
        `run ${contested.id} is running, not queued`,
      ]);
    } finally {
      await nodes.close();
    }
  });
});

describe.skipIf(!pg.available)('a claim with nothing in its way, in one statement', () => {
  it('STORE-PG-80: a free run of a known session is claimed in one statement with no transaction; one winner of many; blocked and not queued as before', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      await nodes.sessions('s-free', 's-many');
      const sent: string[] = [];
      let transactions = 0;
      const watched: SqlClient = {
        ...recordingClient(nodes.sql, sent),
        transaction: (fn) => {
          transactions++;
          return nodes.sql.transaction(fn);
        },
      };
      const a = nodes.open('rnr_a', 'host-a', 3_600_000, watched);
      const free = await a.create(input('s-free'));
      sent.length = 0;
      transactions = 0;
      const claimed = await a.claim(free.id);
      expect(claimed.ok && [claimed.run.status, claimed.run.runner, claimed.run.host]).toEqual([
        'running',
        'rnr_a',
        'host-a',
      ]);
      expect([sent, transactions]).toEqual([['SELECT * FROM svc_claim_run($1, $2, $3, $4, $5, $6)'], 0]);
      expect(claimed.ok && claimed.run).toEqual(await a.get(free.id));

      // Another live run holds the session: nothing written by the one statement, then the
      // transaction's path answers blocked, and a run not queued its conflict.
      const second = await a.create(input('s-free'));
      const blocked = await a.claim(second.id);
      expect(blocked.ok ? 'claimed' : blocked.blocking.id).toBe(free.id);
      expect((await a.get(second.id))?.status).toBe('queued');

      // Many claims of one queued run at once, from two nodes that both know its session.
      const b = nodes.open('rnr_b', 'host-b', 3_600_000, nodes.other);
      const contested = await a.create(input('s-many'));
      await b.append(contested.id, 'note', {});
      const tries = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? b : a).claim(contested.id)),
      );
      expect(tries.filter((r) => r.status === 'fulfilled' && r.value.ok)).toHaveLength(1);
      const lost = tries.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
      expect(new Set(lost.map((r) => (r.reason as Error).message))).toEqual(
        new Set([`run ${contested.id} is running, not queued`]),
      );
      expect(lost).toHaveLength(7);
    } finally {
      await nodes.close();
    }
  });
});

describe.skipIf(!pg.available)('a claim with its run.started event, in one statement', () => {
  it('STORE-PG-95: claim(id, { started }) writes the claim and run.started (next seq, the claim time, the payload text run-control writes) in one statement; blocked writes neither; one event of many tries', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      await nodes.sessions('s-started', 's-race');
      const sent: string[] = [];
      const watched = recordingClient(nodes.sql, sent);
      const a = nodes.open('rnr_a', 'host-a', 3_600_000, watched);
      const announced: string[] = [];
      a.onAppend((e) => announced.push(`${e.run_id}:${e.seq}:${e.type}`));
      const run = await a.create({
        ...input('s-started'),
        options: { max_steps: 3, tools: ['read', 'é "q"\\'] },
      });
      await a.append(run.id, 'note', {});
      sent.length = 0;
      announced.length = 0;
      const claimed = await a.claim(run.id, { started: true });
      expect(sent).toHaveLength(1);
      expect(sent[0]).toContain('svc_claim_run_started(');
      if (!claimed.ok || !claimed.started) throw new Error('not claimed with run.started');
      expect(claimed.run).toEqual(await a.get(run.id));
      const payload = runStartedPayload(claimed.run);
      const stored = await a.events(run.id, { types: ['run.started'] });
      expect(stored).toEqual([claimed.started]);
      expect(claimed.started).toMatchObject({
        seq: 3,
        type: 'run.started',
        payload,
        created_at: claimed.run.started_at,
      });
      const text = await nodes.sql.one<{ payload: string }>(
        "SELECT payload FROM agent_run_events WHERE run_id = $1 AND type = 'run.started'",
        [run.id],
      );
      expect(text?.payload).toBe(JSON.stringify(payload));
      expect(announced).toEqual([`${run.id}:3:run.started`]);

      // Another run holds the session: nothing written, the transaction's path answers blocked.
      const second = await a.create(input('s-started'));
      const blocked = await a.claim(second.id, { started: true });
      expect(blocked.ok ? 'claimed' : blocked.blocking.id).toBe(run.id);
      expect(await a.events(second.id, { types: ['run.started'] })).toEqual([]);
      expect((await a.get(second.id))?.status).toBe('queued');

      // Many tries from two nodes: one claim, one run.started.
      const b = nodes.open('rnr_b', 'host-b', 3_600_000, nodes.other);
      const contested = await a.create(input('s-race'));
      await b.append(contested.id, 'note', {});
      const tries = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? b : a).claim(contested.id, { started: true })),
      );
      expect(tries.filter((r) => r.status === 'fulfilled' && r.value.ok)).toHaveLength(1);
      expect(await a.events(contested.id, { types: ['run.started'] })).toHaveLength(1);
    } finally {
      await nodes.close();
    }
  });
});

describe.skipIf(!pg.available)('a claim that interrupts a dead run in its way', () => {
  it('SQLITE-LEASE-3 (PostgreSQL) the dead run interrupted by a claim releases its workspace lease, as recovery does', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      await nodes.sessions('s-one');
      const a = nodes.open('rnr_a', 'host-a', 3_600_000);
      const leases = createPostgresLeaseRepository({ sql: nodes.sql });
      const first = await a.create(input('s-one'));
      expect((await a.claim(first.id)).ok).toBe(true);
      const now = Date.now();
      const claim = { workspace: '/ws', holder: `run:${first.id}`, runId: first.id, node: 'n', now };
      expect((await leases.tryAcquire({ ...claim, ttlMs: 3_600_000 })).acquired).toBe(true);
      // Its process is gone (a run of this machine whose pid is unknown).
      await nodes.sql.run("UPDATE agent_runs SET runner = 'rnr_gone', pid = NULL WHERE id = $1", [first.id]);
      const second = await a.create(input('s-one'));
      expect(await a.claim(second.id)).toMatchObject({ ok: true, run: { id: second.id } });
      expect((await a.get(first.id))?.status).toBe('interrupted');
      expect(await leases.get('/ws')).toBeUndefined();
    } finally {
      await nodes.close();
    }
  });
});
