/**
 * A call that changes nothing runs while its step's first statement is in flight on PostgreSQL
 * (issue 18 item 6, p-readonly, src/agent/tool-bridge.ts `runsAhead`). Pins:
 * - a `readsOnly` tool's call starts before the statement carrying its `tool.started` answers; rows,
 *   run-event seqs and session events are those of the same script on SQLite; its read of its own
 *   session is answered from memory (the row as the statement stores it), no SELECT of its own;
 * - the statement failing drops the result: the run ends as it does when the tool never ran;
 * - a mutating tool, a mixed step, and a read-only tool's own permission ask wait for the statement;
 * - the pending row is seen by the call run ahead only, never by another reader.
 * A step whose only call reads only holds its start for its step end instead (p-heldstep,
 * ./pg-held-step.test.ts): 430, 431 and 434 pin the run ahead with that off (`SVC_STEP_ONCE=0`),
 * as a step with a `view` call or several calls still runs it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { App } from '../../src/app';
import { callTool } from '../../src/tools/core/call-tool';
import { defineTool } from '../../src/tools/core/define-tool';
import { allTools } from '../../src/tools/index';
import { touchTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { heldStart, logRuns, startStatement } from '../helpers/held-start';
import { askingRead } from '../helpers/held-step';
import type { TestClock } from '../helpers/make-test-app';
import { recordedApp, storeRun, storeRunShape } from '../helpers/pg-recorded-app';
import { driverStatements, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The audited tools (test/tools/reads-only.test.ts) and an input each, over a session and hello.txt. */
const AUDIT_INPUTS: Record<string, unknown> = {
  get_plan: {},
  get_workflow_phase: {},
  glob: { pattern: '*.txt' },
  grep: { pattern: 'hello' },
  ls: {},
  view: { path: 'hello.txt' },
};

/** A read-only test tool: the `updated_at` of its session as it reads it. */
const sessionSeen = defineTool({
  name: 'session_seen',
  family: 'test',
  tag: 'primitive',
  description: 'The updated_at of the calling session.',
  input: z.strictObject({}),
  mutates: false,
  readsOnly: true,
  run: async (ctx) => `updated_at ${(await ctx.app.sessions.require(ctx.sessionId ?? '')).updated_at}`,
});

describe.skipIf(!pg.available)('a read-only call ahead of its step`s first statement (PostgreSQL)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
    for (const close of closers.splice(0).reverse()) await close();
  });

  const phaseSteps = () => [
    reply().toolCall('get_workflow_phase', {}, 'call_a').usage(100, 20),
    reply().toolCall('get_workflow_phase', {}, 'call_b').usage(120, 20),
    reply().text('done').usage(140, 5),
  ];
  /** The session in the `execute` phase before the run, so the tool's answer reads its metadata. */
  const executing = async (app: App, id: string) => {
    await app.sessions.update(id, { metadata: { workflow_phase: 'execute' } });
  };

  it('STORE-PG-430: get_workflow_phase runs before its start statement answers; rows, seqs and session events as on SQLite; no session read of its own', async () => {
    vi.stubEnv('SVC_STEP_ONCE', '0');
    const lite = await storeRun(undefined, phaseSteps(), {
      tools: [],
      title: 'reads only',
      closers,
      started: executing,
    });
    const log: string[] = [];
    const r = await storeRun(pg.cluster(), phaseSteps(), {
      tools: [],
      title: 'reads only',
      closers,
      client: (sql) => heldStart(sql, log, { until: () => log.includes('tool ran get_workflow_phase') }),
      started: (app, id) => {
        logRuns(app, 'get_workflow_phase', log);
        return executing(app, id);
      },
    });
    expect(r.status).toBe('completed');
    expect(log.slice(0, 3)).toEqual(['start sent', 'tool ran get_workflow_phase', 'start answered']);
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    const results = r.messages.filter((m) => m.role === 'tool').flatMap((m) => m.parts);
    expect(JSON.stringify(results)).toContain('\\"phase\\":\\"execute\\"');
    // Run events in seq order, consecutive, heard in that order; session event ids ascending.
    expect(r.runEvents.map((e) => e.seq)).toEqual(r.runEvents.map((_, i) => i + 1));
    expect(r.heard.map((e) => e.seq)).toEqual(r.runEvents.map((e) => e.seq));
    const heard = r.sessionEvents.filter((e) => e.type !== 'message.delta');
    expect(heard.map((e) => e.id)).toEqual([...heard.map((e) => e.id)].sort((x, y) => x - y));
    // The first call's read of its session came from memory while its start was in flight.
    // No read of the session row once the run's steps began: the first call waited for its
    // statement's answer (the row not known before it), the second read the row it will store.
    const first = r.sent.findIndex(startStatement);
    const sessionReads = r.sent.slice(first).filter((text) => /^SELECT \* FROM sessions WHERE id/.test(text));
    expect(sessionReads).toEqual([]);
  });

  it('STORE-PG-431: the start statement failing drops the result of the call that ran ahead: nothing of it recorded, the run goes on as when the call never ran (its result the statement`s error)', async () => {
    vi.stubEnv('SVC_STEP_ONCE', '0');
    const log: string[] = [];
    const entries = () => [
      reply().toolCall('get_workflow_phase', {}, 'call_a').usage(100, 20),
      reply().text('after').usage(120, 5),
    ];
    const r = await storeRun(pg.cluster(), entries(), {
      tools: [],
      title: 'reads only fails',
      closers,
      client: (sql) =>
        heldStart(sql, log, { until: () => log.includes('tool ran get_workflow_phase'), fail: true }),
      started: (app, id) => {
        logRuns(app, 'get_workflow_phase', log);
        return executing(app, id);
      },
    });
    expect(log.slice(0, 3)).toEqual(['start sent', 'tool ran get_workflow_phase', 'start failed']);
    // As on the base, where the call never ran: the call's result is the statement's error, and
    // the run goes on to the model's next answer.
    expect(r.status).toBe('completed');
    expect(storeRunShape(r).messages).toEqual([
      ['user', ['text']],
      ['assistant', ['tool-call']],
      ['tool', [['injected: start statement failed', true]]],
      ['assistant', ['text']],
    ]);
    // The tool's answer is nowhere: not in a message, not in a run or session event.
    expect(JSON.stringify(r.messages)).not.toContain('execute');
    expect(JSON.stringify(r.runEvents)).not.toContain('execute');
    expect(JSON.stringify(r.sessionEvents)).not.toContain('execute');
    expect(r.runEvents.filter((e) => e.type === 'tool.finished')).toEqual([]);
  });

  it('STORE-PG-432: a mutating tool, and a mixed step (a read-only call, then a mutating one), start only after the start statement answered', async () => {
    for (const calls of [
      [{ tool: 'touch', input: { name: 'x' } }],
      [
        { tool: 'get_workflow_phase', input: {} },
        { tool: 'touch', input: { name: 'y' } },
      ],
    ]) {
      const log: string[] = [];
      const touched: string[] = [];
      const first = calls.reduce(
        (answer, call, i) => answer.toolCall(call.tool, call.input, `call_${i}`),
        reply(),
      );
      const r = await storeRun(pg.cluster(), [first.usage(100, 20), reply().text('done')], {
        tools: [touchTool(touched)],
        title: 'mutating',
        closers,
        config: { permissions: { allowed_tools: ['touch'] } },
        client: (sql) =>
          heldStart(sql, log, { until: () => log.some((line) => line.startsWith('tool ran')) }),
        started: (app) => {
          logRuns(app, 'touch', log);
          logRuns(app, 'get_workflow_phase', log);
        },
      });
      expect(r.status).toBe('completed');
      expect(log.slice(0, 3)).toEqual(['start sent', 'start answered', `tool ran ${calls[0]!.tool}`]);
    }
  });

  it('STORE-PG-433: a read-only tool`s own permission ask waits for the start statement', async () => {
    const log: string[] = [];
    const r = await storeRun(
      pg.cluster(),
      [reply().toolCall('asking_read', {}, 'call_q').usage(100, 20), reply().text('done')],
      {
        tools: [askingRead(log)],
        title: 'asking',
        closers,
        config: { permissions: { allowed_tools: ['asking_read'] } },
        client: (sql) =>
          heldStart(sql, log, { until: () => log.includes('tool ran asking_read'), holdMs: 300 }),
      },
    );
    expect(r.status).toBe('completed');
    expect(log.indexOf('start answered')).toBeGreaterThan(-1);
    expect(log.indexOf('asked')).toBeGreaterThan(log.indexOf('start answered'));
  });

  it('STORE-PG-434: the row a step`s start statement will store is seen by the call run ahead of it, not by another reader meanwhile', async () => {
    vi.stubEnv('SVC_STEP_ONCE', '0');
    const log: string[] = [];
    let app: App | undefined;
    let sessionId = '';
    let outside: number | undefined;
    const r = await storeRun(
      pg.cluster(),
      [
        () => reply().toolCall('session_seen', {}, 'call_1').usage(100, 20),
        // The clock moves between the first step's end and the second step's statement (1).
        () => {
          (app!.clock as TestClock).advance(1_000);
          return reply().toolCall('session_seen', {}, 'call_2').usage(100, 20);
        },
        () => reply().text('done'),
      ],
      {
        tools: [sessionSeen],
        title: 'pending row',
        closers,
        client: (sql) =>
          heldStart(sql, log, {
            nth: 2,
            unsent: true,
            until: () => log.filter((line) => line === 'tool ran session_seen').length === 2,
            // Another reader while the statement is held (not sent): the row as committed.
            during: async () => {
              outside = (await app!.sessions.require(sessionId)).updated_at;
            },
          }),
        started: (a, id) => {
          app = a;
          sessionId = id;
          logRuns(a, 'session_seen', log);
        },
      },
    );
    expect(r.status).toBe('completed');
    expect(log).toEqual(['tool ran session_seen', 'start sent', 'tool ran session_seen', 'start answered']);
    const [first, second] = r.messages.filter((m) => m.role === 'assistant');
    const results = r.messages.filter((m) => m.role === 'tool').map((m) => JSON.stringify(m.parts));
    // The second call saw the row as its step's statement stored it (its `updated_at`: the message's time) ...
    expect(second!.created_at).toBe(first!.created_at + 1_000);
    expect(results[1]).toContain(`updated_at ${second!.created_at}`);
    // ... the other reader the row as committed before it (the first step's end, a second earlier).
    expect(outside).toBe(first!.created_at);
  });

  it('STORE-PG-436: every built-in readsOnly tool, called as the agent calls it ahead of its start, sends only reads and publishes nothing; view`s read mark only once the start answered', async () => {
    const sent: string[] = [];
    const { app } = await recordedApp(pg.cluster(), sent, closers);
    const session = await app.sessions.create({ title: 'audit' });
    await app.sessions.update(session.id, { metadata: { workflow_phase: 'planning' } });
    writeFileSync(join(app.workspace, 'hello.txt'), 'hello audit\n');
    await app.bus.flush();
    // The setup's own background writes (the recommendation recorder's sweep after the session's
    // events) done before the first call: 200 ms without a statement, 15 s at most.
    for (let seen = -1, until = Date.now() + 15_000; seen !== sent.length && Date.now() < until; ) {
      seen = sent.length;
      await sleep(200);
    }
    const events: string[] = [];
    app.bus.subscribe('*', (event) => events.push(event.type));
    const flagged = allTools.filter((tool) => tool.readsOnly === true);
    expect(flagged.map((tool) => tool.name).sort()).toEqual(Object.keys(AUDIT_INPUTS).sort());
    for (const tool of flagged) {
      sent.length = 0;
      const driver = driverStatements();
      let release = () => {};
      const ahead = new Promise<void>((resolve) => {
        release = resolve;
      });
      let early: string[] = [];
      let outcome: Awaited<ReturnType<typeof callTool>>;
      try {
        const calling = callTool(app, tool.name, AUDIT_INPUTS[tool.name], {
          surface: 'agent',
          sessionId: session.id,
          ahead,
          ask: async () => {
            throw new Error(`${tool.name} asked`);
          },
          event: () => {
            throw new Error(`${tool.name} wrote a run event`);
          },
        });
        // What the call sent while its start is in flight (its own work done, or waiting for it).
        await Promise.race([calling, sleep(300)]);
        early = [...sent, ...driver.sent];
        release();
        outcome = await calling;
      } finally {
        driver.restore();
      }
      expect(outcome.ok, tool.name).toBe(true);
      for (const text of early) expect(text, tool.name).toMatch(/^SELECT /);
      // Every statement is in `driver.sent`; the App's own client's also in `sent`.
      const writes = driver.sent.filter((text) => !/^SELECT /.test(text));
      // view: its read mark (the session's read of hello.txt), written once the start answered.
      expect(
        writes.map((text) => /^INSERT INTO file_reads/.test(text)),
        tool.name,
      ).toEqual(tool.name === 'view' ? [true] : []);
    }
    await app.bus.flush();
    expect(events).toEqual([]);
    expect(await app.ws.reads.get(session.id, 'hello.txt')).toMatchObject({ path: 'hello.txt' });
  });
});
