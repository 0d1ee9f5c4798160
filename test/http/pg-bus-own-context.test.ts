/**
 * Background bus listeners on PostgreSQL run their store work in their own async context
 * (src/events/own-context.ts), not in the publisher's transaction (issue 18 items 2–3). Each test
 * publishes in a transaction and releases the event inside it (`lastId`: a read of the session's
 * events releases what the transaction holds, as `replay` and `publishStored` do; `flush` and the
 * adaptive monitor's `settled()` no longer do, p-heldfix), so the listener gets it with the
 * transaction open; the transaction then rolls back. Pins, per listener: none of its statements is on the transaction's connection between its
 * BEGIN and its ROLLBACK (the transaction is the test's own statement alone), and its writes stay.
 */
import { describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app';
import type { SqlClient } from '../../src/store/postgres/client';
import { makeTestApp } from '../helpers/make-test-app';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

/** Each BEGIN's statements on its connection, up to its COMMIT or ROLLBACK (cut to 80 characters). */
function transactionsOf(statements: { calls: { text: string }[]; clients: unknown[] }, from: number) {
  const texts = statements.calls.slice(from).map((call) => call.text);
  const clients = statements.clients.slice(from);
  const transactions: string[][] = [];
  texts.forEach((text, i) => {
    if (text !== 'BEGIN') return;
    const own = texts.filter((_, j) => j > i && clients[j] === clients[i]);
    const end = own.findIndex((t) => t === 'COMMIT' || t === 'ROLLBACK');
    transactions.push(
      own.slice(0, end < 0 ? undefined : end).map((t) => t.replace(/\s+/g, ' ').slice(0, 80)),
    );
  });
  return transactions;
}

type Statements = ReturnType<typeof driverStatements>;

/** `fn` in a transaction that first sends `SELECT 1` (its BEGIN with it) and then rolls back. */
async function rolledBack(app: App, sql: SqlClient, fn: () => Promise<void>): Promise<void> {
  const rollback = new Error('rolled back by the test');
  // The client reports the body's failure as a store error carrying its message.
  await expect(
    app.store.transactions.run(async () => {
      await sql.query('SELECT 1');
      await fn();
      throw rollback;
    }),
  ).rejects.toThrow(/rolled back by the test/);
}

/** Waits (bounded) until a statement matching `pattern` was sent from `from` on. */
async function sent(statements: Statements, from: number, pattern: RegExp): Promise<void> {
  await vi.waitFor(() => expect(statements.sent.slice(from).some((text) => pattern.test(text))).toBe(true), {
    timeout: 10_000,
    interval: 10,
  });
}

async function pgApp(config: Record<string, unknown> = {}) {
  const sql = await migratedDatabase(pg.cluster());
  const app = await makeTestApp({ postgres: sql, config });
  const session = await app.agent.createSession({ title: 'own context' });
  return { sql, app, session };
}

describe.skipIf(!pg.available)(
  'background bus listeners outside the publisher’s transaction (PostgreSQL)',
  () => {
    it('STORE-PG-410: with operating packs on, the hook dispatcher’s pack lookup for an event delivered with its publisher’s transaction open runs outside that transaction', async () => {
      const { sql, app, session } = await pgApp({ options: { operating_packs: true } });
      const statements = driverStatements();
      try {
        const from = statements.calls.length;
        await rolledBack(app, sql, async () => {
          app.bus.publish(session.id, 'run.started', { session_id: session.id, run_id: 'run_x' });
          await app.bus.lastId(session.id);
          await app.packs?.hooksIdle();
        });
        expect(statements.sent.slice(from).some((t) => /FROM session_operating_packs WHERE/.test(t))).toBe(
          true,
        );
        expect(transactionsOf(statements, from)).toEqual([['SELECT 1']]);
      } finally {
        statements.restore();
        await app.close();
        await sql.close();
      }
    });

    it('STORE-PG-411: the finding observer’s update on file.changed runs outside the publisher’s transaction, and a rollback of that transaction keeps it (the deleted file’s finding stays stale)', async () => {
      const { sql, app, session } = await pgApp();
      const statements = driverStatements();
      try {
        const finding = await app.quality.findings.observe(
          {
            kind: 'diagnostic',
            fingerprint: 'diagnostic:a.ts:1',
            title: 'a.ts:1 broken',
            path: 'a.ts',
            line: 1,
          },
          { sessionId: session.id, source: 'diagnostics' },
        );
        const from = statements.calls.length;
        await rolledBack(app, sql, async () => {
          app.bus.publish(session.id, 'file.changed', {
            session_id: session.id,
            tool: 'write',
            path: 'a.ts',
            change: 'delete',
          });
          await app.bus.lastId(session.id);
          await app.quality.findings.flush();
        });
        const row = await sql.one<{ state: string }>('SELECT state FROM findings WHERE id = $1', [
          finding.id,
        ]);
        expect(row?.state).toBe('stale');
        expect(transactionsOf(statements, from)).toEqual([['SELECT 1']]);
      } finally {
        statements.restore();
        await app.close();
        await sql.close();
      }
    });

    it('STORE-PG-412: the workspace’s delete of a deleted session’s read records runs outside the publisher’s transaction, and a rollback of that transaction keeps it', async () => {
      const { sql, app, session } = await pgApp();
      const statements = driverStatements();
      try {
        await app.ws.reads.record(session.id, 'a.ts', { sha256: 'x', size: 1, mtimeMs: 1 });
        const from = statements.calls.length;
        await rolledBack(app, sql, async () => {
          app.bus.publish(session.id, 'session.deleted', { session_id: session.id });
          await app.bus.lastId(session.id);
          await sent(statements, from, /^DELETE FROM file_reads/);
        });
        await vi.waitFor(async () => expect(await app.ws.reads.get(session.id, 'a.ts')).toBeUndefined(), {
          timeout: 10_000,
          interval: 10,
        });
        expect(transactionsOf(statements, from)).toEqual([['SELECT 1']]);
      } finally {
        statements.restore();
        await app.close();
        await sql.close();
      }
    });

    it('STORE-PG-413: the health follow-ons’ activation for a context.usage over the threshold is written outside the publisher’s transaction, and a rollback of that transaction keeps it', async () => {
      const { sql, app, session } = await pgApp({ options: { health_followons: { enabled: true } } });
      const statements = driverStatements();
      try {
        const from = statements.calls.length;
        await rolledBack(app, sql, async () => {
          app.bus.publish(session.id, 'context.usage', {
            session_id: session.id,
            run_id: 'run_x',
            ratio: 0.99,
            context_window: 1000,
            input_tokens: 990,
          });
          await app.bus.lastId(session.id);
          await app.health.idle();
        });
        const activations = await app.health.activations({ sessionId: session.id });
        expect(activations.map((a) => a.rule_id)).toEqual(['token_pressure.compact']);
        expect(transactionsOf(statements, from)).toEqual([['SELECT 1']]);
      } finally {
        statements.restore();
        await app.close();
        await sql.close();
      }
    });

    it('STORE-PG-414: with edit capsules on, the capsule’s finalization on run.finished reads outside the publisher’s transaction', async () => {
      const { sql, app, session } = await pgApp({ options: { edit_capsules: true } });
      const statements = driverStatements();
      try {
        const from = statements.calls.length;
        await rolledBack(app, sql, async () => {
          app.bus.publish(session.id, 'run.finished', {
            session_id: session.id,
            run_id: 'run_x',
            status: 'completed',
          });
          await app.bus.lastId(session.id);
          await sent(statements, from, /FROM edit_capsules WHERE run_id = \$1/);
          await app.quality.findings.flush();
        });
        expect(transactionsOf(statements, from)).toEqual([['SELECT 1']]);
      } finally {
        statements.restore();
        await app.close();
        await sql.close();
      }
    });

    it('STORE-PG-416: the finding observer’s update on a run ledger event appended in a transaction (diagnostics.reported) runs outside it, and a rollback of that transaction keeps the finding', async () => {
      const { sql, app, session } = await pgApp();
      const statements = driverStatements();
      try {
        const run = await app.runs.create({
          session_id: session.id,
          family_session_id: session.id,
          agent: 'build',
          origin: 'cli',
          prompt: 'check',
          status: 'running',
        });
        const from = statements.calls.length;
        await rolledBack(app, sql, async () => {
          await app.runs.append(run.id, 'diagnostics.reported', {
            path: 'src/a.ts',
            server: 'typescript',
            complete: true,
            errors: [{ line: 1, column: 7, message: 'broken', source: 'ts', code: '2322' }],
          });
          await app.quality.findings.flush();
        });
        expect((await app.quality.findings.list()).map((f) => [f.path, f.state])).toEqual([
          ['src/a.ts', 'open'],
        ]);
        const [transaction] = transactionsOf(statements, from);
        expect(transaction[0]).toBe('SELECT 1');
        expect(transaction.filter((text) => /finding/.test(text))).toEqual([]);
      } finally {
        statements.restore();
        await app.close();
        await sql.close();
      }
    });
  },
);
