/**
 * Another domain's insert and its run event in a run's claim on PostgreSQL (issue 18 item 6,
 * p-pgstart, `ClaimOptions.alongside`): written only with the claim, in the same statement, after
 * the claim's own events; a claim that does not happen there (another live run holds the session)
 * writes neither; a request id already there writes no event; a failing insert fails the claim
 * and leaves nothing behind.
 */
import { describe, expect, it } from 'vitest';
import { createPostgresCompatRequestRepository } from '../../src/runs/pg-compat-request-repository';
import { createPostgresRunLedger } from '../../src/runs/pg-run-ledger';
import type { ClaimAlongside, RunEvent } from '../../src/runs/types';
import { createIds, systemClock } from '../../src/util/ids';
import { compatRequestRow } from '../helpers/compat-request-row';
import { migratedDatabase, postgresForFile, recordingClient } from '../helpers/postgres';

const pg = postgresForFile();

const compatRow = (requestId: string, runId: string, sessionId: string) =>
  compatRequestRow(
    { request_id: requestId, run_id: runId, session_id: sessionId },
    { requested_model: 'fake/m1', model_source: 'request', ignored_fields: ['user'], created_at: 1234 },
  );

describe.skipIf(!pg.available)('an insert in a run’s claim on PostgreSQL', () => {
  it('STORE-PG-281: the row and its event in the claim’s one statement, after run.started and the next event; a busy session or a request id already there writes neither; a failing insert claims nothing', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const sent: string[] = [];
    const ledger = createPostgresRunLedger({
      clock: systemClock,
      ids: createIds(),
      sql: recordingClient(sql, sent),
      runner: 'rnr_t',
    });
    const requests = createPostgresCompatRequestRepository({ sql });
    try {
      await sql.run("INSERT INTO sessions (id, created_at, updated_at) VALUES ('ses_a', 1, 1)", []);
      const input = {
        session_id: 'ses_a',
        family_session_id: 'ses_a',
        agent: 'build',
        origin: 'http',
        prompt: 'hi',
      };
      const told: RunEvent[] = [];
      const alongside = (requestId: string, runId: string): ClaimAlongside => ({
        runId,
        write: requests.insertAfterClaim!(compatRow(requestId, runId, 'ses_a')),
        event: { type: 'openai_compat.request', payload: { request_id: requestId } },
        written: (event) => told.push(event),
      });
      const next = { type: 'phase', payload: { phase: 'prompt' } };

      const first = await ledger.create(input);
      sent.length = 0;
      const claimed = await ledger.claim(first.id, {
        started: true,
        next,
        alongside: alongside('req-1', first.id),
      });
      expect(claimed.ok).toBe(true);
      expect(sent).toHaveLength(1);
      expect((await ledger.events(first.id)).map((e) => [e.seq, e.type])).toEqual([
        [1, 'run.queued'],
        [2, 'run.started'],
        [3, 'phase'],
        [4, 'openai_compat.request'],
      ]);
      expect(told.map((e) => [e.run_id, e.seq, e.type, e.payload])).toEqual([
        [first.id, 4, 'openai_compat.request', { request_id: 'req-1' }],
      ]);
      expect(await requests.get('req-1')).toMatchObject({
        run_id: first.id,
        stream: true,
        include_usage: false,
        message_count: 2,
        ignored_fields: ['user'],
        created_at: 1234,
      });

      // The session is busy (`first` runs, its owner alive): not claimed, nothing of the insert.
      const second = await ledger.create(input);
      const blocked = await ledger.claim(second.id, {
        started: true,
        next,
        alongside: alongside('req-2', second.id),
      });
      expect(blocked.ok).toBe(false);
      expect(await requests.get('req-2')).toBeUndefined();
      expect((await ledger.events(second.id)).map((e) => e.type)).toEqual(['run.queued']);
      expect(told).toHaveLength(1);

      // A request id already there: claimed, no second row, no event.
      await sql.run("INSERT INTO sessions (id, created_at, updated_at) VALUES ('ses_b', 1, 1)", []);
      const other = await ledger.create({ ...input, session_id: 'ses_b', family_session_id: 'ses_b' });
      const again = await ledger.claim(other.id, {
        started: true,
        next,
        alongside: alongside('req-1', other.id),
      });
      expect(again.ok).toBe(true);
      expect((await ledger.events(other.id)).map((e) => e.type)).toEqual([
        'run.queued',
        'run.started',
        'phase',
      ]);
      expect((await requests.get('req-1'))?.run_id).toBe(first.id);
      expect(told).toHaveLength(1);

      // An insert that fails (its run does not exist: the foreign key) fails the claim: nothing written.
      await sql.run("INSERT INTO sessions (id, created_at, updated_at) VALUES ('ses_c', 1, 1)", []);
      const third = await ledger.create({ ...input, session_id: 'ses_c', family_session_id: 'ses_c' });
      const failing: ClaimAlongside = {
        ...alongside('req-3', third.id),
        write: requests.insertAfterClaim!(compatRow('req-3', 'run_missing', 'ses_c')),
      };
      await expect(ledger.claim(third.id, { started: true, next, alongside: failing })).rejects.toThrow(
        /foreign key|openai_compat_requests/,
      );
      expect((await ledger.get(third.id))?.status).toBe('queued');
      expect((await ledger.events(third.id)).map((e) => e.type)).toEqual(['run.queued']);
      expect(await requests.get('req-3')).toBeUndefined();
      expect(told).toHaveLength(1);
    } finally {
      await ledger.close?.();
      await sql.close();
    }
  });

  it('STORE-PG-283: the claim answers the alongside’s event only when it wrote it (its caller’s `opened` hangs on that)', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const ledger = createPostgresRunLedger({ clock: systemClock, ids: createIds(), sql, runner: 'rnr_t' });
    const requests = createPostgresCompatRequestRepository({ sql });
    try {
      const next = { type: 'phase', payload: { phase: 'prompt' } };
      const claimWith = async (sessionId: string, requestId: string) => {
        await sql.run('INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1)', [sessionId]);
        const run = await ledger.create({
          session_id: sessionId,
          family_session_id: sessionId,
          agent: 'build',
          origin: 'http',
          prompt: 'hi',
        });
        return await ledger.claim(run.id, {
          started: true,
          next,
          alongside: {
            runId: run.id,
            write: requests.insertAfterClaim!(compatRow(requestId, run.id, sessionId)),
            event: { type: 'openai_compat.request', payload: { request_id: requestId } },
            written: () => {},
          },
        });
      };
      const wrote = await claimWith('ses_x', 'req-x');
      expect(wrote.ok && wrote.alongside && [wrote.alongside.seq, wrote.alongside.type]).toEqual([
        4,
        'openai_compat.request',
      ]);
      // The request id is there already: claimed, nothing of the alongside, nothing answered.
      const skipped = await claimWith('ses_y', 'req-x');
      expect(skipped.ok).toBe(true);
      expect(skipped.ok && skipped.alongside).toBeUndefined();
    } finally {
      await ledger.close?.();
      await sql.close();
    }
  });
});
