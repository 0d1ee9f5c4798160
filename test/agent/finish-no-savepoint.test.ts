/**
 * A run's finish on SQLite joins the open batch with no SAVEPOINT and RELEASE (issue 17 item 3,
 * p-savepoint; `StoreTransactions.batchedWith`, src/store/db.ts `atomicallyWith`'s `undo`): the
 * finish's body (src/agent/run-finish.ts `finishRun`) cannot leave a partial write when it throws,
 * so the savepoint had nothing to undo. Pinned: the statements of a lone compat request (one pair
 * fewer, the finish's writes in the step batch with none around them); the stored rows when the
 * finish's write fails inside it (caught: the body ends without a throw, RELEASE kept what was
 * written) and when the body throws before its first write, each what they were with the savepoint
 * (both pass on the base, c933660b); and, at the store, what a batched body's throw leaves: the
 * rows and held rows as a savepoint's rollback left them when it wrote nothing, the memos dropped
 * as the ROLLBACK TO dropped them, and what it wrote kept (why each caller needs its argument).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LastEnds } from '../../src/agent/last-step-end';
import type { App } from '../../src/app';
import { createEventStore } from '../../src/events/event-store';
import { atomicallyWith, type Db, stepBatch, transactionMemo } from '../../src/store/db';
import { agentApp } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { countStatements, openTestDb } from '../helpers/sqlite-ledger';
import { until } from '../helpers/until';
import {
  compatServer,
  LONE_RUN_EVENTS,
  settledNewestRun,
  sseData,
  streamedBody,
} from '../http/compat-helpers';

const opened: Db[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const db of opened.splice(0)) db.close();
});

const TRANSACTION = /^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b/;
const FINISH = /^UPDATE agent_runs SET status = \?/;
const COMPAT_END = /^UPDATE openai_compat_requests SET status = \?/;

type TestApp = Awaited<ReturnType<typeof agentApp>>['app'];
const runRow = (app: App, id: string) =>
  app.db
    .prepare('SELECT status, steps, input_tokens, output_tokens, finished_at FROM agent_runs WHERE id = ?')
    .get(id) as {
    status: string;
    steps: number;
    input_tokens: number;
    output_tokens: number;
    finished_at: number | null;
  };
const runEventTypes = (app: App, id: string) =>
  (
    app.db.prepare('SELECT type FROM agent_run_events WHERE run_id = ? ORDER BY seq').all(id) as {
      type: string;
    }[]
  ).map((row) => row.type);
const sessionUsage = (app: App, id: string) =>
  app.db.prepare('SELECT prompt_tokens, completion_tokens FROM sessions WHERE id = ?').get(id);
/** A run whose finish this test breaks: its end logged, the batch it ran in committed. */
async function ended(app: TestApp, message: string) {
  await until(() => app.memoryLog.records.some((record) => record.message === message), message);
  await until(() => !app.db.inTransaction, 'the batch committed');
}

describe('a run finish with no savepoint inside the open batch (SQLite)', () => {
  it('COMPAT-PERF-496: a lone compat request runs one SAVEPOINT + RELEASE (two before): its finish writes in the step batch with none around them', async () => {
    const { app, post } = await compatServer([reply().text('one'), reply().text('two')]);
    expect((await sseData(await post('/v1/chat/completions', streamedBody('warm')))).at(-1)).toBe('[DONE]');
    await settledNewestRun(app);
    const counted = countStatements(app.db);
    const response = await post('/v1/chat/completions', streamedBody('count'));
    expect((await sseData(response)).at(-1)).toBe('[DONE]');
    const runId = await settledNewestRun(app);
    vi.restoreAllMocks();
    const texts = counted.texts;
    // By text: the step close's pair alone (c933660b: the finish's too, 2 and 2).
    expect(texts.filter((t) => t === 'SAVEPOINT svc_async')).toHaveLength(1);
    expect(texts.filter((t) => t === 'RELEASE svc_async')).toHaveLength(1);
    expect(texts.filter((t) => t.startsWith('ROLLBACK'))).toHaveLength(0);
    // From the step close's SAVEPOINT to the step batch's COMMIT: the finish's UPDATEs between its
    // RELEASE and the COMMIT, no transaction statement of their own.
    const from = texts.indexOf('SAVEPOINT svc_async');
    const to = texts.indexOf('COMMIT', from);
    const batch = texts.slice(from, to + 1);
    expect(batch.filter((t) => TRANSACTION.test(t))).toEqual([
      'SAVEPOINT svc_async',
      'RELEASE svc_async',
      'COMMIT',
    ]);
    const release = batch.indexOf('RELEASE svc_async');
    expect(batch.findIndex((t) => FINISH.test(t))).toBeGreaterThan(release);
    expect(batch.findIndex((t) => COMPAT_END.test(t))).toBeGreaterThan(release);
    // What the finish wrote is stored.
    expect(runRow(app, runId).status).toBe('completed');
    expect(runEventTypes(app, runId)).toEqual(LONE_RUN_EVENTS);
    expect(app.db.prepare('SELECT status FROM openai_compat_requests WHERE run_id = ?').get(runId)).toEqual({
      status: 'completed',
    });
  });

  it('COMPAT-PERF-497: a finish whose `run.finished` append fails after its row UPDATE keeps the UPDATE and the step end, as with the savepoint (its catch ends the body)', async () => {
    const { app } = await agentApp([reply().text('answer').usage(11, 7)]);
    const appendNow = app.runs.appendNow?.bind(app.runs);
    expect(appendNow).toBeDefined();
    const failed = vi.spyOn(app.runs, 'appendNow').mockImplementation((runId, type, payload, at) => {
      if (type === 'run.finished') throw new Error('injected: run.finished append');
      return appendNow?.(runId, type, payload, at) as never;
    });
    const session = await app.agent.createSession({ title: 'p497' });
    const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go', yolo: true });
    await ended(app, 'run finalize failed');
    expect(failed.mock.calls.some(([, type]) => type === 'run.finished')).toBe(true);
    // The finish's UPDATE stands (RELEASE kept it on the base; no rollback of it either way).
    expect(runRow(app, run_id)).toMatchObject({
      status: 'completed',
      steps: 1,
      input_tokens: 11,
      output_tokens: 7,
    });
    expect(runRow(app, run_id).finished_at).not.toBeNull();
    const types = runEventTypes(app, run_id);
    expect(types).not.toContain('run.finished');
    expect(types.at(-1)).toBe('step.finished');
    // The step end before it, in the same batch, counted once.
    expect(sessionUsage(app, session.id)).toEqual({ prompt_tokens: 11, completion_tokens: 7 });
  });

  it('COMPAT-PERF-498: a finish that throws before its first write (the held step end’s take) leaves the run running and the step end stored, as with the savepoint', async () => {
    const { app } = await agentApp([reply().text('answer').usage(5, 3)]);
    const take = vi.spyOn(LastEnds.prototype, 'take').mockRejectedValue(new Error('injected: take'));
    const session = await app.agent.createSession({ title: 'p498' });
    const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go', yolo: true });
    await ended(app, 'run end failed');
    expect(take).toHaveBeenCalled();
    expect(runRow(app, run_id)).toMatchObject({
      status: 'running',
      steps: 1,
      input_tokens: 5,
      output_tokens: 3,
    });
    expect(runRow(app, run_id).finished_at).toBeNull();
    const types = runEventTypes(app, run_id);
    expect(types).not.toContain('run.finished');
    expect(types.at(-1)).toBe('step.finished');
    expect(sessionUsage(app, session.id)).toEqual({ prompt_tokens: 5, completion_tokens: 3 });
  });

  it('COMPAT-PERF-499: a batched body in an open batch runs no savepoint; its throw before writing leaves rows, held rows and memos as a savepoint’s rollback did, and what it wrote is kept', async () => {
    const owner = {};
    /** One batch: a held event and a memo value, a body that throws (after `writes` events), one more event. */
    const scenario = async (undo: boolean, writes: number) => {
      const { db } = openTestDb(opened);
      const log = createEventStore(db);
      const counted = countStatements(db);
      stepBatch(() => db);
      log.now.insert('s1', 'before', '{}', 1);
      log.now.insert('s1', 'held', '{}', 2);
      transactionMemo<number>(db, owner)?.set('k', 1);
      await expect(
        atomicallyWith(
          () => db,
          async () => {
            for (let n = 0; n < writes; n++) log.now.insert('s1', 'body', '{}', 3 + n);
            throw new Error('body failed');
          },
          undefined,
          undo,
        ),
      ).rejects.toThrow('body failed');
      const memo = [...(transactionMemo<number>(db, owner) ?? new Map())];
      expect(db.inTransaction).toBe(true);
      log.now.insert('s1', 'after', '{}', 9);
      await new Promise((resolve) => setImmediate(resolve));
      expect(db.inTransaction).toBe(false);
      vi.restoreAllMocks();
      const rows = db.prepare('SELECT id, type, created_at FROM session_events ORDER BY id').all();
      return { rows, memo, transaction: counted.texts.filter((t) => TRANSACTION.test(t)) };
    };
    const savepoint = await scenario(true, 0);
    const batched = await scenario(false, 0);
    expect(savepoint.transaction).toEqual([
      'BEGIN IMMEDIATE',
      'SAVEPOINT svc_async',
      'ROLLBACK TO svc_async',
      'RELEASE svc_async',
      'COMMIT',
    ]);
    // c933660b: the same five (no `undo` argument there).
    expect(batched.transaction).toEqual(['BEGIN IMMEDIATE', 'COMMIT']);
    expect(batched.rows).toEqual(savepoint.rows);
    expect(batched.rows).toEqual([
      { id: 1, type: 'before', created_at: 1 },
      { id: 2, type: 'held', created_at: 2 },
      { id: 3, type: 'after', created_at: 9 },
    ]);
    // The ROLLBACK TO dropped the memos; the batched body's throw drops them too.
    expect(savepoint.memo).toEqual([]);
    expect(batched.memo).toEqual(savepoint.memo);
    // A body that wrote before throwing: the savepoint undid it, a batched one keeps it (its
    // caller must show it cannot happen).
    expect((await scenario(true, 2)).rows).toEqual(savepoint.rows);
    expect((await scenario(false, 2)).rows.map((row) => (row as { type: string }).type)).toEqual([
      'before',
      'held',
      'body',
      'body',
      'after',
    ]);
  });
});
