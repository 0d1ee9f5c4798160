// The DBOS engine's cost (issue 19, item 7), on one throwaway PostgreSQL (bench/pg-cluster.mjs):
// 1. Overhead per agent-loop step: one built `svc service start http` node with `[engine] kind =
//    "dbos"` against one with the in-process engine, both on the PostgreSQL store (a new database
//    each run), runs interleaved in-process, dbos, in-process, dbos (BENCH_ENGINE_PAIRS, default
//    2). A run of BENCH_ENGINE_STEPS (default 60) tool steps (`get_workflow_phase`) started over
//    HTTP, the fake model answering instantly; per step: the svc time at the model server (from
//    the end of one response to the next request, median of the steady steps) and the node's CPU
//    (all threads, /proc), and what each node spends per second with no run (BENCH_ENGINE_IDLE_MS,
//    default 5000, after 1 s). Target: the DBOS engine adds at most 5 ms per step.
//    BENCH_ENGINE_ONLY=dbos (or in-process) runs one engine, BENCH_NODE_ARGS adds Node flags
//    (`--cpu-prof --cpu-prof-dir=/tmp/prof`).
// 2. Time from a node's death to adoption: two dbos nodes with the default `[store]`
//    node_heartbeat_ms (3000) and node_stale_ms (10000); a run of slow steps (the model answers
//    after 200 ms) on the node the queue gives it to (A), A SIGKILLed after step 3; the time until
//    `run_adopted` is in the ledger (its created_at) and until the run's next model request (at
//    the model server).
//    BENCH_ENGINE_TRIALS (default 3) trials each of:
//    - same machine: the dead node's pid is checked on this host, so the next heartbeat of the
//      live node finds it gone (about node_heartbeat_ms at most);
//    - other machine: the run's host and the node's row are rewritten to another host name just
//      before the kill (there is no knob for a node's host), so the live node can only go by the
//      heartbeat: the dead node counts as gone once its heartbeat is older than node_stale_ms.
//    Target: at most 15 s with the default settings.
// Reported, never asserted. Without PostgreSQL installed the bench is skipped with a row saying so.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { findPostgresBin, POSTGRES_INSTALL, startPostgres } from './pg-cluster.mjs';
import { startService } from './service-process.mjs';

const BIN =
  process.env.BENCH_SVC_BIN ??
  resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../dist/main.js');
const STEPS = Number(process.env.BENCH_ENGINE_STEPS ?? 60);
const PAIRS = Number(process.env.BENCH_ENGINE_PAIRS ?? 2);
const TRIALS = Number(process.env.BENCH_ENGINE_TRIALS ?? 3);
const SLOW_MS = 200;
const IDLE_MS = Number(process.env.BENCH_ENGINE_IDLE_MS ?? 5000);
const TOKEN = 'bench-token';
// BENCH_NODE_ARGS adds Node flags to the nodes (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
// BENCH_ENGINE_ONLY runs one engine only in the step runs ("dbos" or "in-process").
const ENGINES = (process.env.BENCH_ENGINE_ONLY ?? 'in-process,dbos').split(',');
const TICK_MS = 10; // USER_HZ is 100 on Linux

function median(values) {
  if (!values.length) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
const fmt = (value, digits = 2) => (value === undefined ? 'n/a' : value.toFixed(digits));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function firstLine(error) {
  return String(error?.message ?? error)
    .split('\n')[0]
    .slice(0, 300);
}

/** utime + stime of a live process in ms (all threads), or undefined. */
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return undefined;
  }
}

/**
 * A fake OpenAI-compatible model: a run's prompt `steps N` gets N `get_workflow_phase` calls, then
 * a text. `delayMs` before each answer. Records per prompt each request's arrival and the end of
 * each answer (ms, performance.now()).
 */
function startModel(delayMs = 0) {
  const runs = new Map();
  /** The pid of the node whose CPU is read at each request. */
  const watch = { pid: undefined };
  const server = createServer((req, res) => {
    if (!req.url?.includes('/chat/completions')) {
      req.resume();
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no route"}}');
      return;
    }
    const arrived = performance.now();
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', async () => {
      const match = /bench-run-(\w+) steps (\d+)/.exec(body);
      const key = match?.[1] ?? 'other';
      const steps = Number(match?.[2] ?? 0);
      const record = runs.get(key) ?? { arrivals: [], ends: [], cpu: [] };
      runs.set(key, record);
      record.arrivals.push(arrived);
      record.cpu.push(watch.pid ? cpuMs(watch.pid) : undefined);
      const count = record.arrivals.length;
      if (delayMs) await sleep(delayMs);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const base = { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm1' };
      const chunk = (delta, finish = null, extra = {}) =>
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
      const usage = { usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 } };
      if (count <= steps) {
        res.write(
          chunk({
            role: 'assistant',
            tool_calls: [
              {
                index: 0,
                id: `call_${key}_${count}`,
                type: 'function',
                function: { name: 'get_workflow_phase', arguments: '{}' },
              },
            ],
          }),
        );
        res.write(chunk({}, 'tool_calls', usage));
      } else {
        res.write(chunk({ role: 'assistant', content: 'done' }));
        res.write(chunk({}, 'stop', usage));
      }
      res.end('data: [DONE]\n\n');
      record.ends.push(performance.now());
    });
  });
  return new Promise((resolvePromise) =>
    server.listen(0, '127.0.0.1', () =>
      resolvePromise({ server, runs, watch, url: `http://127.0.0.1:${server.address().port}/v1` }),
    ),
  );
}

/** A workspace whose svc.toml uses `engine` on the model at `modelUrl`. */
function workspace(engine, modelUrl) {
  const ws = mkdtempSync(join(tmpdir(), 'svc-bench-engine-'));
  writeFileSync(
    join(ws, 'svc.toml'),
    `[providers.fake]\ntype = "openai-compat"\nbase_url = "${modelUrl}"\n[models]\nlarge = "fake/m1"\nsmall = "fake/m1"\n` +
      `[engine]\nkind = "${engine}"\n[services.http]\ntoken = "${TOKEN}"\n` +
      `[permissions]\nallowed_tools = ["get_workflow_phase"]\n` +
      `[options]\nmax_steps = ${STEPS + 20}\n[options.loop_detection]\nmax_repeats = 100000\n`,
  );
  return ws;
}

/** A `svc service start http` node in `ws` on the store `url`; resolves once it listens. */
function startNode(ws, url, name) {
  const dataDir = join(ws, '.nodes', name);
  mkdirSync(dataDir, { recursive: true });
  const {
    child,
    url: listening,
    exited,
  } = startService({
    bin: BIN,
    ws,
    nodeArgs: NODE_ARGS,
    env: { SVC_STORE_URL: url, SVC_DATA_DIR: dataDir },
    name: `node ${name}`,
  });
  return listening.then((base) => node(child, base, exited));
}

function node(child, base, exited) {
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const call = async (method, path, body) => {
    const response = await fetch(`${base}/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 200)}`);
    return text ? JSON.parse(text) : undefined;
  };
  return {
    child,
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body),
    async startRun(key, steps) {
      const session = (await call('POST', '/sessions', { title: key })).session.id;
      return (
        await call('POST', `/sessions/${session}/messages`, { prompt: `bench-run-${key} steps ${steps}` })
      ).run_id;
    },
    async waitRun(runId, timeoutMs = 300_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const run = (await call('GET', `/agent-runs/${runId}`)).run;
        if (run.status !== 'running' && run.status !== 'queued') return run;
        if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
        await sleep(100);
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await Promise.race([exited, sleep(15_000)]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
    exited,
  };
}

export async function run() {
  if (!findPostgresBin())
    return [{ name: 'engine', value: `skipped: PostgreSQL is not installed (${POSTGRES_INSTALL})` }];
  let pg;
  try {
    pg = await startPostgres();
  } catch (error) {
    return [{ name: 'postgres: could not start:', value: firstLine(error) }];
  }
  const rows = [
    {
      name: 'machine',
      value: `${cpus().length} cores, ${cpus()[0]?.model ?? '?'}, Node ${process.version}, load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    },
  ];
  try {
    await overhead(pg, rows);
    await adoption(pg, rows, 'same machine');
    await adoption(pg, rows, 'other machine');
  } finally {
    pg.stop();
  }
  rows.push({
    name: 'load at the end',
    value: loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
  });
  return rows;
}

/** One run of STEPS steps on a new node of `engine`: svc time and CPU per step. */
async function stepRun(pg, engine, key) {
  const model = await startModel();
  const ws = workspace(engine, model.url);
  let n;
  try {
    const url = await pg.createDatabase('svc_bench_engine');
    n = await startNode(ws, url, 'n0');
    // What the node spends with no run (heartbeats, polls, DBOS's queue), over IDLE_MS after 1 s.
    await sleep(1000);
    const idleFrom = cpuMs(n.child.pid);
    await sleep(IDLE_MS);
    const idle = ((cpuMs(n.child.pid) - idleFrom) / IDLE_MS) * 1000;
    // The node's CPU at each request (the model server reads it as the request arrives).
    model.watch.pid = n.child.pid;
    const runId = await n.startRun(key, STEPS);
    const record = () => model.runs.get(key);
    const run = await n.waitRun(runId);
    if (run.status !== 'completed') throw new Error(`${engine} run ${run.status}: ${run.reason ?? ''}`);
    const { arrivals, ends, cpu } = record();
    const gaps = arrivals.slice(1).map((at, i) => at - ends[i]);
    const steady = gaps.slice(5);
    const first = cpu.findIndex((v, i) => i >= 5 && v !== undefined);
    const last = cpu.length - 1;
    const cpuPerStep =
      first >= 0 && cpu[last] !== undefined && last > first
        ? (cpu[last] - cpu[first]) / (last - first)
        : undefined;
    return { wall: median(steady), cpu: cpuPerStep, steps: gaps.length, idle };
  } finally {
    await n?.stop();
    model.server.close();
    rmSync(ws, { recursive: true, force: true });
  }
}

async function overhead(pg, rows) {
  const runs = { 'in-process': [], dbos: [] };
  let k = 0;
  for (let pair = 0; pair < PAIRS; pair++)
    for (const engine of ENGINES) {
      try {
        runs[engine].push(await stepRun(pg, engine, `s${++k}`));
      } catch (error) {
        rows.push({ name: `${engine}: step run failed:`, value: firstLine(error) });
      }
    }
  const of = (engine, key) => runs[engine].map((r) => r[key]).filter((v) => v !== undefined);
  const summary = (engine, key) => {
    const values = of(engine, key);
    return values.length ? `${fmt(median(values))} (${values.map((v) => fmt(v)).join(', ')})` : 'n/a';
  };
  const added = (key) => {
    const a = median(of('in-process', key));
    const b = median(of('dbos', key));
    return a === undefined || b === undefined ? undefined : b - a;
  };
  const wall = added('wall');
  const cpu = added('cpu');
  rows.push(
    {
      name: 'step runs, in-process + dbos, interleaved',
      value: `${PAIRS} + ${PAIRS}, ${STEPS} steps each, one HTTP node on PostgreSQL`,
    },
    { name: 'svc time per step ms, in-process', value: summary('in-process', 'wall') },
    { name: 'svc time per step ms, dbos', value: summary('dbos', 'wall') },
    {
      name: 'dbos overhead per step, svc time (ms)',
      value: fmt(wall),
      target: '≤ 5',
      pass: wall !== undefined && wall <= 5,
    },
    { name: 'node CPU per step ms, in-process', value: summary('in-process', 'cpu') },
    { name: 'node CPU per step ms, dbos', value: summary('dbos', 'cpu') },
    {
      name: 'dbos overhead per step, CPU (ms)',
      value: fmt(cpu),
      target: '≤ 5',
      pass: cpu !== undefined && cpu <= 5,
    },
    { name: 'idle node CPU per second ms, in-process', value: summary('in-process', 'idle') },
    { name: 'idle node CPU per second ms, dbos', value: summary('dbos', 'idle') },
  );
}

/** SIGKILL the node running a run; ms to `run_adopted` and to the run's next model request. */
async function adoptionTrial(pg, where, key) {
  const model = await startModel(SLOW_MS);
  const ws = workspace('dbos', model.url);
  const nodes = [];
  try {
    const url = await pg.createDatabase('svc_bench_adopt');
    nodes.push(await startNode(ws, url, 'a'));
    nodes.push(await startNode(ws, url, 'b'));
    const runId = await nodes[0].startRun(key, 40);
    const record = () => model.runs.get(key);
    while ((record()?.ends.length ?? 0) < 3) await sleep(10);
    // The run is queued and runs on whichever node the queue gives it to: that one dies.
    const { pid } = (await nodes[0].get(`/agent-runs/${runId}`)).run;
    const a = nodes.find((n) => n.child.pid === pid);
    if (!a) throw new Error(`no node of the bench runs the run (pid ${pid})`);
    const b = nodes.find((n) => n !== a);
    if (where === 'other machine') {
      // A's run and heartbeat row as if A ran on another host: B can only go by the heartbeat.
      const { default: pgc } = await import('pg');
      const client = new pgc.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query("UPDATE agent_runs SET host = 'elsewhere' WHERE id = $1", [runId]);
        await client.query(
          "UPDATE cluster_nodes SET host = 'elsewhere' WHERE id = (SELECT runner FROM agent_runs WHERE id = $1)",
          [runId],
        );
      } finally {
        await client.end();
      }
    }
    const requestsBefore = record().arrivals.length;
    const killedAt = performance.now();
    const killedWall = Date.now();
    a.child.kill('SIGKILL');
    await a.exited;
    let adoptedAt;
    const deadline = Date.now() + 60_000;
    while (adoptedAt === undefined && Date.now() < deadline) {
      const events = (await b.get(`/agent-runs/${runId}/events?limit=500`)).events;
      const adopted = events.find((e) => e.type === 'run_adopted');
      if (adopted) adoptedAt = adopted.created_at - killedWall;
      else await sleep(50);
    }
    while (record().arrivals.length <= requestsBefore && Date.now() < deadline) await sleep(10);
    const next = record().arrivals[requestsBefore];
    if (adoptedAt === undefined || next === undefined) throw new Error('the run was not adopted within 60 s');
    return { adopted: adoptedAt, next: next - killedAt };
  } finally {
    for (const n of nodes) await n.stop();
    model.server.close();
    rmSync(ws, { recursive: true, force: true });
  }
}

async function adoption(pg, rows, where) {
  const trials = [];
  for (let t = 0; t < TRIALS; t++) {
    try {
      trials.push(await adoptionTrial(pg, where, `${where === 'same machine' ? 'm' : 'o'}${t}`));
    } catch (error) {
      rows.push({ name: `${where}: adoption trial failed:`, value: firstLine(error) });
    }
  }
  const line = (key) => {
    const values = trials.map((t) => t[key] / 1000);
    return values.length
      ? `median ${fmt(median(values))}, max ${fmt(Math.max(...values))} (${values.map((v) => fmt(v)).join(', ')})`
      : 'n/a';
  };
  const worst = trials.length ? Math.max(...trials.map((t) => t.next)) / 1000 : undefined;
  rows.push(
    { name: `death to run_adopted s, ${where}`, value: line('adopted') },
    {
      name: `death to the run's next step s, ${where}`,
      value: line('next'),
      target: '≤ 15',
      pass: worst !== undefined && worst <= 15,
    },
  );
}
