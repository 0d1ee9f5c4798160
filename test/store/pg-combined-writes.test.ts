/**
 * A run's row written with its ledger event in one statement on PostgreSQL (issue 18 item 6,
 * src/runs/pg-run-write-repository.ts): `create` (the run and its `run.queued`/`run.created`) and
 * `updateAndAppend` (the run's update and then one event, the step's end). Each leaves the rows
 * the two separate statements left, takes the seqs the separate appends took with two nodes
 * writing to one run at once, and a failure inside it leaves nothing written.
 */
import { describe, expect, it } from 'vitest';
import { createPostgresRunWrites } from '../../src/runs/pg-run-write-repository';
import type { RunEvent } from '../../src/runs/types';
import type { SqlClient } from '../../src/store/postgres/client';
import { postgresForFile } from '../helpers/postgres';
import { runInput as input, ledgerNodes } from './ledger-nodes';

const pg = postgresForFile();

/** The run's events as stored, without what differs between two runs (ids, times). */
async function storedEvents(sql: SqlClient, runId: string) {
  return await sql.query(
    'SELECT seq, type, payload, session_id FROM agent_run_events WHERE run_id = $1 ORDER BY seq',
    [runId],
  );
}

/** A run row without what differs between two runs. */
function comparable(run: object) {
  const { id: _id, created_at: _c, updated_at: _u, row_seq: _r, ...rest } = run as Record<string, unknown>;
  return rest;
}

describe.skipIf(!pg.available)('a run row and its ledger event in one statement', () => {
  it('STORE-PG-77: create and updateAndAppend leave the rows the separate statements leave; listeners see the events', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      await nodes.sessions('s-one');
      const ledger = nodes.open('rnr_a', 'host-a', 3_600_000);
      const seen: RunEvent[] = [];
      ledger.onAppend((event) => seen.push(event));
      const combined = await ledger.create(input('s-one'));

      // The same run written the old way: the row, then its first event, then update, then append.
      const writes = createPostgresRunWrites({ sql: nodes.sql });
      const separate = await writes.insertRunRow({
        id: 'run_separate',
        session_id: 's-one',
        parent_run_id: null,
        family_session_id: 's-one',
        status: 'queued',
        agent: 'build',
        model: null,
        origin: 'http',
        prompt: 'hello',
        options: '{}',
        created_at: combined.created_at,
        started_at: null,
        pid: null,
        host: null,
        runner: null,
      });
      await writes.insertEvent({
        run_id: separate.id,
        session_id: 's-one',
        type: 'run.queued',
        payload: JSON.stringify({ origin: 'http', agent: 'build' }),
        created_at: 1,
      });
      expect(comparable(combined)).toEqual(comparable(separate));
      expect(await storedEvents(nodes.sql, combined.id)).toEqual(await storedEvents(nodes.sql, separate.id));
      expect(seen.map((e) => [e.run_id, e.seq, e.type, e.payload])).toEqual([
        [combined.id, 1, 'run.queued', { origin: 'http', agent: 'build' }],
      ]);

      const patch = {
        steps: 2,
        usage: { input_tokens: 10, output_tokens: 5, reasoning_tokens: 1, cached_input_tokens: 0 },
        cost: 0.25,
      };
      const payload = { step: 2, finish_reason: 'tool-calls', tool_calls: 1 };
      const both = await ledger.updateAndAppend!(combined.id, patch, 'step.finished', payload);
      const updated = await writes.updateRunRow(separate.id, patch, 2);
      await writes.insertEvent({
        run_id: separate.id,
        session_id: 's-one',
        type: 'step.finished',
        payload: JSON.stringify(payload),
        created_at: 2,
      });
      expect(comparable(both.run)).toEqual(comparable(updated!));
      expect(both.run).toEqual(await ledger.get(combined.id));
      expect(await storedEvents(nodes.sql, combined.id)).toEqual(await storedEvents(nodes.sql, separate.id));
      expect(both.event).toMatchObject({
        run_id: combined.id,
        session_id: 's-one',
        seq: 2,
        type: 'step.finished',
        payload,
      });
      expect((await ledger.events(combined.id)).map((e) => [e.id, e.seq])).toEqual(
        seen.map((e) => [e.id, e.seq]),
      );
      await expect(ledger.updateAndAppend!('run_none', patch, 'step.finished', {})).rejects.toThrow(
        'no run "run_none"',
      );
      expect(await nodes.sql.query('SELECT 1 FROM agent_run_events WHERE run_id = $1', ['run_none'])).toEqual(
        [],
      );
    } finally {
      await nodes.close();
    }
  });

  it('STORE-PG-78: two nodes writing to one run at once, combined and single appends, take each seq once in order', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      await nodes.sessions('s-two');
      const a = nodes.open('rnr_a', 'host-a', 3_600_000);
      const b = nodes.open('rnr_b', 'host-b', 3_600_000, nodes.other);
      const run = await a.create(input('s-two'));
      const writes = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          i % 2
            ? b.append(run.id, 'tool.called', { i })
            : a.updateAndAppend!(run.id, { steps: i }, 'step.finished', { i }).then((w) => w.event),
        ),
      );
      const stored = await a.events(run.id);
      expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
      // Each call answered the id and seq its event was stored with; seqs follow the ids.
      const byId = new Map(stored.map((e) => [e.id, e]));
      for (const event of writes)
        expect(byId.get(event.id)).toMatchObject({ seq: event.seq, payload: event.payload });
      const ids = stored.map((e) => e.id);
      expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    } finally {
      await nodes.close();
    }
  });

  it('STORE-PG-79: a failure inside the combined statement leaves neither the run row nor the event written', async () => {
    const nodes = await ledgerNodes(pg.cluster(), 60_000);
    try {
      await nodes.sessions('s-three');
      const ledger = nodes.open('rnr_a', 'host-a', 3_600_000);
      const run = await ledger.create(input('s-three'));
      // The event's insert fails (a trigger standing for any error of the second write).
      await nodes.sql.run(`CREATE FUNCTION svc_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.type = 'refused' THEN RAISE EXCEPTION 'refused event'; END IF; RETURN NEW; END $$`);
      await nodes.sql.run(
        'CREATE TRIGGER svc_test_refuse BEFORE INSERT ON agent_run_events FOR EACH ROW EXECUTE FUNCTION svc_test_refuse()',
      );
      try {
        await expect(ledger.updateAndAppend!(run.id, { steps: 7, cost: 1 }, 'refused', {})).rejects.toThrow();
        const after = await ledger.get(run.id);
        expect([after!.steps, after!.cost]).toEqual([run.steps, run.cost]);
        expect((await ledger.events(run.id)).map((e) => e.type)).toEqual(['run.queued']);

        await nodes.sql.run(`CREATE OR REPLACE FUNCTION svc_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF NEW.type = 'run.queued' THEN RAISE EXCEPTION 'refused event'; END IF; RETURN NEW; END $$`);
        await expect(ledger.create(input('s-three'))).rejects.toThrow();
        expect((await ledger.list({ session_id: 's-three' })).map((r) => r.id)).toEqual([run.id]);
      } finally {
        await nodes.sql.run('DROP TRIGGER svc_test_refuse ON agent_run_events');
        await nodes.sql.run('DROP FUNCTION svc_test_refuse()');
      }
    } finally {
      await nodes.close();
    }
  });
});
