// svc on PostgreSQL against svc on SQLite (issue 18, item 6), in one run on one throwaway
// PostgreSQL cluster (bench/pg-cluster.mjs; fsync and synchronous_commit off, as the tests run it):
// 1. the agent-loop step (bench/agent-loop.bench.mjs, `tool_exposure = "all"`): median svc time
//    per step and svc CPU per step, runs interleaved sqlite, postgres, sqlite, postgres (each
//    postgres run on a new database);
// 2. the compat request (bench/compat.bench.mjs with a smaller load: BENCH_STORE_CONCURRENCY
//    concurrent streams × BENCH_STORE_ROUNDS rounds, default 50 × 3): svc CPU per request and the
//    added latency (p50 at that concurrency, and one request at a time), interleaved the same way;
//    the ratios postgres / sqlite against the 1.5x target;
// 3. cluster throughput: the same compat load against 1 and against 3 `svc service start http`
//    nodes on one PostgreSQL database (one shared workspace, an SVC_DATA_DIR per node), the
//    requests of a round sent round-robin over the nodes; requests/s of each and the ratio against
//    the 2.5x target, with CPU per request of the nodes and of the PostgreSQL server (and what
//    both spend per second with no request, measured over 5 s before the load), and PostgreSQL's
//    statements (pg_stat_statements) and transactions per request (and per agent-loop step, over
//    the whole run). The fake model
//    answers instantly (the model is not the bottleneck), but the load generator, the fake model,
//    PostgreSQL and the nodes share this machine's cores: on a 2-core box 3 nodes share 2 cores.
// BENCH_STORE_WARM_ROUNDS (default 0) more compat rounds after those, then the requests one at a
// time again, as rows of their own ("once warm"): the JIT is far from settled after 170 requests.
// Reported, never asserted. BENCH_STORE_PAIRS (default 2) sets the pairs of 1 and 2,
// BENCH_STORE_CLUSTER_PAIRS (default 1) the pairs of 3. Without PostgreSQL installed the bench is
// skipped with a row saying so. A postgres run that fails is a row "postgres: svc could not serve:
// <first line of the error>", not a crash.

import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runOnce as agentLoopOnce } from './agent-loop.bench.mjs';
import { compatBody, run as compatRun, cpuMs, fakeProvider, round, streamOnce } from './compat.bench.mjs';
import { findPostgresBin, POSTGRES_INSTALL, startPostgres } from './pg-cluster.mjs';
import { startService, BENCH_TOKEN as TOKEN, writeCompatConfig } from './service-process.mjs';

const BIN =
  process.env.BENCH_SVC_BIN ??
  resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../dist/main.js');
const PAIRS = Number(process.env.BENCH_STORE_PAIRS ?? 2);
const CLUSTER_PAIRS = Number(process.env.BENCH_STORE_CLUSTER_PAIRS ?? 1);
const CONCURRENCY = Number(process.env.BENCH_STORE_CONCURRENCY ?? 50);
const ROUNDS = Number(process.env.BENCH_STORE_ROUNDS ?? 3);
const WARM_ROUNDS = Number(process.env.BENCH_STORE_WARM_ROUNDS ?? 0);
const NODES = Number(process.env.BENCH_STORE_NODES ?? 3);

/** The first line of an error; of an error chunk, its message. */
function firstLine(error) {
  const text = String(error?.message ?? error);
  const message = /"message":"((?:[^"\\]|\\.)*)/.exec(text)?.[1]?.replace(/\\"/g, '"');
  const head = /^[^:]*: /.exec(text)?.[0] ?? '';
  return (message ? `${head}${message}` : text).split('\n')[0].slice(0, 300);
}

function median(values) {
  if (!values.length) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
const fmt = (value, digits = 2) => (value === undefined ? 'n/a' : value.toFixed(digits));
/** A row's number by its name (the rows of agent-loop and compat), or undefined. */
function figure(rows, name) {
  const row = rows.find((r) => r.name === name);
  const value = row ? Number.parseFloat(row.value) : Number.NaN;
  return Number.isFinite(value) ? value : undefined;
}

/** Runs `fn` with BENCH_STORE_URL set to `url` (or unset), restoring it after. */
async function withStore(url, fn) {
  const before = process.env.BENCH_STORE_URL;
  if (url) process.env.BENCH_STORE_URL = url;
  else delete process.env.BENCH_STORE_URL;
  try {
    return await fn();
  } finally {
    if (before === undefined) delete process.env.BENCH_STORE_URL;
    else process.env.BENCH_STORE_URL = before;
  }
}

export async function run() {
  if (!findPostgresBin())
    return [{ name: 'postgres', value: `skipped: PostgreSQL is not installed (${POSTGRES_INSTALL})` }];
  let pg;
  try {
    pg = await startPostgres();
  } catch (error) {
    return [{ name: 'postgres: could not start:', value: firstLine(error) }];
  }
  const rows = [
    { name: 'machine', value: `${cpus().length} cores, ${cpus()[0]?.model ?? '?'}, Node ${process.version}` },
  ];
  const failures = new Set();
  const failed = (what, error) => {
    const line = `${what}: ${firstLine(error)}`;
    if (!failures.has(line)) rows.push({ name: 'postgres: svc could not serve:', value: line });
    failures.add(line);
  };
  try {
    await agentLoop(pg, rows, failed);
    await compat(pg, rows, failed);
    await clusterThroughput(pg, rows, failed);
  } finally {
    pg.stop();
  }
  return rows;
}

/** A ratio row pg / sqlite against the 1.5x target. */
function ratioRow(name, sqlite, postgres) {
  if (sqlite === undefined || postgres === undefined || sqlite <= 0) return { name, value: 'n/a' };
  const ratio = postgres / sqlite;
  return { name, value: ratio.toFixed(2), target: '≤ 1.5', pass: ratio <= 1.5 };
}

async function agentLoop(pg, rows, failed) {
  const runs = { sqlite: [], postgres: [] };
  for (let pair = 0; pair < PAIRS; pair++) {
    for (const store of ['sqlite', 'postgres']) {
      try {
        const url = store === 'postgres' ? await pg.createDatabase('svc_bench_loop') : undefined;
        const result = await withStore(url, () => agentLoopOnce('all'));
        const steps = figure(result, 'tool steps');
        let counts;
        if (url && steps) {
          await new Promise((r) => setTimeout(r, 1500)); // the statistics arrive up to a second late
          counts = await pg.counters(url);
        }
        runs[store].push({
          wall: figure(result, 'svc time per step, median (ms)'),
          cpu: figure(result, 'svc CPU per step, all threads (ms)'),
          statements: counts?.statements === undefined ? undefined : counts.statements / steps,
          transactions: counts ? counts.transactions / steps : undefined,
        });
      } catch (error) {
        if (store === 'postgres') failed('agent-loop', error);
        else rows.push({ name: 'sqlite: agent-loop failed:', value: firstLine(error) });
      }
    }
  }
  const of = (store, key) => runs[store].map((r) => r[key]).filter((v) => v !== undefined);
  const summary = (store, key, digits = 2) => {
    const values = of(store, key);
    return values.length
      ? `${fmt(median(values), digits)} (${values.map((v) => fmt(v, digits)).join(', ')})`
      : 'n/a';
  };
  rows.push(
    {
      name: 'agent-loop runs, sqlite + postgres, interleaved',
      value: `${PAIRS} + ${PAIRS}, ${process.env.BENCH_STEPS ?? 100} steps each`,
    },
    { name: 'agent-loop step median ms, sqlite', value: summary('sqlite', 'wall') },
    { name: 'agent-loop step median ms, postgres', value: summary('postgres', 'wall') },
    ratioRow(
      'agent-loop step, postgres / sqlite',
      median(of('sqlite', 'wall')),
      median(of('postgres', 'wall')),
    ),
    {
      name: 'agent-loop pg statements / transactions per step',
      value: `${summary('postgres', 'statements', 1)} / ${summary('postgres', 'transactions', 1)} (whole run, start-up and migration included)`,
    },
    { name: 'agent-loop CPU per step ms, sqlite', value: summary('sqlite', 'cpu') },
    { name: 'agent-loop CPU per step ms, postgres', value: summary('postgres', 'cpu') },
    ratioRow(
      'agent-loop CPU per step, postgres / sqlite',
      median(of('sqlite', 'cpu')),
      median(of('postgres', 'cpu')),
    ),
  );
}

async function compat(pg, rows, failed) {
  const runs = { sqlite: [], postgres: [] };
  const errors = { sqlite: 0, postgres: 0 };
  for (let pair = 0; pair < PAIRS; pair++) {
    for (const store of ['sqlite', 'postgres']) {
      try {
        const url = store === 'postgres' ? await pg.createDatabase('svc_bench_compat') : undefined;
        const result = await withStore(url, () =>
          compatRun({ concurrency: CONCURRENCY, rounds: ROUNDS, warmRounds: WARM_ROUNDS }),
        );
        const failedRequests = figure(result, 'errors') ?? 0;
        errors[store] += failedRequests;
        if (failedRequests && store === 'postgres') {
          const first = result.find((r) => r.name === 'first error')?.value ?? '';
          failed(
            'compat',
            `${failedRequests} of ${CONCURRENCY * (ROUNDS + 1)} requests failed, first: ${first}`,
          );
        }
        runs[store].push({
          cpu: figure(result, 'svc CPU per request, all threads (ms)'),
          added: figure(result, 'added latency per request, p50 (ms)'),
          single: figure(result, 'added latency, single request p50 (ms)'),
          // "added latency, single request / first content chunk p50 once warm, after round N (ms)"
          singleWarm: figure(result, result.find((r) => r.name.includes('p50 once warm'))?.name),
        });
      } catch (error) {
        if (store === 'postgres') failed('compat', error);
        else rows.push({ name: 'sqlite: compat failed:', value: firstLine(error) });
      }
    }
  }
  const of = (store, key) => runs[store].map((r) => r[key]).filter((v) => v !== undefined);
  const summary = (store, key, digits = 2) => {
    const values = of(store, key);
    return values.length
      ? `${fmt(median(values), digits)} (${values.map((v) => fmt(v, digits)).join(', ')})`
      : 'n/a';
  };
  rows.push(
    {
      name: 'compat load, sqlite + postgres, interleaved',
      value: `${PAIRS} + ${PAIRS} runs of ${CONCURRENCY} concurrent streams × ${ROUNDS} rounds`,
    },
    { name: 'compat errors, sqlite / postgres', value: `${errors.sqlite} / ${errors.postgres}` },
    { name: 'compat CPU per request ms, sqlite', value: summary('sqlite', 'cpu') },
    { name: 'compat CPU per request ms, postgres', value: summary('postgres', 'cpu') },
    ratioRow(
      'compat CPU per request, postgres / sqlite',
      median(of('sqlite', 'cpu')),
      median(of('postgres', 'cpu')),
    ),
    {
      name: `compat added p50 ms, ${CONCURRENCY} at once, sqlite`,
      value: summary('sqlite', 'added', 1),
    },
    {
      name: `compat added p50 ms, ${CONCURRENCY} at once, pg`,
      value: summary('postgres', 'added', 1),
    },
    ratioRow(
      `compat added p50, ${CONCURRENCY} at once, pg / sqlite`,
      median(of('sqlite', 'added')),
      median(of('postgres', 'added')),
    ),
    { name: 'compat added ms, one at a time, sqlite', value: summary('sqlite', 'single', 1) },
    { name: 'compat added ms, one at a time, pg', value: summary('postgres', 'single', 1) },
    ratioRow(
      'compat added, one at a time, pg / sqlite',
      median(of('sqlite', 'single')),
      median(of('postgres', 'single')),
    ),
  );
  if (WARM_ROUNDS > 0) {
    rows.push(
      {
        name: `compat added ms, one at a time once warm (+${WARM_ROUNDS} rounds), sqlite`,
        value: summary('sqlite', 'singleWarm', 1),
      },
      {
        name: `compat added ms, one at a time once warm (+${WARM_ROUNDS} rounds), pg`,
        value: summary('postgres', 'singleWarm', 1),
      },
      ratioRow(
        'compat added, one at a time once warm, pg / sqlite',
        median(of('sqlite', 'singleWarm')),
        median(of('postgres', 'singleWarm')),
      ),
    );
  }
}

/** N `svc service start http` nodes on one new database, sharing one workspace. */
async function startNodes(pg, providerUrl, count) {
  const url = await pg.createDatabase('svc_bench_cluster');
  const ws = mkdtempSync(join(tmpdir(), 'svc-bench-cluster-'));
  writeCompatConfig(ws, providerUrl);
  const nodes = [];
  const start = async (name) => {
    const dataDir = join(ws, '.nodes', name);
    mkdirSync(dataDir, { recursive: true });
    const started = startService({
      bin: BIN,
      ws,
      env: { SVC_STORE_URL: url, SVC_DATA_DIR: dataDir },
      name: `node ${name}`,
    });
    nodes.push(started.child);
    return { child: started.child, url: `${await started.url}/v1` };
  };
  const stop = async () => {
    for (const child of nodes)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    rmSync(ws, { recursive: true, force: true });
  };
  try {
    // One node first: it migrates the new database; the others find it migrated.
    const first = await start('n0');
    const rest = await Promise.all(Array.from({ length: count - 1 }, (_, i) => start(`n${i + 1}`)));
    return { nodes: [first, ...rest], url, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The compat load round-robin over `count` nodes: requests/s, CPU per request (nodes, PostgreSQL). */
async function loadNodes(pg, providerUrl, count) {
  const cluster = await startNodes(pg, providerUrl, count);
  try {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const body = compatBody('bench request');
    const on = (i) => cluster.nodes[i % count].url;
    // Warm-up: 20 requests per node.
    await round(20 * count, (i) => streamOnce(on(i), auth, body(i)));
    const cpuOf = () => cluster.nodes.reduce((sum, n) => sum + (cpuMs(n.child.pid) ?? 0), 0);
    // What the nodes and PostgreSQL spend with no request (heartbeats, polls, timers), over 5 s.
    const idleNodes = cpuOf();
    const idlePg = pg.cpuMs();
    const idleCounts = await pg.counters(cluster.url);
    await new Promise((r) => setTimeout(r, 5000));
    const idle = { nodes: (cpuOf() - idleNodes) / 5, pg: (pg.cpuMs() - idlePg) / 5 };
    const idleCountsAfter = await pg.counters(cluster.url);
    idle.statements =
      idleCounts.statements === undefined
        ? undefined
        : (idleCountsAfter.statements - idleCounts.statements) / 5;
    const nodesBefore = cpuOf();
    const pgBefore = pg.cpuMs();
    const countsBefore = await pg.counters(cluster.url);
    let served = 0;
    let elapsed = 0;
    const errors = [];
    const rps = [];
    for (let r = 0; r < ROUNDS; r++) {
      const started = performance.now();
      const result = await round(CONCURRENCY, (i) => streamOnce(on(i), auth, body(i)));
      elapsed += performance.now() - started;
      served += result.latencies.length;
      errors.push(...result.errors);
      rps.push(result.rps);
    }
    const nodesCpu = cpuOf() - nodesBefore;
    const pgCpu = pg.cpuMs() - pgBefore;
    if (!served) throw new Error(`no request was served: ${errors[0] ?? 'none sent'}`);
    await new Promise((r) => setTimeout(r, 1500)); // the statistics arrive up to a second late
    const countsAfter = await pg.counters(cluster.url);
    const per = (key) =>
      countsAfter[key] === undefined || countsBefore[key] === undefined
        ? undefined
        : (countsAfter[key] - countsBefore[key]) / served;
    return {
      rps: (served / elapsed) * 1000,
      perRound: rps,
      errors,
      nodesCpu: nodesCpu / served,
      pgCpu: pgCpu / served,
      idle,
      statements: per('statements'),
      transactions: per('transactions'),
    };
  } finally {
    await cluster.stop();
  }
}

async function clusterThroughput(pg, rows, failed) {
  const provider = await fakeProvider();
  const runs = { 1: [], [NODES]: [] };
  try {
    for (let pair = 0; pair < CLUSTER_PAIRS; pair++) {
      for (const count of [1, NODES]) {
        try {
          const result = await loadNodes(pg, provider.url, count);
          runs[count].push(result);
          if (result.errors.length)
            failed(
              `cluster of ${count}`,
              `${result.errors.length} of ${CONCURRENCY * ROUNDS} requests failed, first: ${result.errors[0]}`,
            );
        } catch (error) {
          failed(`cluster of ${count}`, error);
        }
      }
    }
  } finally {
    provider.server.close();
  }
  const of = (count, key) => runs[count].map((r) => r[key]);
  const line = (count) => {
    const list = runs[count];
    if (!list.length) return 'n/a';
    return `${fmt(median(of(count, 'rps')), 0)} (${list.map((r) => r.perRound.map((v) => v.toFixed(0)).join('/')).join('; ')})`;
  };
  const cpuLine = (count) =>
    runs[count].length
      ? `${fmt(median(of(count, 'nodesCpu')))} nodes + ${fmt(median(of(count, 'pgCpu')))} PostgreSQL`
      : 'n/a';
  const idleLine = (count) =>
    runs[count].length
      ? `${fmt(median(runs[count].map((r) => r.idle.nodes)), 1)} nodes + ${fmt(median(runs[count].map((r) => r.idle.pg)), 1)} PostgreSQL; ${fmt(median(runs[count].map((r) => r.idle.statements).filter((v) => v !== undefined)), 1)} statements/s`
      : 'n/a';
  const countLine = (count) => {
    const list = runs[count].filter((r) => r.transactions !== undefined);
    return list.length
      ? `${fmt(median(list.map((r) => r.statements).filter((v) => v !== undefined)), 1)} / ${fmt(median(list.map((r) => r.transactions)), 1)}`
      : 'n/a';
  };
  const one = median(of(1, 'rps'));
  const many = median(of(NODES, 'rps'));
  rows.push(
    {
      name: 'cluster load',
      value: `${CLUSTER_PAIRS} run(s) each, ${CONCURRENCY} concurrent streams × ${ROUNDS} rounds, round-robin; ${cpus().length} cores shared by the nodes, PostgreSQL, the fake model and the load`,
    },
    { name: 'requests/s, 1 node (per round)', value: line(1) },
    { name: `requests/s, ${NODES} nodes (per round)`, value: line(NODES) },
    one && many
      ? {
          name: `throughput, ${NODES} nodes / 1 node`,
          value: (many / one).toFixed(2),
          target: '≥ 2.5',
          pass: many / one >= 2.5,
        }
      : { name: `throughput, ${NODES} nodes / 1 node`, value: 'n/a' },
    { name: 'CPU ms per request, 1 node', value: cpuLine(1) },
    { name: `CPU ms per request, ${NODES} nodes`, value: cpuLine(NODES) },
    { name: 'pg statements / transactions per request, 1 node', value: countLine(1) },
    { name: `pg statements / transactions per request, ${NODES} nodes`, value: countLine(NODES) },
    { name: 'idle CPU ms per second, 1 node', value: idleLine(1) },
    { name: `idle CPU ms per second, ${NODES} nodes`, value: idleLine(NODES) },
  );
}
