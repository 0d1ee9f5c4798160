/**
 * A compat request's new session inserted in its run's INSERT on PostgreSQL (p-pgcompat): the
 * session store holds the INSERT (`createHeld`: the row as `RETURNING *` answers it, read back
 * from memory in the transaction) and the run ledger sends it first in the statement that inserts
 * the run and `run.queued` (`create`'s `riding`), so the start's transaction has one statement
 * fewer. Both or neither: a session INSERT that fails writes no run. A request with history to
 * import still inserts its session first (its messages need the row).
 */
import { describe, expect, it } from 'vitest';
import { createPostgresRunLedger } from '../../src/runs/pg-run-ledger';
import { createIds, systemClock } from '../../src/util/ids';
import { reply } from '../helpers/fake-provider';
import { driverStatements, migratedDatabase, postgresForFile, recordingClient } from '../helpers/postgres';
import { compatServer, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();
const SESSION_INSERT = /INSERT INTO sessions \(/;

describe.skipIf(!pg.available)('a compat session inserted with its run on PostgreSQL', () => {
  it('STORE-PG-242: a new compat session’s INSERT goes in its run’s INSERT statement; the rows as the separate inserts left them', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const statements = driverStatements();
    const { app, client } = await compatServer(
      [reply().text('warm'), reply().text('one').usage(10, 2), reply().text('later')],
      {
        postgres: sql,
      },
    );
    try {
      await streamedAnswer(client);
      await settledCompatRow(app);
      await app.bus.flush();
      const from = statements.sent.length;
      expect(await streamedAnswer(client)).toBe('one');
      const row = await settledCompatRow(app);
      const sent = statements.sent.slice(from);
      const inserts = sent.filter((t) => SESSION_INSERT.test(t));
      expect(inserts).toHaveLength(1);
      expect(inserts[0]).toMatch(/^WITH riding AS \(INSERT INTO sessions .*r AS \(INSERT INTO agent_runs /s);
      expect(sent.filter((t) => /INSERT INTO agent_runs /.test(t))).toHaveLength(1);

      // The session row as stored is the one the request used; the run and its events as before.
      const session = await app.sessions.require(row.session_id);
      expect(session).toMatchObject({
        id: row.session_id,
        parent_id: null,
        title: 'hello',
        mode: 'build',
        reasoning_effort: null,
        metadata: { openai_compat: { request_id: row.request_id } },
      });
      expect(session.prompt_tokens).toBe(10);
      const run = await app.runs.require(row.run_id);
      expect(run).toMatchObject({
        session_id: session.id,
        family_session_id: session.id,
        status: 'completed',
      });
      expect((await app.runs.events(run.id)).slice(0, 4).map((e) => e.type)).toEqual([
        'run.queued',
        'run.started',
        'phase',
        'openai_compat.request',
      ]);
      const created = (await app.bus.replay(session.id, 0)).events.filter(
        (e) => e.type === 'session.created',
      );
      expect(created).toHaveLength(1);
      // History to import: the session is inserted first, alone (its messages need it).
      const mark = statements.sent.length;
      const withHistory = await client.chat.completions.create({
        model: 'fake/m1',
        messages: [
          { role: 'user', content: 'earlier' },
          { role: 'assistant', content: 'noted' },
          { role: 'user', content: 'now' },
        ],
      });
      expect(withHistory.choices[0].message.content).toBe('later');
      const alone = statements.sent.slice(mark).filter((t) => SESSION_INSERT.test(t));
      expect(alone).toHaveLength(1);
      expect(alone[0]).toMatch(/^INSERT INTO sessions /);
    } finally {
      statements.restore();
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-243: a run created with a session INSERT riding: one statement with both rows; a failing session INSERT writes no run', async () => {
    const sql = await migratedDatabase(pg.cluster());
    try {
      const sent: string[] = [];
      const ledger = createPostgresRunLedger({
        clock: systemClock,
        ids: createIds(),
        sql: recordingClient(sql, sent),
        runner: 'rnr_t',
      });
      await sql.run("INSERT INTO sessions (id, created_at, updated_at) VALUES ('ses_taken', 1, 1)", []);
      const riding = {
        text: 'INSERT INTO sessions (id, created_at, updated_at) VALUES ($1, 1, 1) RETURNING id',
        values: ['ses_taken'],
      };
      const input = {
        session_id: 'ses_taken',
        family_session_id: 'ses_taken',
        agent: 'build',
        origin: 'http',
        prompt: 'hello',
      };
      await expect(ledger.create(input, riding)).rejects.toThrow(/duplicate key|sessions_pkey/);
      expect((await sql.one<{ n: number }>('SELECT count(*)::int AS n FROM agent_runs', []))?.n).toBe(0);
      // A new one: one statement, both rows.
      sent.length = 0;
      const run = await ledger.create(
        { ...input, session_id: 'ses_new', family_session_id: 'ses_new' },
        { ...riding, values: ['ses_new'] },
      );
      expect(sent).toHaveLength(1);
      expect(run).toMatchObject({ session_id: 'ses_new', status: 'queued' });
      expect((await ledger.events(run.id)).map((e) => [e.seq, e.type])).toEqual([[1, 'run.queued']]);
      await ledger.close?.();
    } finally {
      await sql.close();
    }
  });
});
