/**
 * A run queued by a send whose transaction commits after the session's running run finished and
 * drained (p-flake, issue 18: STORE-PG-282 hung once in CI). On PostgreSQL the send is a
 * transaction (`StoreTransactions.runWith`): its queued run is committed only at its COMMIT, after
 * its own drain found the session busy here. A finish between that drain and the COMMIT reads the
 * queue without the run (the finish's statement, or the read after it: the insert not committed
 * yet) and goes idle: nothing would start the run. The send drains again after its COMMIT when
 * the session went idle here meanwhile.
 */
import pgDriver from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer } from './compat-helpers';

const pg = postgresForFile();

type Query = (this: unknown, config: unknown, ...rest: unknown[]) => unknown;

/**
 * The driver's `query` replaced: the connection that next inserts a run has its COMMIT held until
 * `releaseCommit`; a run's finish (its queue read) held until that COMMIT is asked. `held` says
 * which were held.
 */
function commitHeldPastFinish(prototype: { query: Query }, original: Query) {
  let sender: unknown;
  let commitAsked!: () => void;
  const asked = new Promise<void>((resolve) => {
    commitAsked = resolve;
  });
  let releaseCommit!: () => void;
  const released = new Promise<void>((resolve) => {
    releaseCommit = resolve;
  });
  const held: string[] = [];
  prototype.query = function query(this: unknown, config: unknown, ...rest: unknown[]) {
    const text = typeof config === 'string' ? config : String((config as { text?: string }).text);
    if (sender === undefined && /INSERT INTO agent_runs /.test(text)) sender = this;
    if (this === sender && text === 'COMMIT') {
      held.push('commit');
      commitAsked();
      void released.then(() => original.call(this, config, ...rest));
      return undefined;
    }
    if (/svc_session_has_queued/.test(text)) {
      held.push('finish');
      void asked.then(() => original.call(this, config, ...rest));
      return undefined;
    }
    return original.call(this, config, ...rest);
  };
  return { held, releaseCommit };
}

describe.skipIf(!pg.available)('a run queued by a send that commits after the finish drained', () => {
  it('STORE-PG-790: the send’s queued run starts when the running run finished and drained between the send’s drain and its COMMIT', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { app } = await compatServer([reply().text('one'), reply().text('two')], { postgres: sql });
    const prototype = pgDriver.Client.prototype as unknown as { query: Query };
    const original = prototype.query;
    try {
      const session = await app.agent.createSession({ title: 't' });
      const first = await app.agent.send({ sessionId: session.id, prompt: 'first', ifBusy: 'queue' });
      expect(first.status).toBe('running');
      // From here: the second send's connection (its queued run's INSERT), its COMMIT held until
      // the first run finished and drained; the first run's finish held until that COMMIT is asked.
      const { held, releaseCommit } = commitHeldPastFinish(prototype, original);
      const sending = app.agent.send({ sessionId: session.id, prompt: 'second', ifBusy: 'queue' });
      await app.agent.wait(first.run_id);
      // The first run's finish drained (its queue read without the uncommitted run) and went idle.
      await app.agent.waitIdle(session.id);
      expect([...held].sort()).toEqual(['commit', 'finish']);
      prototype.query = original;
      releaseCommit();
      const second = await sending;
      expect(second.status).toBe('queued');
      // Started by the send after its COMMIT; before, it stayed queued (nothing drained it).
      await vi.waitFor(
        async () => expect((await app.runs.require(second.run_id)).status).not.toBe('queued'),
        { timeout: 10_000 },
      );
      const result = await app.agent.wait(second.run_id);
      expect(result.status).toBe('completed');
      expect(result.text).toBe('two');
    } finally {
      prototype.query = original;
    }
  });

  it('STORE-PG-820: a send joining its caller’s transaction (`joinTransaction`) has its queued run started when the running run finished and drained before the caller’s COMMIT', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const { app } = await compatServer([reply().text('one'), reply().text('two')], { postgres: sql });
    const prototype = pgDriver.Client.prototype as unknown as { query: Query };
    const original = prototype.query;
    try {
      const session = await app.agent.createSession({ title: 't' });
      const first = await app.agent.send({ sessionId: session.id, prompt: 'first', ifBusy: 'queue' });
      expect(first.status).toBe('running');
      // The caller's connection (its send's queued run's INSERT): its COMMIT held until the first
      // run finished and drained; the first run's finish held until that COMMIT is asked.
      const { held, releaseCommit } = commitHeldPastFinish(prototype, original);
      // The caller's transaction, the send in it with no savepoint (as the compat route's start).
      let inBody: Awaited<ReturnType<typeof app.agent.send>> | undefined;
      const sending = app.store.transactions.run(async () => {
        inBody = await app.agent.send({
          sessionId: session.id,
          prompt: 'second',
          ifBusy: 'queue',
          joinTransaction: true,
        });
        return inBody;
      });
      await app.agent.wait(first.run_id);
      // The first run's finish drained (its queue read without the uncommitted run) and went idle.
      await app.agent.waitIdle(session.id);
      expect([...held].sort()).toEqual(['commit', 'finish']);
      expect(inBody?.status).toBe('queued');
      prototype.query = original;
      releaseCommit();
      const second = await sending;
      expect(second.status).toBe('queued');
      // Started by the send's hook after the caller's COMMIT; before, it stayed queued.
      await vi.waitFor(
        async () => expect((await app.runs.require(second.run_id)).status).not.toBe('queued'),
        { timeout: 10_000 },
      );
      const result = await app.agent.wait(second.run_id);
      expect(result.status).toBe('completed');
      expect(result.text).toBe('two');
    } finally {
      prototype.query = original;
    }
  });
});
