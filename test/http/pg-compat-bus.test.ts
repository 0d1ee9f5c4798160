/**
 * A compat request's own session-event appends on PostgreSQL (p-pgbus): the bus's appends of one
 * request alone, counted. The start's events (`session.created`, the queue, the state, `run.started`,
 * the prompt's message) go in the start's one statement (p-pgstart4; before, held in its transaction
 * and appended together after it, src/events/held-publishes.ts), and the finish's `run.finished` and
 * idle state in the run's finish statement (p-finishjoin; before p-pgbus two appends, then one,
 * src/agent/run-finish.ts): the session's log in the same order.
 */
import { afterEach, describe, expect, it, onTestFailed, vi } from 'vitest';
import { reply } from '../helpers/fake-provider';
import { driverStatements, loggedEvents, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { compatServer, LONE_REQUEST_LOG, settledCompatRow, streamedAnswer } from './compat-helpers';

const pg = postgresForFile();
const BUS_APPEND = /^SELECT event_id, previous_id FROM svc_append_events_across\(/;

describe.skipIf(!pg.available)('a compat request’s session-event appends on PostgreSQL', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('STORE-PG-279: one request alone: the start’s events in its one statement (p-pgstart4; were one append after it), run.finished and the idle state in the run’s finish statement (p-finishjoin; were the last append); at most three bus appends (were four), the log in publish order', async () => {
    // The answer's message written at its first delta, its deltas appended by the bus: a text step
    // held for its step end (p-heldstep, test/store/pg-held-step.test.ts) has neither, so off here.
    vi.stubEnv('SVC_STEP_ONCE', '0');
    const sql = await migratedDatabase(pg.cluster());
    const statements = driverStatements();
    const { app, client } = await compatServer([reply().text('warm'), reply().text('one').usage(10, 2)], {
      postgres: sql,
    });
    try {
      await streamedAnswer(client);
      await settledCompatRow(app);
      await app.bus.flush();
      const from = statements.calls.length;
      expect(await streamedAnswer(client)).toBe('one');
      const row = await settledCompatRow(app);
      await app.bus.flush();
      const calls = statements.calls.slice(from);
      const appends = calls
        .map((call, at) => ({ at, types: call.values?.[1] as string[] | undefined, text: call.text }))
        .filter((call) => BUS_APPEND.test(call.text));
      const types = appends.map((a) => a.types ?? []);
      // The start's events: in the start's one statement (p-pgstart4), no bus append of their own.
      // The finish's run.finished and idle state: in its statement. The answer's events between
      // them are joined to its message writes when the bus's queue is idle at each publish
      // (bench/store-statements.mjs counts them) and appended by the bus when an earlier append is
      // still answering (a loaded machine: each of message.created, the delta, and
      // message.completed with the usage, at most three in all);
      // either way each event once, in publish order (the log below).
      const start = calls.findIndex((call) => /INSERT INTO sessions /.test(call.text));
      expect(start).toBeGreaterThanOrEqual(0);
      // Inserted inline: the session is the statement's own (p-pglone; a call of
      // svc_append_events_across before).
      expect(calls[start].text).toContain('INSERT INTO session_events');
      expect(calls[start].values).toContainEqual([
        'session.created',
        'queue.changed',
        'state.changed',
        'queue.changed',
        'run.started',
        'message.created',
        'message.completed',
      ]);
      expect(types.flat()).not.toContain('session.created');
      expect(types.flat()).not.toContain('run.started');
      // The finish's two events in its statement (p-finishjoin), as the bus's next write.
      expect(types.flat()).not.toContain('run.finished');
      expect(types.flat()).not.toContain('state.changed');
      const finish = calls.filter((call) => /^WITH .*r AS \(UPDATE agent_runs /s.test(call.text));
      // With the last step end's completions and context gauge before them (p-pglast: one statement).
      expect(finish.at(-1)?.values).toContainEqual([
        'message.completed',
        'context.usage',
        'run.finished',
        'state.changed',
      ]);
      expect(types.length).toBeLessThanOrEqual(3);
      const after = types.flat();
      expect(after).toContain('message.delta');
      const answer = [
        'message.created',
        'message.delta',
        'message.completed',
        'context.usage',
        'run.finished',
        'state.changed',
      ];
      // In publish order, none twice: each bus-appended event's place in the answer's sequence rises.
      const places = after.map((type) => answer.indexOf(type));
      expect(places.every((place, i) => place >= 0 && (i === 0 || place > places[i - 1]))).toBe(true);
      // The start is one statement, its own commit, no BEGIN/COMMIT (p-pgstart2); the bus's appends after it.
      // (Each with the statements around it, so a failure names the writes that shared a transaction.)
      const controls = calls.flatMap((call, i) =>
        call.text === 'BEGIN' || call.text === 'COMMIT'
          ? [
              {
                text: call.text,
                around: calls.slice(Math.max(0, i - 2), i + 3).map((c) => c.text.slice(0, 120)),
              },
            ]
          : [],
      );
      expect(controls).toEqual([]);
      expect(appends[0].at).toBeGreaterThan(start);
      expect((await loggedEvents(sql, row.session_id)).map((e) => e.type)).toEqual(LONE_REQUEST_LOG);
    } finally {
      statements.restore();
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-390: the readout recorder’s reads and close run outside the compat start’s transaction (a lone start stays one statement, no BEGIN/COMMIT around it), and the start follows the pending start_new_session recommendation', async () => {
    const sql = await migratedDatabase(pg.cluster());
    const statements = driverStatements();
    const { app, client } = await compatServer([reply().text('warm'), reply().text('one')], {
      postgres: sql,
    });
    try {
      await streamedAnswer(client);
      await settledCompatRow(app);
      await app.bus.flush();
      // A pending recommendation a new top-level session follows: the write drops the kept pending
      // rows, so the start's session.created makes the recorder read them from the database and
      // close the one it finds (its own transaction).
      const rec = await app.recommendations.record({
        zone: 'compaction',
        kind: 'start_new_session',
        session_id: 'ses_other',
        payload: { compactions: 2 },
        window_seconds: 3600,
      });
      const from = statements.calls.length;
      // Failed once under load, not reproduced in 100 runs (p-flake2): a failure prints the
      // window's statements with their connections, to name what came in.
      onTestFailed(() => {
        const seen = statements.clients.slice(from);
        const lines = statements.calls
          .slice(from)
          .map((call, i) => `c${seen.indexOf(seen[i])} ${call.text.slice(0, 100).replace(/\s+/g, ' ')}`);
        console.log(`STORE-PG-390's statements from the second request on:\n${lines.join('\n')}`);
      });
      expect(await streamedAnswer(client)).toBe('one');
      await settledCompatRow(app);
      await app.bus.flush();
      await app.recommendations.flush();
      expect((await app.recommendations.get(rec.id))?.outcome).toBe('followed');
      const texts = statements.calls.slice(from).map((call) => call.text);
      const clients = statements.clients.slice(from);
      const start = texts.findIndex((text) => /INSERT INTO sessions /.test(text));
      expect(start).toBeGreaterThanOrEqual(0);
      // Each BEGIN … COMMIT of the request (its statements on that connection) is the recorder's
      // close alone: its locked read and update.
      const transactions: string[][] = [];
      texts.forEach((text, i) => {
        if (text !== 'BEGIN') return;
        const own = texts.filter((_, j) => j > i && clients[j] === clients[i]);
        const end = own.indexOf('COMMIT');
        transactions.push(own.slice(0, end < 0 ? undefined : end).map((t) => t.slice(0, 60)));
      });
      expect(transactions, JSON.stringify(transactions, null, 1)).toHaveLength(1);
      expect(transactions[0]).toHaveLength(2);
      expect(transactions[0][0]).toMatch(
        /^SELECT .* FROM recommendations WHERE id = \$1 FOR UPDATE|^SELECT id, zone/,
      );
      expect(transactions[0][1]).toMatch(/^UPDATE recommendations SET outcome/);
      expect(texts.filter((text) => /SAVEPOINT/.test(text))).toEqual([]);
    } finally {
      statements.restore();
      await app.close();
      await sql.close();
    }
  });
});
