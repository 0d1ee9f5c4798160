/**
 * A tool step's end overlapping the next model request on PostgreSQL (issue 18 item 6, p-pgpipe,
 * src/agent/step-ahead.ts): the step-end statement is sent and the next step's model request goes
 * out before it answers; nothing of the next step is recorded before it, the rows, run-event
 * seqs and session events are those of SQLite; a failed step end aborts the request in flight and
 * fails the run; a cancel the step end learnt aborts it and the run ends cancelled.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { SqlClient } from '../../src/store/postgres/client';
import { defineTool } from '../../src/tools/core/define-tool';
import { echoTool } from '../helpers/agent-harness';
import { type RecordedRequest, reply, type ScriptEntry } from '../helpers/fake-provider';
import { wrappedClient } from '../helpers/faulty-client';
import { storeRun, storeRunShape } from '../helpers/pg-recorded-app';
import { postgresForFile } from '../helpers/postgres';

/** A step end's part of a statement: its message updates, or its session usage when it has no message to patch (p-pgnopatch). */
const STEP_END_PART = /UPDATE messages|prompt_tokens = prompt_tokens \+/;

const pg = postgresForFile();

/** The step end's statement (its messages, the run's row and `step.finished`; a held tool message). */
const stepEnd = (text: string) => /UPDATE agent_runs/.test(text) && STEP_END_PART.test(text);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A client whose step-end statements answer only once the next model request has arrived (the
 * log has `request k+1`; at most `holdMs`, which only a run that does not overlap the step end
 * waits out), logged in `log` when sent and answered; with `fail`, the first one rejects then, as
 * a failed statement would. Waiting for the request, not a fixed delay, keeps the order certain on
 * a loaded machine; `requests` (the script's length) spares the last step end the wait.
 */
function slowStepEnds(
  sql: SqlClient,
  log: string[],
  options: { requests: number; fail?: boolean; holdMs?: number; arrived?: (k: number) => boolean },
): SqlClient {
  const holdMs = options.holdMs ?? 5_000;
  const arrived = options.arrived ?? ((k: number) => log.includes(`request ${k}`));
  const held = async (k: number) => {
    if (k + 1 > options.requests) return;
    const until = Date.now() + holdMs;
    while (!arrived(k + 1) && Date.now() < until) await sleep(10);
  };
  let n = 0;
  let failed = false;
  const wrap = <A extends unknown[], R>(send: (text: string, ...rest: A) => Promise<R>) => {
    return (text: string, ...rest: A): Promise<R> => {
      if (!stepEnd(text)) return send(text, ...rest);
      const k = ++n;
      log.push(`end ${k} sent`);
      if (options.fail && !failed) {
        failed = true;
        return held(k).then(() => {
          log.push(`end ${k} failed`);
          throw new Error('injected: step end failed');
        });
      }
      return send(text, ...rest).then(async (answer) => {
        await held(k);
        log.push(`end ${k} answered`);
        return answer;
      });
    };
  };
  return wrappedClient(sql, wrap);
}

/** The script's entries, each logging its request's arrival in `log`. */
const arriving = (log: string[], entries: (() => ReturnType<typeof reply>)[]): ScriptEntry[] =>
  entries.map((make, i) => (_request: RecordedRequest) => {
    log.push(`request ${i + 1}`);
    return make();
  });

describe.skipIf(!pg.available)('a tool step`s end overlapping the next model request (PostgreSQL)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-400: the next model request arrives before the step-end statement answers; rows, run-event seqs and session events as on SQLite', async () => {
    const entries = [
      () => reply().toolCall('echo', { text: 'a' }, 'call_a').usage(100, 20),
      () => reply().toolCall('echo', { text: 'b' }, 'call_b').usage(120, 20),
      () => reply().text('done').usage(140, 5),
    ];
    const liteLog: string[] = [];
    const lite = await storeRun(undefined, arriving(liteLog, entries), {
      tools: [echoTool],
      title: 'ahead',
      closers,
    });
    const log: string[] = [];
    const r = await storeRun(pg.cluster(), arriving(log, entries), {
      tools: [echoTool],
      title: 'ahead',
      closers,
      client: (sql) => slowStepEnds(sql, log, { requests: entries.length }),
    });
    expect(r.status).toBe('completed');
    // Each tool step's end is in flight when the next request arrives; the last step's end
    // (no call: the run finishes) is waited for as before.
    expect(log).toEqual([
      'request 1',
      'end 1 sent',
      'request 2',
      'end 1 answered',
      'end 2 sent',
      'request 3',
      'end 2 answered',
      'end 3 sent',
      'end 3 answered',
    ]);
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    // Run events in seq order, consecutive; each step's `phase` after the step before's `step.finished`.
    expect(r.runEvents.map((e) => e.seq)).toEqual(r.runEvents.map((_, i) => i + 1));
    expect(r.heard.map((e) => e.seq)).toEqual(r.runEvents.map((e) => e.seq));
    const steps = r.runEvents
      .filter((e) => e.type === 'step.finished' || (e.type === 'phase' && e.payload.phase === 'model'))
      .map((e) => `${e.type}:${e.payload.step}`);
    expect(steps).toEqual([
      'phase:1',
      'step.finished:1',
      'phase:2',
      'step.finished:2',
      'phase:3',
      'step.finished:3',
    ]);
    // The stored session log (by id) is what the listeners heard, in that order, ids ascending.
    const stored = await r.sql!.query<{ id: number; type: string }>(
      'SELECT id, type FROM session_events WHERE session_id = $1 ORDER BY id',
      [r.session.id],
    );
    const heard = r.sessionEvents.filter((e) => e.type !== 'message.delta');
    expect(heard.map((e) => e.id)).toEqual([...heard.map((e) => e.id)].sort((x, y) => x - y));
    // (A delta is stored or not as the bus's batching has it: streaming, not the writes' order.)
    const kept = stored.filter((e) => e.type !== 'message.delta');
    expect(kept.map((e) => [Number(e.id), e.type])).toEqual(heard.map((e) => [e.id, e.type]));
    // The steady step's statements: no read of the session row for the next step's tools.
    const sessionReads = r.sent.filter((text) => /^SELECT \* FROM sessions WHERE id/.test(text));
    expect(sessionReads.length).toBeLessThanOrEqual(1);
  });

  it('STORE-PG-401: a failed step-end statement aborts the model request in flight and fails the run as before: nothing of the next step recorded', async () => {
    const log: string[] = [];
    const entries = [
      () => reply().toolCall('echo', { text: 'a' }, 'call_a').usage(100, 20),
      // Never answers unless aborted: the run ends only if the request is aborted.
      () => reply().text('never recorded').hang(30_000),
    ];
    const started = Date.now();
    const r = await storeRun(pg.cluster(), arriving(log, entries), {
      tools: [echoTool],
      title: 'ahead fails',
      closers,
      client: (sql) => slowStepEnds(sql, log, { requests: entries.length, fail: true }),
    });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(r.status).toBe('failed');
    // The request went out while the step end was in flight, and was aborted when it failed.
    expect(log.slice(0, 4)).toEqual(['request 1', 'end 1 sent', 'request 2', 'end 1 failed']);
    expect(r.provider.requests).toHaveLength(2);
    // One step: its `phase` and `step.finished` (the cut step's end), no second `phase`.
    const types = r.runEvents.map((e) => e.type);
    expect(types.filter((t) => t === 'step.finished')).toHaveLength(1);
    expect(r.runEvents.filter((e) => e.type === 'phase' && e.payload.phase === 'model')).toHaveLength(1);
    expect(r.runEvents.map((e) => e.seq)).toEqual(r.runEvents.map((_, i) => i + 1));
    // The result once (put back, written by the cut step), no text of the next step.
    expect(r.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(JSON.stringify(r.messages)).not.toContain('never recorded');
    expect(r.runEvents.filter((e) => e.type === 'tool.finished')).toHaveLength(1);
  });

  it('STORE-PG-402: a cancel the step end learnt (the flag set by another node during the tool) aborts the request in flight: the run ends cancelled, nothing of the next step recorded', async () => {
    let db: SqlClient | undefined;
    let runId = '';
    const cancelling = defineTool({
      name: 'cancel_elsewhere',
      family: 'test',
      tag: 'primitive',
      description: 'Sets the run`s cancel flag as another node would.',
      input: z.strictObject({}),
      mutates: false,
      run: async () => {
        await db?.run('UPDATE agent_runs SET cancel_requested = 1 WHERE id = $1', [runId]);
        return 'flag set';
      },
    });
    const log: string[] = [];
    const entries = [
      () => reply().toolCall('cancel_elsewhere', {}, 'call_c').usage(100, 20),
      () => reply().text('never recorded').hang(30_000),
    ];
    const r = await storeRun(pg.cluster(), arriving(log, entries), {
      tools: [cancelling],
      title: 'ahead cancelled',
      closers,
      client: (sql) => {
        db = sql;
        return slowStepEnds(sql, log, { requests: entries.length });
      },
      started: (app) => {
        app.runs.onAppend((event) => {
          runId ||= event.run_id;
        });
      },
    });
    expect(r.status).toBe('cancelled');
    expect(log.slice(0, 4)).toEqual(['request 1', 'end 1 sent', 'request 2', 'end 1 answered']);
    expect(r.runEvents.filter((e) => e.type === 'phase' && e.payload.phase === 'model')).toHaveLength(1);
    expect(r.runEvents.filter((e) => e.type === 'step.finished')).toHaveLength(1);
    expect(r.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(JSON.stringify(r.messages)).not.toContain('never recorded');
  });
  it('STORE-PG-403: a mode change by another node during the tool: the request sent with the kept mode`s tools is aborted once the step end answers the new mode, and asked again with its tools', async () => {
    let db: SqlClient | undefined;
    let sessionId = '';
    const planning = defineTool({
      name: 'plan_elsewhere',
      family: 'test',
      tag: 'primitive',
      description: 'Sets the session`s mode to plan as another node would.',
      input: z.strictObject({}),
      mutates: false,
      run: async () => {
        await db?.run("UPDATE sessions SET mode = 'plan' WHERE id = $1", [sessionId]);
        return 'mode set';
      },
    });
    const log: string[] = [];
    const names = (request: RecordedRequest) =>
      ((request.body.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name);
    const next = (request: RecordedRequest) => {
      log.push(`request ${names(request).includes('write') ? 'with write' : 'without write'}`);
      return names(request).includes('write') ? reply().text('stale').hang(30_000) : reply().text('done');
    };
    const r = await storeRun(
      pg.cluster(),
      [
        (request: RecordedRequest) => {
          next(request);
          return reply().toolCall('plan_elsewhere', {}, 'call_p');
        },
        next,
        next,
      ],
      {
        tools: [planning],
        title: 'ahead mode',
        closers,
        config: { options: { tool_exposure: 'all' } },
        client: (sql) => {
          db = sql;
          // Its log names a request by its tools: end k waits for the (k+1)th request.
          return slowStepEnds(sql, log, {
            requests: 3,
            arrived: (k) => log.filter((line) => line.startsWith('request')).length >= k,
          });
        },
        started: (_app, id) => {
          sessionId = id;
        },
      },
    );
    expect(r.status).toBe('completed');
    expect(log).toEqual([
      'request with write',
      'end 1 sent',
      'request with write',
      'end 1 answered',
      'request without write',
      'end 2 sent',
      'end 2 answered',
    ]);
    expect(r.provider.requests).toHaveLength(3);
    expect(JSON.stringify(r.messages)).not.toContain('stale');
    expect(r.runEvents.filter((e) => e.type === 'step.finished')).toHaveLength(2);
    expect(r.runEvents.map((e) => e.seq)).toEqual(r.runEvents.map((_, i) => i + 1));
  });
});
