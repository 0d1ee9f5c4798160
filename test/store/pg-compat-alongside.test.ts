/**
 * A compat request's ledger row written with its run event in one statement on PostgreSQL
 * (`RunLedger.appendAlongside`, src/runs/pg-run-ledger.ts, with the compat repository's
 * `insertWrite`/`finishWrite`): the rows the separate writes leave, the event announced as an
 * append's, nothing but the row when the run is gone, both or neither, a savepoint inside a
 * transaction, and seqs shared with another node appending to the same run. The start's insert
 * (`insertWrite`) gates its event: a request id already there is skipped with it, so inside a
 * transaction it needs no savepoint (p-pgcompat2, STORE-PG-260).
 */
import { describe, expect, it } from 'vitest';
import { createPostgresCompatRequestRepository } from '../../src/runs/pg-compat-request-repository';
import type { RunEvent } from '../../src/runs/types';
import type { SqlClient } from '../../src/store/postgres/client';
import { compatRequestRow } from '../helpers/compat-request-row';
import { driverStatements, postgresForFile, recordingClient } from '../helpers/postgres';
import { ledgerNodes, runInput } from './ledger-nodes';

const pg = postgresForFile();

const requestRow = (requestId: string, runId: string, sessionId: string) =>
  compatRequestRow({ request_id: requestId, run_id: runId, session_id: sessionId });

const outcome = {
  status: 'completed' as const,
  finish_reason: 'stop',
  http_status: 200,
  error: null,
  prompt_tokens: 12,
  completion_tokens: 3,
  finished_at: 2_000,
};

async function storedRow(sql: SqlClient, requestId: string) {
  const row = await sql.one<Record<string, unknown>>(
    'SELECT * FROM openai_compat_requests WHERE request_id = $1',
    [requestId],
  );
  const { request_id: _id, run_id: _run, row_seq: _seq, ...rest } = row ?? {};
  return row ? rest : undefined;
}

/** Two ledger nodes on a new database with the session `s-one`, closed after `fn`. */
async function withNodes(fn: (nodes: Awaited<ReturnType<typeof ledgerNodes>>) => Promise<void>) {
  const nodes = await ledgerNodes(pg.cluster(), 60_000);
  try {
    await nodes.sessions('s-one');
    await fn(nodes);
  } finally {
    await nodes.close();
  }
}

async function eventCount(sql: SqlClient, runId: string) {
  return (
    await sql.one<{ n: number }>('SELECT count(*)::bigint AS n FROM agent_run_events WHERE run_id = $1', [
      runId,
    ])
  )?.n;
}

describe.skipIf(!pg.available)('a compat row and its run event in one statement', () => {
  it('STORE-PG-110: insert and finish with their events are one statement each and leave the rows the separate writes leave', async () => {
    await withNodes(async (nodes) => {
      const sent: string[] = [];
      const sql = recordingClient(nodes.sql, sent);
      const ledger = nodes.open('rnr_a', 'host-a', 3_600_000, sql);
      const compat = createPostgresCompatRequestRepository({ sql });
      const seen: RunEvent[] = [];
      ledger.onAppend((event) => seen.push(event));
      const run = await ledger.create(runInput('s-one'));
      const separateRun = await ledger.create(runInput('s-one'));
      seen.length = 0;
      sent.length = 0;

      const started = await ledger.appendAlongside!(
        run.id,
        'openai_compat.request',
        { request_id: 'req_a', stream: true },
        compat.insertWrite!(requestRow('req_a', run.id, 's-one')),
      );
      const finished = await ledger.appendAlongside!(
        run.id,
        'openai_compat.response',
        { request_id: 'req_a', status: 'completed' },
        compat.finishWrite!('req_a', outcome),
      );
      // One statement each: no BEGIN, no COMMIT, no read of the run.
      expect(sent).toHaveLength(2);
      expect(sent.every((text) => text.startsWith('WITH alongside AS'))).toBe(true);

      // The same request written the old way.
      await compat.insert(requestRow('req_b', separateRun.id, 's-one'));
      await ledger.append(separateRun.id, 'openai_compat.request', { request_id: 'req_a', stream: true });
      await compat.finish('req_b', outcome);
      await ledger.append(separateRun.id, 'openai_compat.response', {
        request_id: 'req_a',
        status: 'completed',
      });
      expect(await storedRow(nodes.sql, 'req_a')).toEqual(await storedRow(nodes.sql, 'req_b'));
      expect((await compat.get('req_a'))?.status).toBe('completed');

      const events = await ledger.events(run.id);
      const comparable = (list: RunEvent[]) => list.map((e) => [e.seq, e.type, e.payload, e.session_id]);
      expect(comparable(events)).toEqual(comparable(await ledger.events(separateRun.id)));
      // Answered and announced as the stored events.
      expect([started, finished]).toEqual(events.slice(-2));
      expect(seen.slice(0, 2)).toEqual(events.slice(-2));
    });
  });

  it('STORE-PG-111: a run that is gone gets no event; the row is still finished', async () => {
    await withNodes(async (nodes) => {
      const ledger = nodes.open('rnr_a', 'host-a', 3_600_000);
      const compat = createPostgresCompatRequestRepository({ sql: nodes.sql });
      const run = await ledger.create(runInput('s-one'));
      await compat.insert(requestRow('req_gone', run.id, 's-one'));
      // (Deleting a run deletes its compat rows: the event goes to a run id that is not there.)
      const gone = await ledger.create(runInput('s-one'));
      await ledger.delete(gone.id);
      const seen: RunEvent[] = [];
      ledger.onAppend((event) => seen.push(event));
      const event = await ledger.appendAlongside!(
        gone.id,
        'openai_compat.response',
        { request_id: 'req_gone' },
        compat.finishWrite!('req_gone', outcome),
      );
      expect(event).toBeUndefined();
      expect(seen).toEqual([]);
      expect((await compat.get('req_gone'))?.status).toBe('completed');
      expect(await eventCount(nodes.sql, gone.id)).toBe(0);
    });
  });

  it('STORE-PG-112: both or neither; inside a transaction a failed write is a savepoint`s, the transaction goes on', async () => {
    await withNodes(async (nodes) => {
      const ledger = nodes.open('rnr_a', 'host-a', 3_600_000);
      const compat = createPostgresCompatRequestRepository({ sql: nodes.sql });
      const run = await ledger.create(runInput('s-one'));
      await compat.insert(requestRow('req_dup', run.id, 's-one'));
      const count = async () => (await eventCount(nodes.sql, run.id)) ?? -1;
      const before = await count();
      // A write that fails on its data (the start's `insertWrite` skips a duplicate instead,
      // STORE-PG-260): the row's plain INSERT.
      const failing = () => {
        const write = compat.insertWrite!(requestRow('req_dup', run.id, 's-one'));
        return { text: write.text.replace(/ ON CONFLICT .*$/s, ''), values: write.values };
      };
      // A duplicate request id: the insert fails, so the event is not written either.
      await expect(ledger.appendAlongside!(run.id, 'openai_compat.request', {}, failing())).rejects.toThrow();
      expect(await count()).toBe(before);

      await nodes.sql.transaction(async () => {
        await expect(
          ledger.appendAlongside!(run.id, 'openai_compat.request', {}, failing()),
        ).rejects.toThrow();
        // The transaction is still usable: this write and its event commit with it.
        await ledger.appendAlongside!(
          run.id,
          'openai_compat.response',
          { request_id: 'req_dup' },
          compat.finishWrite!('req_dup', outcome),
        );
      });
      expect(await count()).toBe(before + 1);
      expect((await compat.get('req_dup'))?.status).toBe('completed');

      // Rolled back with the transaction around it.
      await expect(
        nodes.sql.transaction(async () => {
          await ledger.appendAlongside!(
            run.id,
            'openai_compat.response',
            {},
            compat.finishWrite!('req_dup', { ...outcome, status: 'failed' }),
          );
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      expect(await count()).toBe(before + 1);
      expect((await compat.get('req_dup'))?.status).toBe('completed');
    });
  });

  it('STORE-PG-260: the start`s insert skips a request id already there and its event with it; inside a transaction without a savepoint', async () => {
    await withNodes(async (nodes) => {
      const ledger = nodes.open('rnr_a', 'host-a', 3_600_000);
      const compat = createPostgresCompatRequestRepository({ sql: nodes.sql });
      const run = await ledger.create(runInput('s-one'));
      const count = async () => (await eventCount(nodes.sql, run.id)) ?? -1;
      const first = compat.insertWrite!(requestRow('req_once', run.id, 's-one'));
      expect(first.gates).toBe(true);
      const written = await ledger.appendAlongside!(run.id, 'openai_compat.request', { n: 1 }, first);
      expect(written?.type).toBe('openai_compat.request');
      const before = await count();
      const kept = await storedRow(nodes.sql, 'req_once');

      const statements = driverStatements();
      try {
        await nodes.sql.transaction(async () => {
          // The same id again: neither the row nor the event, and no error.
          const again = await ledger.appendAlongside!(
            run.id,
            'openai_compat.request',
            { n: 2 },
            compat.insertWrite!({ ...requestRow('req_once', run.id, 's-one'), model: 'other/m' }),
          );
          expect(again).toBeUndefined();
          // A new id in the same transaction: both, and the transaction commits them.
          const other = await ledger.appendAlongside!(
            run.id,
            'openai_compat.request',
            { n: 3 },
            compat.insertWrite!(requestRow('req_other', run.id, 's-one')),
          );
          expect(other?.seq).toBe(written!.seq + 1);
        });
      } finally {
        statements.restore();
      }
      expect(statements.sent.filter((t) => /SAVEPOINT/.test(t))).toEqual([]);
      expect(statements.sent.filter((t) => /^BEGIN/.test(t))).toHaveLength(1);
      expect(await count()).toBe(before + 1);
      expect(await storedRow(nodes.sql, 'req_once')).toEqual(kept);
      expect(await storedRow(nodes.sql, 'req_other')).toBeDefined();
      const payloads = (await ledger.events(run.id))
        .filter((e) => e.type === 'openai_compat.request')
        .map((e) => e.payload);
      expect(payloads).toEqual([{ n: 1 }, { n: 3 }]);
    });
  });

  it('STORE-PG-113: two nodes appending to one run at once, alongside and plain, never take a seq twice', async () => {
    await withNodes(async (nodes) => {
      const a = nodes.open('rnr_a', 'host-a', 3_600_000);
      const b = nodes.open('rnr_b', 'host-b', 3_600_000, nodes.other);
      const compat = createPostgresCompatRequestRepository({ sql: nodes.sql });
      const run = await a.create(runInput('s-one'));
      const writes: Promise<unknown>[] = [];
      for (let i = 0; i < 20; i++) {
        writes.push(
          a.appendAlongside!(
            run.id,
            'openai_compat.request',
            { i },
            compat.insertWrite!(requestRow(`req_${i}`, run.id, 's-one')),
          ),
        );
        writes.push(b.append(run.id, 'phase', { i }));
      }
      await Promise.all(writes);
      const seqs = (await a.events(run.id)).map((e) => e.seq);
      expect(seqs).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
    });
  });
});
