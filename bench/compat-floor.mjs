// The floor of a compat request on this box (issue 17 item 3): what a streaming
// `POST /v1/chat/completions` must cost in plain Node, to hold svc's figures against.
//
// Spawned as `node compat-floor.mjs service start http --port 0` in a bench workspace (what
// ./service-process.mjs runs for svc; compat.bench's BENCH_COMPAT_TARGET=floor does it), it is a
// minimal gateway: node:http on 127.0.0.1, the bearer token and provider URL read from the
// workspace's svc.toml; a request's JSON body parsed; one streaming request to the fake provider
// (a keep-alive agent, a body of svc's model request's size: a system text of 14.9 kB and the
// user's messages); its SSE parsed; OpenAI-shaped SSE chunks written back in svc's three socket
// writes (head with the role chunk; each provider read's text; the finish, usage chunk and
// `[DONE]` with the end); and, before the finish, one better-sqlite3 transaction in WAL mode with
// svc's pragmas keeping what a request must keep: a session row, a run row, the two messages, the
// ledger row, 14 session events and 10 run events, under svc's DDL and indexes for those tables
// (copied here, not imported). FLOOR_COMMITS=2 writes them as svc does, in two commits: the
// start's rows (session, running run, prompt, ledger row, 7 + 6 events) once the model request is
// on its way, the rest and the run's, ledger's and session's updates at the answer's end.
// FLOOR_SQLITE=0 leaves the SQLite part out.
//
// Run with no arguments it is the side-by-side bench: compat.bench's load generator and CPU
// accounting against svc (BENCH_SVC_BIN or this checkout's build), the floor, the floor with two
// commits and the floor without SQLite, one after another in one process:
// `node bench/compat-floor.mjs` (BENCH_COMPAT_ROUNDS, BENCH_COMPAT_WARM_ROUNDS,
// BENCH_COMPAT_CONCURRENCY as for compat.bench; BENCH_FLOOR_TARGETS picks, e.g. `svc,floor`).
// Not part of `npm run bench`.
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const DDL = `
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY,
  parent_id TEXT REFERENCES sessions(id) ON DELETE CASCADE,
  title TEXT NOT NULL DEFAULT '',
  mode TEXT NOT NULL DEFAULT 'build',
  agent TEXT NOT NULL DEFAULT 'build',
  model TEXT,
  reasoning_effort TEXT,
  workspace TEXT NOT NULL DEFAULT '',
  prompt_tokens INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost REAL NOT NULL DEFAULT 0,
  metadata TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_parent ON sessions(parent_id);
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions(updated_at);
CREATE TABLE IF NOT EXISTS agent_runs (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  parent_run_id TEXT,
  family_session_id TEXT NOT NULL,
  status TEXT NOT NULL
    CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled', 'interrupted')),
  agent TEXT NOT NULL,
  model TEXT,
  origin TEXT NOT NULL,
  prompt TEXT NOT NULL DEFAULT '',
  options TEXT NOT NULL DEFAULT '{}',
  reason TEXT,
  error TEXT,
  steps INTEGER NOT NULL DEFAULT 0,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  reasoning_tokens INTEGER NOT NULL DEFAULT 0,
  cached_input_tokens INTEGER NOT NULL DEFAULT 0,
  cost REAL NOT NULL DEFAULT 0,
  result_message_id TEXT,
  pid INTEGER,
  host TEXT,
  runner TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER,
  updated_at INTEGER NOT NULL,
  failure TEXT
);
CREATE INDEX IF NOT EXISTS agent_runs_session ON agent_runs(session_id, created_at);
CREATE INDEX IF NOT EXISTS agent_runs_family ON agent_runs(family_session_id, created_at);
CREATE INDEX IF NOT EXISTS agent_runs_status ON agent_runs(status);
CREATE INDEX IF NOT EXISTS agent_runs_parent ON agent_runs(parent_run_id);
CREATE TABLE IF NOT EXISTS messages (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
  parts TEXT NOT NULL DEFAULT '[]',
  model TEXT,
  provider TEXT,
  usage TEXT,
  cost REAL NOT NULL DEFAULT 0,
  run_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE INDEX IF NOT EXISTS messages_session ON messages(session_id, created_at);
CREATE TABLE IF NOT EXISTS message_search_pending (id INTEGER PRIMARY KEY, message_id TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS message_search_log_ai AFTER INSERT ON messages BEGIN
  INSERT INTO message_search_pending (message_id) VALUES (NEW.id);
END;
CREATE TABLE IF NOT EXISTS openai_compat_requests (
  request_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES agent_runs(id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  requested_model TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL,
  model_source TEXT NOT NULL,
  stream INTEGER NOT NULL DEFAULT 0,
  include_usage INTEGER NOT NULL DEFAULT 0,
  session_binding TEXT NOT NULL,
  message_count INTEGER NOT NULL DEFAULT 0,
  ignored_fields TEXT NOT NULL DEFAULT '[]',
  status TEXT NOT NULL,
  finish_reason TEXT,
  http_status INTEGER,
  error TEXT,
  prompt_tokens INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE INDEX IF NOT EXISTS openai_compat_requests_created ON openai_compat_requests(created_at);
CREATE TABLE IF NOT EXISTS session_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  type TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS session_events_session ON session_events(session_id, id);
CREATE INDEX IF NOT EXISTS session_events_type ON session_events(type, id);
CREATE TABLE IF NOT EXISTS agent_run_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL REFERENCES agent_runs(id) ON DELETE CASCADE,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  payload TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS agent_run_events_run ON agent_run_events(run_id, seq);
CREATE INDEX IF NOT EXISTS agent_run_events_type ON agent_run_events(type, id);
`;

/** svc's pragmas (src/store/db.ts `openDb`). */
function openStore(file) {
  const Database = createRequire(import.meta.url)('better-sqlite3');
  const db = new Database(file);
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  db.pragma('synchronous = NORMAL');
  db.pragma('temp_store = MEMORY');
  db.pragma('cache_size = -4000');
  db.exec(DDL);
  const sessionEvent = db.prepare(
    'INSERT INTO session_events (session_id, type, payload, created_at) VALUES (?, ?, ?, ?)',
  );
  const runEvent = db.prepare(
    'INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const session = db.prepare(
    'INSERT INTO sessions (id, title, workspace, metadata, prompt_tokens, completion_tokens, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const run = db.prepare(
    `INSERT INTO agent_runs (id, session_id, family_session_id, status, agent, model, origin, prompt, steps,
       input_tokens, output_tokens, result_message_id, pid, host, runner, created_at, started_at, finished_at, updated_at)
     VALUES (?, ?, ?, ?, 'build', ?, 'openai_compat', ?, ?, ?, ?, ?, ?, 'floor', 'floor', ?, ?, ?, ?)`,
  );
  const message = db.prepare(
    `INSERT INTO messages (id, session_id, role, parts, model, provider, usage, run_id, created_at, updated_at, finished_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const ledger = db.prepare(
    `INSERT INTO openai_compat_requests (request_id, run_id, session_id, requested_model, model, model_source,
       stream, include_usage, session_binding, message_count, status, finish_reason, http_status,
       prompt_tokens, completion_tokens, created_at, finished_at)
     VALUES (?, ?, ?, ?, ?, 'requested', 1, ?, 'new', ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const runEnd = db.prepare(
    `UPDATE agent_runs SET status = 'completed', steps = 1, input_tokens = ?, output_tokens = ?,
       result_message_id = ?, finished_at = ?, updated_at = ? WHERE id = ?`,
  );
  const ledgerEnd = db.prepare(
    `UPDATE openai_compat_requests SET status = 'completed', finish_reason = ?, http_status = 200,
       prompt_tokens = ?, completion_tokens = ?, finished_at = ? WHERE request_id = ?`,
  );
  const sessionEnd = db.prepare(
    `UPDATE sessions SET prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?,
       updated_at = ? WHERE id = ?`,
  );
  const usageOf = (r) => ({ input_tokens: r.usage.prompt_tokens, output_tokens: r.usage.completion_tokens });
  /** The session events of a request's start, then of its end (svc's 14). */
  const startEvents = (r) => {
    const s = r.sessionId;
    const u = { session_id: s, run_id: r.runId };
    const user = { ...u, message_id: r.userId };
    return [
      ['session.created', { session_id: s, parent_id: null, title: r.prompt }],
      ['queue.changed', { session_id: s, length: 1, items: [{ id: r.runId, preview: r.prompt }] }],
      ['state.changed', { ...u, state: 'running' }],
      ['queue.changed', { session_id: s, length: 0, items: [] }],
      [
        'run.started',
        {
          ...u,
          parent_run_id: null,
          family_session_id: s,
          agent: 'build',
          model: r.model,
          origin: 'openai_compat',
        },
      ],
      ['message.created', { ...user, role: 'user' }],
      ['message.completed', user],
    ];
  };
  const endEvents = (r) => {
    const s = r.sessionId;
    const u = { session_id: s, run_id: r.runId };
    const answer = { ...u, message_id: r.answerId };
    return [
      ['message.created', { ...answer, role: 'assistant' }],
      ...r.deltas.map((delta) => ['message.delta', { ...answer, part: 'text', delta }]),
      ['message.completed', answer],
      ['context.usage', { ...u, input_tokens: r.usage.total_tokens, context_window: 0, ratio: 0 }],
      ['run.finished', { ...u, status: 'completed', steps: 1, usage: usageOf(r), cost: 0 }],
      ['state.changed', { session_id: s, state: 'idle' }],
    ];
  };
  /** The run events of a request's start (seq 1–6), then of its end (7–10): svc's 10. */
  const startRunEvents = (r) => [
    ['run.queued', { prompt: r.prompt }],
    ['run.started', { pid: process.pid, host: 'floor', runner: 'floor' }],
    ['phase', { phase: 'prepare' }],
    ['model.resolved', { model: r.model, provider: 'fake', source: 'requested' }],
    [
      'openai_compat.request',
      { request_id: r.requestId, model: r.model, stream: true, messages: r.messageCount },
    ],
    ['prompt.assembled', { sections: 1, chars: SYSTEM.length }],
  ];
  const endRunEvents = (r) => [
    ['phase', { phase: 'model', step: 1 }],
    ['step.finished', { step: 1, finish_reason: r.finish, usage: usageOf(r) }],
    ['run.finished', { status: 'completed', steps: 1, usage: usageOf(r) }],
    ['openai_compat.response', { request_id: r.requestId, status: 'completed', finish_reason: r.finish }],
  ];
  const events = (r, list, now) => {
    for (const [type, payload] of list) sessionEvent.run(r.sessionId, type, JSON.stringify(payload), now);
  };
  const runEvents = (r, list, from, now) => {
    let seq = from;
    for (const [type, payload] of list)
      runEvent.run(r.runId, r.sessionId, ++seq, type, JSON.stringify(payload), now);
  };
  const userMessage = (r) =>
    message.run(
      r.userId,
      r.sessionId,
      'user',
      JSON.stringify([{ type: 'text', text: r.prompt }]),
      null,
      null,
      null,
      r.runId,
      r.startedAt,
      r.startedAt,
      r.startedAt,
    );
  const answerMessage = (r, now) =>
    message.run(
      r.answerId,
      r.sessionId,
      'assistant',
      JSON.stringify([{ type: 'text', text: r.text }]),
      r.model,
      'fake',
      JSON.stringify(usageOf(r)),
      r.runId,
      now,
      now,
      now,
    );
  const metadata = (r) => JSON.stringify({ openai_compat: { request_id: r.requestId } });
  /** One request's rows in one transaction at its end: what svc keeps of a lone compat request. */
  const whole = db.transaction((r) => {
    const at = r.startedAt;
    const now = Date.now();
    const s = r.sessionId;
    const { prompt_tokens: input, completion_tokens: output } = r.usage;
    session.run(s, r.prompt, process.cwd(), metadata(r), input, output, at, now);
    run.run(
      r.runId,
      s,
      s,
      'completed',
      r.model,
      r.prompt,
      1,
      input,
      output,
      r.answerId,
      process.pid,
      at,
      at,
      now,
      now,
    );
    userMessage(r);
    answerMessage(r, now);
    ledger.run(
      r.requestId,
      r.runId,
      s,
      r.model,
      r.model,
      r.includeUsage ? 1 : 0,
      r.messageCount,
      'completed',
      r.finish,
      200,
      input,
      output,
      at,
      now,
    );
    events(r, [...startEvents(r), ...endEvents(r)], now);
    runEvents(r, [...startRunEvents(r), ...endRunEvents(r)], 0, now);
  });
  /** FLOOR_COMMITS=2, svc's two commits: the start's rows before the model's answer, ... */
  const start = db.transaction((r) => {
    const at = r.startedAt;
    const s = r.sessionId;
    session.run(s, r.prompt, process.cwd(), metadata(r), 0, 0, at, at);
    run.run(r.runId, s, s, 'running', r.model, r.prompt, 0, 0, 0, null, process.pid, at, at, null, at);
    userMessage(r);
    ledger.run(
      r.requestId,
      r.runId,
      s,
      r.model,
      r.model,
      r.includeUsage ? 1 : 0,
      r.messageCount,
      'running',
      null,
      null,
      0,
      0,
      at,
      null,
    );
    events(r, startEvents(r), at);
    runEvents(r, startRunEvents(r), 0, at);
  });
  /** ... the rest, and the updates of the run, ledger and session rows, after it. */
  const end = db.transaction((r) => {
    const now = Date.now();
    const { prompt_tokens: input, completion_tokens: output } = r.usage;
    answerMessage(r, now);
    runEnd.run(input, output, r.answerId, now, now, r.runId);
    ledgerEnd.run(r.finish, input, output, now, r.requestId);
    sessionEnd.run(input, output, now, r.sessionId);
    events(r, endEvents(r), now);
    runEvents(r, endRunEvents(r), 6, now);
  });
  return { whole, start, end };
}

/** A system text the size of svc's model request (14.9 kB with its tools). */
const SYSTEM = 'You are a coding agent. '.repeat(620);

function serve() {
  const toml = readFileSync('svc.toml', 'utf8');
  const base = /base_url = "([^"]+)"/.exec(toml)[1];
  const token = /token = "([^"]+)"/.exec(toml)?.[1];
  const target = new URL(`${base}/chat/completions`);
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
  let store;
  if (process.env.FLOOR_SQLITE !== '0') {
    mkdirSync('.floor', { recursive: true });
    store = openStore(join('.floor', 'floor.db'));
  }
  const twoCommits = process.env.FLOOR_COMMITS === '2';
  const server = createServer((req, res) => {
    if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
      res.writeHead(404).end();
      return;
    }
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"message":"unauthorized"}}');
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => answer(JSON.parse(Buffer.concat(chunks).toString('utf8')), res));
  });

  function answer(body, res) {
    const startedAt = Date.now();
    const id = `chatcmpl-${randomUUID()}`;
    const model = body.model;
    const created = Math.floor(startedAt / 1000);
    const includeUsage = body.stream_options?.include_usage === true;
    const prompt = body.messages.findLast((m) => m.role === 'user')?.content ?? '';
    const line = (choices, usage = null) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, system_fingerprint: null, choices, usage })}\n\n`;
    const delta = (d, finish = null) => line([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-request-id': id,
    });
    res.write(delta({ role: 'assistant', content: '', refusal: null }));
    const rows = {
      startedAt,
      requestId: id,
      sessionId: `ses_${randomUUID()}`,
      runId: `run_${randomUUID()}`,
      userId: `msg_${randomUUID()}`,
      answerId: `msg_${randomUUID()}`,
      model,
      prompt,
      messageCount: body.messages.length,
      includeUsage,
    };
    const upstream = request(target, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json' },
    });
    upstream.end(
      JSON.stringify({
        model: model.slice(model.indexOf('/') + 1),
        messages: [{ role: 'system', content: SYSTEM }, ...body.messages],
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    // svc's two commits: the start's rows once the model request is on its way.
    const startRows = () => {
      if (rows.started) return;
      rows.started = true;
      store.start(rows);
    };
    if (store && twoCommits) setImmediate(startRows);
    upstream.on('response', (up) => {
      up.setEncoding('utf8');
      let pending = '';
      const deltas = [];
      let finish = 'stop';
      let usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
      up.on('data', (text) => {
        const events = (pending + text).split('\n\n');
        pending = events.pop();
        let out = '';
        for (const event of events) {
          if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
          const data = JSON.parse(event.slice(6));
          if (data.usage) usage = data.usage;
          const choice = data.choices?.[0];
          if (choice?.finish_reason) finish = choice.finish_reason;
          const content = choice?.delta?.content;
          if (content) {
            deltas.push(content);
            out += delta({ content });
          }
        }
        if (out) res.write(out);
      });
      up.on('end', () => {
        if (store) {
          Object.assign(rows, { deltas, text: deltas.join(''), finish, usage });
          if (twoCommits) {
            startRows();
            store.end(rows);
          } else store.whole(rows);
        }
        let out = delta({}, finish);
        if (includeUsage) out += line([], usage);
        res.end(`${out}data: [DONE]\n\n`);
      });
    });
  }

  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`svc: listening on http://127.0.0.1:${server.address().port}\n`);
  });
  process.on('SIGTERM', () => {
    server.close();
    process.exit(0);
  });
}

/** svc, the floor and the floor without SQLite through compat.bench, one after another. */
async function sideBySide() {
  const { run } = await import('./compat.bench.mjs');
  const { loadavg } = await import('node:os');
  const targets = (process.env.BENCH_FLOOR_TARGETS ?? 'svc,floor,floor-2commits,floor-nosql').split(',');
  const columns = [];
  for (const target of targets) {
    const load = loadavg()[0].toFixed(1);
    const rows = await run({ target });
    columns.push({ target, load, rows });
  }
  const names = columns[0].rows.map((r) => r.name);
  console.log(`| figure | ${columns.map((c) => `${c.target} (load ${c.load})`).join(' | ')} |`);
  console.log(`| --- | ${columns.map(() => '---').join(' | ')} |`);
  for (const name of names) {
    const values = columns.map((c) => c.rows.find((r) => r.name === name)?.value ?? '–');
    console.log(`| ${name} | ${values.join(' | ')} |`);
  }
}

if (process.argv[2] === 'service') serve();
else await sideBySide();
