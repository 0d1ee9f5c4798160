/**
 * The agent's everyday read tools run ahead of their step's first statement on PostgreSQL (issue
 * 18 item 6, p-readsmore; the technique of p-readonly, test/store/pg-reads-only.test.ts). Pins:
 * - a step calling `grep`, `glob` and `ls` starts its first call before the statement carrying
 *   its `tool.started` answers; rows, run-event seqs and session events are SQLite's;
 * - `view` runs ahead too, its read mark (`file_reads`) is written only once that statement
 *   answered, and an edit in the next step sees it (read-before-edit);
 * - the statement failing drops `view`'s result and its read mark: the next step's edit is refused
 *   as never read;
 * - a grep of a protected path is refused without an ask, recorded after the statement; an
 *   approval asked through `opContext` waits for the statement.
 * A read-only step's starts are held for its step end instead (p-heldstep, one call,
 * ./pg-held-step.test.ts; p-heldmulti, several, ./pg-held-multi.test.ts): 460 and 463 pin the run
 * ahead with that off (`SVC_STEP_ONCE=0`).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { App } from '../../src/app';
import type { SqlClient } from '../../src/store/postgres/client';
import { defineTool } from '../../src/tools/core/define-tool';
import { opContext } from '../../src/tools/core/op-context';
import { approve } from '../../src/workspace/context';
import { reply } from '../helpers/fake-provider';
import { wrappedClient } from '../helpers/faulty-client';
import { heldStart, logRuns } from '../helpers/held-start';
import { storeRun, storeRunShape } from '../helpers/pg-recorded-app';
import { postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

/** `client` logging `mark sent` when a read mark (`file_reads` upsert) is sent. */
function logMarks(sql: SqlClient, log: string[]): SqlClient {
  const wrap = <A extends unknown[], R>(send: (text: string, ...rest: A) => Promise<R>) => {
    return (text: string, ...rest: A): Promise<R> => {
      if (/^INSERT INTO file_reads/.test(text)) log.push('mark sent');
      return send(text, ...rest);
    };
  };
  return wrappedClient(sql, wrap);
}

/** A workspace to search: src/a.ts holds the needle, src/b.md does not; hello.txt to view. */
function files(app: App) {
  const root = app.workspace;
  writeFileSync(join(root, 'hello.txt'), 'hi there\n');
  const src = join(root, 'src');
  mkdirSync(src, { recursive: true });
  writeFileSync(join(src, 'a.ts'), 'export const needle = 1;\n');
  writeFileSync(join(src, 'b.md'), '# notes\n');
}

/** A read-only test tool that asks for approval through `opContext`, as the file tools would. */
function approvingRead(log: string[]) {
  return defineTool({
    name: 'approving_read',
    family: 'test',
    tag: 'primitive',
    description: 'Asks through opContext, then answers.',
    input: z.strictObject({}),
    mutates: false,
    readsOnly: true,
    run: async (ctx) => {
      log.push('tool ran approving_read');
      await approve(opContext(ctx, 'approving_read'), { title: 'approving_read' });
      log.push('asked');
      return 'read';
    },
  });
}

describe.skipIf(!pg.available)('the read tools ahead of their step`s first statement (PostgreSQL)', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-460: a step calling grep, glob and ls runs grep before its start statement answers; rows, seqs and session events as on SQLite', async () => {
    // The run ahead: with the step's starts held for its step end (p-heldmulti) no start statement is sent.
    vi.stubEnv('SVC_STEP_ONCE', '0');
    const steps = () => [
      reply()
        .toolCall('grep', { pattern: 'needle', path: 'src' }, 'call_g')
        .toolCall('glob', { pattern: '*.ts', path: 'src' }, 'call_f')
        .toolCall('ls', { path: 'src' }, 'call_l')
        .usage(100, 20),
      reply().text('done').usage(140, 5),
    ];
    const lite = await storeRun(undefined, steps(), { tools: [], title: 'search', closers, started: files });
    const log: string[] = [];
    const r = await storeRun(pg.cluster(), steps(), {
      tools: [],
      title: 'search',
      closers,
      client: (sql) => heldStart(sql, log, { until: () => log.includes('tool ran grep') }),
      started: (app) => {
        for (const name of ['grep', 'glob', 'ls']) logRuns(app, name, log);
        files(app);
      },
    });
    expect(r.status).toBe('completed');
    expect(log.slice(0, 3)).toEqual(['start sent', 'tool ran grep', 'start answered']);
    expect(log.slice(3)).toEqual(['tool ran glob', 'tool ran ls']);
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    const results = storeRunShape(r).messages.find(([role]) => role === 'tool')?.[1];
    expect(results).toEqual([
      ['src/a.ts:\n  1: export const needle = 1;\n(1 match)', false],
      ['src/a.ts', false],
      ['src/\n  a.ts\n  b.md', false],
    ]);
    expect(r.runEvents.map((e) => e.seq)).toEqual(r.runEvents.map((_, i) => i + 1));
    expect(r.heard.map((e) => e.seq)).toEqual(r.runEvents.map((e) => e.seq));
    const heard = r.sessionEvents.filter((e) => e.type !== 'message.delta');
    expect(heard.map((e) => e.id)).toEqual([...heard.map((e) => e.id)].sort((x, y) => x - y));
  });

  it('STORE-PG-461: view runs ahead, its read mark is sent only once the start answered, and the next step`s edit sees it; as on SQLite', async () => {
    const steps = () => [
      reply().toolCall('view', { path: 'hello.txt' }, 'call_v').usage(100, 20),
      reply()
        .toolCall(
          'multiedit',
          { path: 'hello.txt', edits: [{ old_string: 'hi', new_string: 'ho' }] },
          'call_e',
        )
        .usage(120, 20),
      reply().text('done').usage(140, 5),
    ];
    const config = { permissions: { allowed_tools: ['multiedit'] } };
    const lite = await storeRun(undefined, steps(), {
      tools: [],
      title: 'view',
      closers,
      config,
      started: files,
    });
    const log: string[] = [];
    const r = await storeRun(pg.cluster(), steps(), {
      tools: [],
      title: 'view',
      closers,
      config,
      client: (sql) => logMarks(heldStart(sql, log, { until: () => log.includes('tool ran view') }), log),
      started: (app) => {
        logRuns(app, 'view', log);
        files(app);
      },
    });
    expect(r.status).toBe('completed');
    expect(log.slice(0, 4)).toEqual(['start sent', 'tool ran view', 'start answered', 'mark sent']);
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    const results = r.messages.filter((m) => m.role === 'tool').map((m) => JSON.stringify(m.parts));
    expect(results[1]).toContain('Edited hello.txt');
    expect(readFileSync(join(r.app.workspace, 'hello.txt'), 'utf8')).toBe('ho there\n');
  });

  it('STORE-PG-462: the start statement failing drops view`s result and its read mark: the next step`s edit is refused as never read', async () => {
    const log: string[] = [];
    const r = await storeRun(
      pg.cluster(),
      [
        reply().toolCall('view', { path: 'hello.txt' }, 'call_v').usage(100, 20),
        reply()
          .toolCall(
            'multiedit',
            { path: 'hello.txt', edits: [{ old_string: 'hi', new_string: 'ho' }] },
            'call_e',
          )
          .usage(120, 20),
        reply().text('done').usage(140, 5),
      ],
      {
        tools: [],
        title: 'view fails',
        closers,
        config: { permissions: { allowed_tools: ['multiedit'] } },
        client: (sql) =>
          logMarks(heldStart(sql, log, { until: () => log.includes('tool ran view'), fail: true }), log),
        started: (app) => {
          logRuns(app, 'view', log);
          files(app);
        },
      },
    );
    expect(log).toEqual(['start sent', 'tool ran view', 'start failed']);
    expect(r.status).toBe('completed');
    expect(await r.app.ws.reads.get(r.session.id, 'hello.txt')).toBeUndefined();
    const results = r.messages.filter((m) => m.role === 'tool').map((m) => JSON.stringify(m.parts));
    expect(results[0]).toContain('injected: start statement failed');
    expect(JSON.stringify(r.messages)).not.toContain('hi there');
    expect(results[1]).toContain('has not been read in this session');
    expect(readFileSync(join(r.app.workspace, 'hello.txt'), 'utf8')).toBe('hi there\n');
  });

  it('STORE-PG-463: a grep of a protected path runs ahead and is refused without an ask, recorded after the start; an approval through opContext waits for the start', async () => {
    vi.stubEnv('SVC_STEP_ONCE', '0');
    const steps = () => [
      reply().toolCall('grep', { pattern: 'x', path: 'secret' }, 'call_p').usage(100, 20),
      reply().text('done').usage(140, 5),
    ];
    const config = { options: { sandbox: { deny_read: ['secret'] } } };
    const lite = await storeRun(undefined, steps(), { tools: [], title: 'protected', closers, config });
    const log: string[] = [];
    const r = await storeRun(pg.cluster(), steps(), {
      tools: [],
      title: 'protected',
      closers,
      config,
      client: (sql) => heldStart(sql, log, { until: () => log.includes('tool ran grep') }),
      started: (app) => {
        logRuns(app, 'grep', log);
        vi.spyOn(app.permissions, 'ask').mockImplementation(async () => {
          log.push('asked');
          return 'operator';
        });
      },
    });
    expect(r.status).toBe('completed');
    expect(log).toEqual(['start sent', 'tool ran grep', 'start answered']);
    expect(storeRunShape(r)).toEqual(storeRunShape(lite));
    const results = r.messages.filter((m) => m.role === 'tool').map((m) => JSON.stringify(m.parts));
    expect(results[0]).toContain('forbidden: path: secret is in secret');
    const finished = r.runEvents.find((e) => e.type === 'tool.finished');
    expect(finished?.seq).toBeGreaterThan(r.runEvents.find((e) => e.type === 'tool.started')?.seq ?? 0);
    expect(finished?.payload).toMatchObject({ tool: 'grep', is_error: true, error_code: 'forbidden' });

    const asking: string[] = [];
    const q = await storeRun(
      pg.cluster(),
      [reply().toolCall('approving_read', {}, 'call_q').usage(100, 20), reply().text('done')],
      {
        tools: [approvingRead(asking)],
        title: 'approving',
        closers,
        config: { permissions: { allowed_tools: ['approving_read'] } },
        client: (sql) =>
          heldStart(sql, asking, { until: () => asking.includes('tool ran approving_read'), holdMs: 300 }),
      },
    );
    expect(q.status).toBe('completed');
    expect(asking).toEqual(['start sent', 'tool ran approving_read', 'start answered', 'asked']);
  });
});
