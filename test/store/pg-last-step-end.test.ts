/**
 * A run's last step end in its finish's statement on PostgreSQL (issue 18 item 6, p-pglast,
 * src/agent/last-step-end.ts): a step with no call that ends the run holds its step end's
 * statement, and the finish writes it first in its own. Pinned against the same script on SQLite:
 * the run events (in seq order), the session events and the messages; a stop that comes between
 * the run's body and its finish sends the held step end alone first (its events before the stop's
 * `cancelling`, as on SQLite where it was written before the stop).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { App } from '../../src/app';
import type { SqlClient } from '../../src/store/postgres/client';
import { reply } from '../helpers/fake-provider';
import { faultyClient } from '../helpers/faulty-client';
import { betweenBodyAndFinish, storeRun } from '../helpers/pg-recorded-app';
import { postgresForFile } from '../helpers/postgres';
import { until } from '../helpers/until';

/** A step end's part of a statement: its message updates, or its session usage when it has no message to patch (p-pgnopatch). */
const STEP_END_PART = /UPDATE messages|prompt_tokens = prompt_tokens \+/;

const pg = postgresForFile();

const RUN_UPDATE = /UPDATE agent_runs/;
/** A step end: the step's messages and the run's row in one statement. */
const stepEnd = (text: string) => RUN_UPDATE.test(text) && STEP_END_PART.test(text);
/** A finish: the run's status. */
const finish = (text: string) => /UPDATE agent_runs SET status = /.test(text);
type Run = Awaited<ReturnType<typeof storeRun>>;

/** The run events' types in seq order, with their seqs consecutive from 1. */
function runTypes(r: Run): string[] {
  expect(r.runEvents.map((e) => e.seq)).toEqual(r.runEvents.map((_, i) => i + 1));
  return r.runEvents.map((e) => e.type);
}

/** The session events' types, the deltas aside (their count is the stream's chunking). */
const sessionTypes = (r: Run) => r.sessionEvents.filter((e) => e.type !== 'message.delta').map((e) => e.type);

/** What must be the same on both stores once the run ended. */
function shape(r: Run) {
  return {
    status: r.status,
    run: runTypes(r),
    session: sessionTypes(r),
    messages: r.messages.map((m) => [m.role, m.finished_at !== null, m.usage, m.cost]),
  };
}

describe.skipIf(!pg.available)('a run’s last step end in its finish’s statement on PostgreSQL', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-530: a run of one text step: its step end is written by its finish’s statement (no statement of its own), and the run events, session events and messages are SQLite’s', async () => {
    const script = () => [reply().text('hello there').usage(100, 20)];
    const options = { tools: [], title: 'last step end', closers };
    const lite = await storeRun(undefined, script(), options);
    const r = await storeRun(pg.cluster(), script(), options);
    expect(r.status).toBe('completed');
    // One statement writes the step end: the finish, carrying it (was a statement of its own).
    const updates = r.sent.filter((text) => RUN_UPDATE.test(text));
    const ends = updates.filter(stepEnd);
    expect(ends, updates.map((t) => t.slice(0, 100)).join('\n')).toHaveLength(1);
    expect(updates.filter(finish)).toEqual(ends);
    expect(ends[0]).toMatch(/UPDATE sessions/);
    expect(ends[0]).toMatch(/INSERT INTO model_calls/);
    expect(r.sent.filter((text) => /INSERT INTO model_calls/.test(text))).toEqual(ends);
    // step.finished then run.finished, consecutive seqs; the rest as SQLite's.
    expect(shape(r)).toEqual(shape(lite));
    const types = runTypes(r);
    expect(types.slice(-2)).toEqual(['step.finished', 'run.finished']);
    // The ledger's listeners heard them in seq order.
    const heard = r.heard.filter((e) => e.run_id === r.runId);
    expect(heard.map((e) => e.seq)).toEqual(r.runEvents.map((e) => e.seq));
    expect(sessionTypes(r).slice(-4)).toEqual([
      'message.completed',
      'context.usage',
      'run.finished',
      'state.changed',
    ]);
    // The session's usage and the step's model call, as the step end wrote them.
    const session = await r.app.sessions.require(r.session.id);
    expect([session.prompt_tokens, session.completion_tokens]).toEqual([100, 20]);
    const assistant = r.messages.find((m) => m.role === 'assistant');
    expect(assistant?.finished_at).not.toBeNull();
    expect(assistant?.usage).toMatchObject({ input_tokens: 100, output_tokens: 20 });
    const calls = await r.sql?.query<{ run_id: string; purpose: string }>(
      'SELECT run_id, purpose FROM model_calls WHERE run_id = $1',
      [r.runId],
    );
    expect(calls).toEqual([{ run_id: r.runId, purpose: 'agent_step' }]);
    // The run's row as the finish left it.
    const run = await r.app.runs.require(r.runId);
    expect(run).toMatchObject({ status: 'completed', steps: 1, result_message_id: assistant?.id });
  });

  it('STORE-PG-531: a cancel between the run’s body and its finish: the held step end is written alone by the stopper, its events before the stop’s state.changed; the run events, session events and messages as SQLite’s', async () => {
    const script = () => [reply().text('hello there').usage(100, 20)];
    const started = (app: App, sessionId: string) => {
      let once = true;
      betweenBodyAndFinish(app, async () => {
        if (!once) return;
        once = false;
        await app.agent.cancel(sessionId);
      });
    };
    const options = { tools: [], title: 'last step end', closers, started };
    const lite = await storeRun(undefined, script(), options);
    const r = await storeRun(pg.cluster(), script(), options);
    expect(shape(r)).toEqual(shape(lite));
    expect(sessionTypes(r).slice(-5)).toEqual([
      'message.completed',
      'context.usage',
      'state.changed',
      'run.finished',
      'state.changed',
    ]);
    expect(r.sessionEvents.at(-3)?.payload).toMatchObject({ state: 'cancelling' });
    // The step end alone (the stopper's), then the finish alone.
    const updates = r.sent.filter((text) => RUN_UPDATE.test(text));
    const ends = updates.filter(stepEnd);
    const finishes = updates.filter(finish);
    expect(ends).toHaveLength(1);
    expect(finishes).toHaveLength(1);
    expect(finishes[0]).not.toMatch(STEP_END_PART);
    expect(updates.indexOf(ends[0])).toBeLessThan(updates.indexOf(finishes[0]));
    // No session event twice, their ids consecutive; a replay answers that order.
    const ids = r.sessionEvents.map((e) => e.id);
    expect(ids).toEqual(ids.map((_, i) => ids[0] + i));
    const replayed = (await r.app.bus.replay(r.session.id, 0)).events;
    expect(replayed.map((e) => [e.id, e.type])).toEqual(r.sessionEvents.map((e) => [e.id, e.type]));
  });

  it('STORE-PG-534: that cancel while the bus’s write queue is busy (another session’s append held): the held step end’s events still come before the stop’s state.changed, the session log in SQLite’s order, the other session’s event once', async () => {
    const script = () => [reply().text('hello there').usage(100, 20)];
    let holding: ReturnType<typeof faultyClient> | undefined;
    const started = (app: App, sessionId: string) => {
      let once = true;
      betweenBodyAndFinish(app, async () => {
        if (!once) return;
        once = false;
        const h = holding;
        if (h) {
          // Another session's event: the queue's append of it waits, the queue busy.
          h.holdWhere(
            (text, values) =>
              /svc_append_events_across/.test(text) && JSON.stringify(values[0]).includes('ses_other'),
          );
          app.bus.publish('ses_other', 'queue.changed', { n: 1 });
          await until(() => h.held.length === 1, 'the other session`s append is under way');
        }
        const cancelled = app.agent.cancel(sessionId);
        if (h) {
          // The stopper's events wait behind the held append; then the queue goes on.
          await new Promise((resolve) => setTimeout(resolve, 50));
          h.open();
        }
        await cancelled;
      });
    };
    const options = { tools: [], title: 'last step end', closers, started };
    let lite: Run;
    let r: Run;
    try {
      lite = await storeRun(undefined, script(), options);
      r = await storeRun(pg.cluster(), script(), {
        ...options,
        client: (sql) => {
          holding = faultyClient(sql);
          return holding.client;
        },
      });
    } finally {
      holding?.open();
    }
    expect(holding?.held).toHaveLength(1);
    expect(shape(r)).toEqual(shape(lite));
    expect(sessionTypes(r).slice(-5)).toEqual([
      'message.completed',
      'context.usage',
      'state.changed',
      'run.finished',
      'state.changed',
    ]);
    // Ids ascending in that order (the other session's took one among them), each once; the log
    // itself and a replay the same.
    const ids = r.sessionEvents.map((e) => e.id);
    expect(ids).toEqual([...new Set(ids)].sort((x, y) => x - y));
    const sql = r.sql as SqlClient;
    const logged = async (sessionId: string) =>
      (
        await sql.query<{ type: string }>(
          'SELECT type FROM session_events WHERE session_id = $1 ORDER BY id',
          [sessionId],
        )
      ).map((row) => row.type);
    expect(await logged(r.session.id)).toEqual(r.sessionEvents.map((e) => e.type));
    expect(await logged('ses_other')).toEqual(['queue.changed']);
  });
});
