/**
 * A streamed compat request's end on PostgreSQL (issue 18 item 6, p-pgcompat6): its ledger row's
 * end and the run's `openai_compat.response` event go in the run's finish statement
 * (`AgentService.finishWith`, `RunLedger.updateAndAppend`'s `alongside`), not in a statement of
 * their own between `run.finished` and `[DONE]`: one round trip fewer after the model's last byte.
 * What the client reads, the row, and the run's events are SQLite's; the row is ended before
 * `[DONE]` (ENGINE-COMPAT-5). A failing merged statement: the finish goes alone and the request
 * ends as when its own ledger write fails (a logged failure, `[DONE]`, the row left running).
 */
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import type { SqlClient } from '../../src/store/postgres/client';
import { reply } from '../helpers/fake-provider';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';
import { BACKGROUND_STATEMENT, compatServer, sseData, TOKEN } from './compat-helpers';

const pg = postgresForFile();
const BUS_APPEND = /^SELECT event_id, previous_id FROM svc_append_events_across\(/;
const WRITE = /^(WITH|INSERT|UPDATE|DELETE)\b/;
const RUN_FINISH_WITH_LEDGER =
  /^WITH q AS MATERIALIZED .*r AS \(UPDATE agent_runs .*alongside AS \(UPDATE openai_compat_requests /s;

const BODY = {
  model: 'fake/m1',
  messages: [{ role: 'user', content: 'hello' }],
  stream: true,
  stream_options: { include_usage: true },
};

/** The chunks' data without what differs per request (ids, times). */
function visible(data: string[]): unknown[] {
  return data.map((d) => {
    if (d === '[DONE]') return d;
    const { id: _id, created: _created, ...rest } = JSON.parse(d) as Record<string, unknown>;
    return rest;
  });
}

/** A warm request, then one streamed request: what the client read, and the row right after it. */
async function streamedRequest(options: { postgres?: SqlClient; before?: () => Promise<void> } = {}) {
  const { app, post } = await compatServer([reply().text('warm'), reply().text('one').usage(10, 2)], {
    ...(options.postgres ? { postgres: options.postgres } : {}),
  });
  await sseData(await post('/v1/chat/completions', BODY));
  await app.bus.flush();
  await options.before?.();
  const statements = driverStatements();
  const data = visible(await sseData(await post('/v1/chat/completions', BODY)));
  statements.restore();
  // Read at once, no wait for the row's end: it was written before `[DONE]`.
  const [row] = (await app.compatRequests.list({ limit: 1 })).rows;
  return { app, data, row, calls: statements.calls };
}

async function runEvents(app: App, runId: string) {
  return (await app.runs.events(runId)).map((e) => {
    const { request_id: _request, ...payload } = e.payload as Record<string, unknown>;
    return { seq: e.seq, type: e.type, ...(e.type.startsWith('openai_compat.') ? { payload } : {}) };
  });
}

describe.skipIf(!pg.available)('a streamed compat request’s end on PostgreSQL', () => {
  it('STORE-PG-440: the ledger row’s end and its event ride in the run’s finish: no statement of their own after it; the request’s writes are two (were six; three before p-pgprep3), the row ended before [DONE]', async () => {
    const sql = await migratedDatabase(pg.cluster());
    try {
      const { app, row, calls } = await streamedRequest({ postgres: sql });
      try {
        const texts = calls.map((call) => call.text);
        const start = texts.findIndex((text) => /INSERT INTO sessions /.test(text));
        expect(start).toBeGreaterThanOrEqual(0);
        const writes = texts
          .slice(start)
          .filter((text) => WRITE.test(text) && !BUS_APPEND.test(text) && !BACKGROUND_STATEMENT.test(text));
        const finish = writes.findIndex((text) => RUN_FINISH_WITH_LEDGER.test(text));
        // The run's finish carries the row's end and the run's `openai_compat.response`, and it is
        // the request's last write: nothing but the bus's appends and reads before `[DONE]` after it.
        expect(finish, writes.map((t) => t.slice(0, 80)).join('\n')).toBe(writes.length - 1);
        // Its run events (the step end's held ones, the step end's, its own, the row's) in one
        // list (p-pgserver, p-pglone: the held ones handed over by the step end's `WITH`), the
        // finish's own INSERT after one seq read since p-lastseq (was one list call).
        expect(writes[finish]).toContain(
          'svc_run_list AS MATERIALIZED (SELECT coalesce((SELECT h.types FROM svc_run_events h)',
        );
        expect(writes[finish]?.match(/svc_run_last_seq\(/g)).toHaveLength(1);
        expect(writes[finish]?.match(/INSERT INTO agent_run_events/g)).toHaveLength(1);
        expect(writes[finish]).not.toMatch(/svc_append_run_event(_list)?\(/);
        expect(writes.filter((text) => /openai_compat_requests/.test(text))).toHaveLength(2);
        // The start and the finish, with the last step end in it (p-pglast), the step's assistant
        // message inserted closed by that step end (p-heldstep, where it was a write of its own at
        // the first delta) and the preparation's writes (the prompt stack row, p-pgprep3, where
        // they were a statement of their own at the step's start): five before all three.
        expect(writes).toHaveLength(2);
        expect(writes[finish]).toContain('INSERT INTO prompt_stack_builds');
        expect(row).toMatchObject({
          status: 'completed',
          finish_reason: 'stop',
          http_status: 200,
          error: null,
          prompt_tokens: 10,
          completion_tokens: 2,
        });
        expect(row.finished_at).toEqual(expect.any(Number));
      } finally {
        await app.close();
      }
    } finally {
      await sql.close();
    }
  });

  it('STORE-PG-441: with the row’s end in the run’s finish, what the client reads, the ledger row and the run’s events are SQLite’s: run.finished then openai_compat.response, consecutive seqs, the same payload', async () => {
    const sqlite = await streamedRequest();
    const sql = await migratedDatabase(pg.cluster());
    try {
      const postgres = await streamedRequest({ postgres: sql });
      try {
        // Written by the run's finish statement (STORE-PG-440), as SQLite's separate writes leave them.
        expect(postgres.calls.some((call) => RUN_FINISH_WITH_LEDGER.test(call.text))).toBe(true);
        expect(postgres.data).toEqual(sqlite.data);
        expect(postgres.data.at(-1)).toBe('[DONE]');
        const fields = ({
          request_id: _r,
          run_id: _u,
          session_id: _s,
          created_at: _c,
          finished_at,
          ...rest
        }: typeof postgres.row) => ({
          ...rest,
          finished: finished_at !== null,
        });
        expect(fields(postgres.row)).toEqual(fields(sqlite.row));
        const pgEvents = await runEvents(postgres.app, postgres.row.run_id);
        const sqliteEvents = await runEvents(sqlite.app, sqlite.row.run_id);
        expect(pgEvents.slice(-2)).toEqual(sqliteEvents.slice(-2));
        expect(pgEvents.slice(-2).map((e) => e.type)).toEqual(['run.finished', 'openai_compat.response']);
        expect(pgEvents.at(-1)?.seq).toBe((pgEvents.at(-2)?.seq ?? 0) + 1);
        expect(pgEvents.at(-1)).toMatchObject({
          payload: { status: 'completed', finish_reason: 'stop', http_status: 200, stream: true },
        });
      } finally {
        await postgres.app.close();
      }
    } finally {
      await sqlite.app.close();
      await sql.close();
    }
  });

  it('STORE-PG-443: a JSON answer (no stream): the row’s end in the run’s finish too, the answer, the row and the run’s events as SQLite’s', async () => {
    const ask = async (postgres?: SqlClient) => {
      const { app, post } = await compatServer([reply().text('warm'), reply().text('one').usage(10, 2)], {
        ...(postgres ? { postgres } : {}),
      });
      const body = { model: 'fake/m1', messages: [{ role: 'user', content: 'hello' }] };
      await (await post('/v1/chat/completions', body)).json();
      await app.bus.flush();
      const statements = driverStatements();
      const answer = (await (await post('/v1/chat/completions', body)).json()) as Record<string, unknown>;
      statements.restore();
      const [row] = (await app.compatRequests.list({ limit: 1 })).rows;
      const { id: _id, created: _created, ...visibleAnswer } = answer;
      return { app, answer: visibleAnswer, row, calls: statements.calls };
    };
    const sqlite = await ask();
    const sql = await migratedDatabase(pg.cluster());
    try {
      const postgres = await ask(sql);
      try {
        const ledger = postgres.calls.filter(
          (call) => /openai_compat_requests/.test(call.text) && WRITE.test(call.text),
        );
        expect(ledger.map((call) => RUN_FINISH_WITH_LEDGER.test(call.text))).toEqual([false, true]);
        expect(postgres.answer).toEqual(sqlite.answer);
        expect(postgres.row).toMatchObject({ status: 'completed', finish_reason: 'stop', http_status: 200 });
        const fields = ({
          request_id: _r,
          run_id: _u,
          session_id: _s,
          created_at: _c,
          finished_at,
          ...rest
        }: typeof postgres.row) => ({ ...rest, finished: finished_at !== null });
        expect(fields(postgres.row)).toEqual(fields(sqlite.row));
        expect((await runEvents(postgres.app, postgres.row.run_id)).slice(-2)).toEqual(
          (await runEvents(sqlite.app, sqlite.row.run_id)).slice(-2),
        );
      } finally {
        await postgres.app.close();
      }
    } finally {
      await sqlite.app.close();
      await sql.close();
    }
  });

  it('STORE-PG-442: the merged statement failing (the row’s end refused): the run finishes alone, the client reads the whole answer and [DONE] with no error chunk, the row stays running, as when the ledger’s own write fails', async () => {
    const sql = await migratedDatabase(pg.cluster());
    try {
      const refuse = async () => {
        await sql.run(`CREATE FUNCTION svc_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $fn$
          BEGIN IF NEW.status <> 'running' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $fn$`);
        await sql.run(`CREATE TRIGGER svc_test_refuse BEFORE UPDATE ON openai_compat_requests
            FOR EACH ROW EXECUTE FUNCTION svc_test_refuse()`);
      };
      const { app, data, row, calls } = await streamedRequest({ postgres: sql, before: refuse });
      try {
        const contents = data.flatMap((d) => {
          const choice = (
            d as { choices?: { delta?: { content?: string }; finish_reason?: string | null }[] }
          ).choices?.[0];
          return choice ? [[choice.delta?.content ?? null, choice.finish_reason ?? null]] : [];
        });
        expect(contents).toEqual([
          ['', null],
          ['one', null],
          [null, 'stop'],
        ]);
        expect(data.some((d) => typeof d === 'object' && d !== null && 'error' in d)).toBe(false);
        expect(data.at(-1)).toBe('[DONE]');
        expect(row.status).toBe('running');
        const run = await app.runs.get(row.run_id);
        expect(run).toMatchObject({ status: 'completed' });
        const events = await runEvents(app, row.run_id);
        expect(events.at(-1)?.type).toBe('run.finished');
        expect(events.filter((e) => e.type === 'run.finished')).toHaveLength(1);
        expect(events.some((e) => e.type === 'openai_compat.response')).toBe(false);
        // The finish carried the row's end, failed, and was sent again alone.
        const finishes = calls.filter((call) =>
          /^WITH q AS MATERIALIZED .*r AS \(UPDATE agent_runs /s.test(call.text),
        );
        expect(finishes.map((call) => RUN_FINISH_WITH_LEDGER.test(call.text))).toEqual([true, false]);
      } finally {
        await app.close();
      }
    } finally {
      await sql.close();
    }
  });

  it('STORE-PG-444: a client gone while the run’s finish carrying the row’s end is in flight: one outcome, the finish’s (completed, one openai_compat.response), no disconnected write after it', async () => {
    const sql = await migratedDatabase(pg.cluster());
    try {
      const { app, url, post } = await compatServer(
        [reply().text('warm'), reply().text('one').usage(10, 2)],
        {
          postgres: sql,
        },
      );
      try {
        await sseData(await post('/v1/chat/completions', BODY));
        await app.bus.flush();
        // The row's end (only the finish's: status completed) takes 600 ms: the client goes meanwhile.
        await sql.run(`CREATE FUNCTION svc_test_slow() RETURNS trigger LANGUAGE plpgsql AS $fn$
          BEGIN PERFORM pg_sleep(0.6); RETURN NEW; END $fn$`);
        await sql.run(`CREATE TRIGGER svc_test_slow BEFORE UPDATE ON openai_compat_requests
            FOR EACH ROW WHEN (NEW.status = 'completed') EXECUTE FUNCTION svc_test_slow()`);
        const statements = driverStatements();
        const gone = new AbortController();
        const response = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify(BODY),
          signal: gone.signal,
        });
        const reading = response.text().catch(() => 'aborted');
        try {
          for (let i = 0; i < 250 && !statements.calls.some((c) => RUN_FINISH_WITH_LEDGER.test(c.text)); i++)
            await new Promise((r) => setTimeout(r, 20));
        } finally {
          statements.restore();
        }
        expect(statements.calls.some((c) => RUN_FINISH_WITH_LEDGER.test(c.text))).toBe(true);
        gone.abort();
        expect(await reading).toBe('aborted');
        const [first] = (await app.compatRequests.list({ limit: 1 })).rows;
        await app.agent.wait(first.run_id);
        let responses = 0;
        for (let i = 0; i < 250 && responses === 0; i++) {
          await new Promise((r) => setTimeout(r, 20));
          responses = (await runEvents(app, first.run_id)).filter(
            (e) => e.type === 'openai_compat.response',
          ).length;
        }
        // Room for a disconnected write of the route's own, had it made one after the finish.
        await new Promise((r) => setTimeout(r, 500));
        const [row] = (await app.compatRequests.list({ limit: 1 })).rows;
        expect(row).toMatchObject({
          status: 'completed',
          finish_reason: 'stop',
          http_status: 200,
          error: null,
        });
        const events = await runEvents(app, row.run_id);
        expect(events.filter((e) => e.type === 'openai_compat.response')).toHaveLength(1);
        expect(events.at(-1)).toMatchObject({
          type: 'openai_compat.response',
          payload: { status: 'completed' },
        });
        expect(await app.runs.get(row.run_id)).toMatchObject({ status: 'completed' });
      } finally {
        await app.close();
      }
    } finally {
      await sql.close();
    }
  });
});
