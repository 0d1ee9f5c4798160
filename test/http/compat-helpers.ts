/**
 * A real svc HTTP server on 127.0.0.1:0 with the scripted fake provider behind it, for the compat
 * surface and session API tests: `const { server, app, provider, client } = await compatServer([reply().text('hi')])`.
 * @module
 */
import OpenAI from 'openai';
import { expect } from 'vitest';
import type { App } from '../../src/app';
import type { SqlClient } from '../../src/store/postgres/client';
import { tableChanges } from '../../src/store/postgres/table-changes';
import {
  type HttpServerHandle,
  type StartHttpServerOptions,
  startHttpServer,
} from '../../src/surfaces/http/server';
import type { AnyTool } from '../../src/tools/core/define-tool';
import { allTools } from '../../src/tools/index';
import { type FakeProvider, fakeProvider, reply, type ScriptEntry } from '../helpers/fake-provider';
import { makeTestApp, type TestAppOptions } from '../helpers/make-test-app';
import { loggedEvents, TIMER_STATEMENTS } from '../helpers/postgres';
import { until } from '../helpers/until';

export const TOKEN = 'compat-test-token-7';

/**
 * A statement of the node's background work, not of the request under test: its heartbeat, the
 * janitor's read of the running runs after it (every heartbeat: src/runs/pg-run-recovery.ts), the
 * readout recorder's reads and expiry sweep, the findings sweep (queued by an earlier request, it
 * may reach the database inside a later request's window on a loaded box), and the timers'
 * (`TIMER_STATEMENTS`: a run's cancel poll, the store monitor's probe, a lease's renewal).
 */
export const BACKGROUND_STATEMENT = new RegExp(
  `\\b(cluster_nodes|recommendations|findings)\\b|^SELECT \\* FROM agent_runs WHERE status = 'running' ORDER BY row_seq$|${TIMER_STATEMENTS.source}`,
);

export interface CompatServer {
  app: App;
  server: HttpServerHandle;
  provider: FakeProvider;
  client: OpenAI;
  url: string;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Response>;
  get(path: string, headers?: Record<string, string>): Promise<Response>;
}

export async function compatServer(
  script: ScriptEntry[],
  options: TestAppOptions & {
    compat?: Record<string, unknown> | false;
    extraConfig?: Record<string, unknown>;
    extraTools?: AnyTool[];
    allowExtra?: boolean;
    /** More of startHttpServer's `http` options (an `extend` family). */
    http?: StartHttpServerOptions['http'];
  } = {},
): Promise<CompatServer> {
  const provider = await fakeProvider(script, { allowExtra: options.allowExtra });
  const { compat = {}, extraConfig = {}, extraTools = [], http, ...rest } = options;
  const app = await makeTestApp({
    ...rest,
    tools: [...allTools, ...extraTools],
    config: {
      providers: { fake: { type: 'openai-compat', base_url: provider.url } },
      models: { large: 'fake/m1' },
      ...(compat === false ? {} : { options: { openai_compat: compat } }),
      ...extraConfig,
    },
  });
  const server = await startHttpServer({
    config: app.config,
    flags: { port: 0, token: TOKEN },
    createApp: async () => app,
    http: { sseHeartbeatMs: 0, ...http },
    graceMs: 2000,
  });
  // On PostgreSQL the App's LISTEN in place first: until it is nothing read is kept, so on a loaded
  // box the first requests read again what later ones answer from memory, and its connection's
  // `error` listener fell inside measured requests (STORE-PG-390, 874 in CI).
  if (options.postgres)
    await until(() => tableChanges(options.postgres as SqlClient).isListening(), 'the App`s LISTEN in place');
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TOKEN, maxRetries: 0, timeout: 15_000 });
  const auth = { authorization: `Bearer ${TOKEN}` };
  const { onTestFinished } = await import('vitest');
  onTestFinished(() => server.close());
  return {
    app,
    server,
    provider,
    client,
    url: server.url,
    post: (path, body, headers = {}) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    get: (path, headers = {}) => fetch(`${server.url}${path}`, { headers: { ...auth, ...headers } }),
  };
}

/** The `data:` payloads of an SSE body, in order. */
export async function sseData(response: Response): Promise<string[]> {
  const text = await response.text();
  return text
    .split(/\n\n/)
    .map((block) =>
      block
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n'),
    )
    .filter((data) => data !== '');
}

/** One streamed chat completion through the real `openai` client: the answer's text. */
export async function streamedAnswer(client: OpenAI, content = 'hello'): Promise<string> {
  const stream = await client.chat.completions.create({
    model: 'fake/m1',
    messages: [{ role: 'user', content }],
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  return text;
}

/**
 * The newest compat request row once it has left `running` (its finish may be written after the
 * answer's last chunk), or still running after 100 looks 20 ms apart.
 */
export async function settledCompatRow(app: App) {
  let [row] = (await app.compatRequests.list({ limit: 1 })).rows;
  for (let i = 0; i < 500 && row.status === 'running'; i++) {
    await new Promise((r) => setTimeout(r, 20));
    [row] = (await app.compatRequests.list({ limit: 1 })).rows;
  }
  return row;
}

/** A streamed compat request's body for `fake/m1` with one user message. */
export const streamedBody = (content: string) => ({
  model: 'fake/m1',
  messages: [{ role: 'user', content }],
  stream: true,
});

/**
 * The newest run once it ended and the SQLite handle's transaction (its held rows' COMMIT) is done,
 * 20 turns at most; its id.
 */
export async function settledNewestRun(app: App): Promise<string> {
  const [run] = await app.runs.list({ limit: 1 });
  await app.agent.wait(run.id);
  for (let turn = 0; turn < 20 && app.db.inTransaction; turn++)
    await new Promise((resolve) => setImmediate(resolve));
  return run.id;
}

/** A lone compat request's run ledger events in their order (seq 1 onwards) on SQLite. */
export const LONE_RUN_EVENTS = [
  'run.queued',
  'run.started',
  'phase',
  'model.resolved',
  'openai_compat.request',
  'prompt.assembled',
  'phase',
  'step.finished',
  'run.finished',
  'openai_compat.response',
];

/**
 * PostgreSQL's order of `LONE_RUN_EVENTS`: the request's event goes in the start's statement
 * (p-pgcompat), before the run's preparation writes `model.resolved`.
 */
export const PG_LONE_RUN_EVENT_TYPES = [
  'run.queued',
  'run.started',
  'phase',
  'openai_compat.request',
  'model.resolved',
  'prompt.assembled',
  'phase',
  'step.finished',
  'run.finished',
  'openai_compat.response',
];

/** `PG_LONE_RUN_EVENT_TYPES` as `[seq, type]`. */
export const PG_LONE_RUN_EVENTS = PG_LONE_RUN_EVENT_TYPES.map((type, i) => [i + 1, type]);

/** A lone streamed request's session log with a one-delta answer, the same on SQLite and on PostgreSQL. */
export const LONE_REQUEST_LOG = [
  'session.created',
  'queue.changed',
  'state.changed',
  'queue.changed',
  'run.started',
  'message.created',
  'message.completed',
  'message.created',
  'message.delta',
  'message.completed',
  'context.usage',
  'run.finished',
  'state.changed',
];

/**
 * A run's events without what differs per run (the request's, run's, session's and prompt build's
 * ids in their payloads), with their event id, seq and type: what two backends' runs compare on.
 */
export async function comparableRunEvents(app: App, runId: string) {
  return (await app.runs.events(runId)).map((e) => {
    const {
      request_id: _r,
      run_id: _u,
      session_id: _s,
      build_id: _b,
      ...payload
    } = e.payload as Record<string, unknown>;
    return { id: e.id, seq: e.seq, type: e.type, payload };
  });
}

/** The events with what differs per App (ids, times) masked. */
export function maskedEvents(events: { type: string; payload: unknown }[]): string[] {
  return events.map(
    (e) =>
      `${e.type} ${JSON.stringify(e.payload)
        .replace(/"(ses|run|msg|call|req|chatcmpl)[-_][^"]*"/g, '"<id>"')
        .replace(/"(\w*_at|at|created)":\d+/g, '"$1":0')}`,
  );
}

/** The text of an SSE body's chunks so far. */
export function sseText(body: string): string {
  let text = '';
  for (const line of body.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const chunk = JSON.parse(line.slice(6)) as { choices?: { delta?: { content?: string } }[] };
    text += chunk.choices?.[0]?.delta?.content ?? '';
  }
  return text;
}

/**
 * A PostgreSQL session's stored log, checked against SQLite's: its replay has the SQLite session's
 * replay's events (payloads masked: `maskedEvents`) and the stored ids, in order. Answers the log.
 */
export async function loggedAsOnSqlite(
  sql: SqlClient,
  postgres: { app: App; sessionId: string },
  sqlite: { app: App; sessionId: string },
) {
  const log = await loggedEvents(sql, postgres.sessionId);
  const pgReplay = (await postgres.app.bus.replay(postgres.sessionId, 0)).events;
  const sqliteReplay = (await sqlite.app.bus.replay(sqlite.sessionId, 0)).events;
  // Failing, it says what the log holds and what the node logged (a ring short of the log, or a log short).
  const records = (postgres.app as { memoryLog?: { records: { level: string; message: string }[] } })
    .memoryLog;
  const said = (records?.records ?? []).filter((r) => r.level !== 'debug').map((r) => r.message);
  expect(
    maskedEvents(pgReplay),
    `stored: ${log.map((e) => `${e.id} ${e.type}`).join(', ')}; logged: ${said.join(' | ')}`,
  ).toEqual(maskedEvents(sqliteReplay));
  expect(pgReplay.map((e) => e.id)).toEqual(log.map((e) => Number(e.id)));
  return log;
}

/**
 * On PostgreSQL, a compat request's ledger row ended in its run's finish statement (its
 * `alongside`), no statement of its own for it among `sent` (the driver's texts); the row ended with
 * `row`'s fields; one `openai_compat.request` and one `openai_compat.response`, the last after the
 * run's finish (STORE-PG-800, 801, 840, 841).
 */
export async function expectRowEndInFinish(app: App, sent: string[], row: Record<string, unknown>) {
  const finishes = /UPDATE agent_runs SET status = /;
  const finish = sent.filter((text) => finishes.test(text));
  expect(finish).toHaveLength(1);
  expect(finish[0]).toMatch(/alongside AS \(UPDATE openai_compat_requests/);
  expect(
    sent.filter((text) => /UPDATE openai_compat_requests SET status = /.test(text) && !finishes.test(text)),
  ).toEqual([]);
  const stored = await settledCompatRow(app);
  expect(stored).toMatchObject(row);
  const events = await app.runs.events(stored.run_id);
  expect(events.filter((e) => e.type === 'openai_compat.request')).toHaveLength(1);
  expect(events.filter((e) => e.type === 'openai_compat.response')).toHaveLength(1);
  expect(events.map((e) => e.type).slice(-3)).toEqual([
    'step.finished',
    'run.finished',
    'openai_compat.response',
  ]);
}

/**
 * A compat server on PostgreSQL (`sql`) whose first JSON request ('warm') is answered and settled,
 * the model then answering `texts` in turn; `ask` sends the next JSON request.
 */
export async function warmedJsonCompat(sql: SqlClient, texts: readonly string[]) {
  const server = await compatServer(
    [reply().text('warm'), ...texts.map((text) => reply().text(text).usage(5, 1))],
    { postgres: sql },
  );
  const ask = () =>
    server.client.chat.completions.create({ model: 'fake/m1', messages: [{ role: 'user', content: 'hi' }] });
  await ask();
  await settledCompatRow(server.app);
  await server.app.bus.flush();
  return { ...server, ask };
}
