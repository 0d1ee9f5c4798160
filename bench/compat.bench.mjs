// Compat surface under load: 200 concurrent streaming `POST /v1/chat/completions` against the
// built `svc service start http`, with an instant fake OpenAI-compatible provider behind it (in
// this process). The same 200 requests sent straight to the fake provider are the baseline, so
// "added latency" is what svc costs per request: a fresh session, the agent run (system prompt,
// model resolution, the AI SDK stream, message and ledger writes, bus events) and the SSE
// re-encoding. Reported: requests/s, p50/p95 latency both ways, the p50 added latency over 5 rounds
// of 200 (and for one request at a time, with no queuing, with the added time to the first chunk
// of answer text), errors, svc's CPU per request (utime +
// stime from /proc over the 5 rounds), its peak RSS (VmHWM) and RSS after rounds 1, 3 and 5, and
// from its `--trace-gc` lines (./gc-trace.mjs) the heap after the last full GC of rounds 3 and 5
// and the full GCs per 1,000 requests over the 5 rounds (a count a loaded box does not move).
// BENCH_SVC_BIN runs another build (a main checkout) for a side-by-side comparison.
// BENCH_COMPAT_TARGET=floor measures ./compat-floor.mjs instead of svc (the same load and CPU
// accounting: a minimal gateway in plain Node with one SQLite transaction a request),
// `floor-2commits` with svc's two commits a request, `floor-nosql` the floor without its SQLite
// part; `node bench/compat-floor.mjs` runs them side by side with svc.
// Targets (issue 17): zero errors, p50 added latency ≤ 300 ms, peak RSS ≤ 200 MB, CPU per request
// ≤ 3 ms; no RSS growth between rounds 3 and 5.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gcTrace } from './gc-trace.mjs';
import { startService, BENCH_TOKEN as TOKEN, writeCompatConfig } from './service-process.mjs';

const BIN =
  process.env.BENCH_SVC_BIN ??
  resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../dist/main.js');
const DEFAULT_CONCURRENCY = Number(process.env.BENCH_COMPAT_CONCURRENCY ?? 200);
const DEFAULT_ROUNDS = Number(process.env.BENCH_COMPAT_ROUNDS ?? 5);
const FLOOR = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, 'compat-floor.mjs');
/** The process a target names: its entry point and environment. */
const TARGETS = {
  svc: { bin: BIN, env: {} },
  floor: { bin: FLOOR, env: {} },
  'floor-2commits': { bin: FLOOR, env: { FLOOR_COMMITS: '2' } },
  'floor-nosql': { bin: FLOOR, env: { FLOOR_SQLITE: '0' } },
};
// Then BENCH_COMPAT_WARM_ROUNDS (default 10) more rounds, the CPU of their last 5 reported on its own:
// the JIT keeps optimizing the request's path for ≈ 10 rounds of 200 (bench/compat-rounds.mjs), so
// the 5 rounds above are a service just started; these say what a warm one spends. 0 skips them.
const WARM_ROUNDS = Number(process.env.BENCH_COMPAT_WARM_ROUNDS ?? 10);
// Requests one at a time for the single-request figures, each through svc then straight to the fake
// provider (30 until stop 70: one build's p50 of 30 moved 3.8–6.7 ms between runs on a quiet box).
// They run after the measured rounds, and again after the warm rounds (a row of its own, no target).
const SINGLE_PAIRS = Number(process.env.BENCH_COMPAT_SINGLE ?? 100);
// BENCH_NODE_ARGS adds Node flags to the service (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const TICK_MS = 10; // USER_HZ is 100 on Linux

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

function rssMb(pid, field = 'VmRSS') {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]);
    return Number.isFinite(kb) ? kb / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** utime + stime of a live process in ms, or undefined without /proc. */
export function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return undefined;
  }
}

/**
 * The live JS heap of svc in MB: a heap snapshot (taken after a full GC) through
 * --heapsnapshot-signal, summed. RSS alone moves with V8's reservations between bursts. Nothing
 * may be measured after it: the snapshot leaves V8 tracking object moves in every later GC.
 */
async function heapMb(child, dir) {
  const before = new Set(readdirSync(dir));
  child.kill('SIGUSR2');
  const deadline = Date.now() + 60_000;
  for (;;) {
    const file = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (file) {
      const path = join(dir, file);
      const size = statSync(path).size;
      await new Promise((r) => setTimeout(r, 500));
      if (size > 0 && statSync(path).size === size) {
        try {
          const snapshot = JSON.parse(readFileSync(path, 'utf8'));
          const fields = snapshot.snapshot.meta.node_fields;
          const at = fields.indexOf('self_size');
          let total = 0;
          for (let i = at; i < snapshot.nodes.length; i += fields.length) total += snapshot.nodes[i];
          rmSync(path);
          return total / 1024 / 1024;
        } catch {
          // still being written
        }
      }
    }
    if (Date.now() > deadline) return undefined;
    await new Promise((r) => setTimeout(r, 250));
  }
}

export function fakeProvider() {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const base = { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm1' };
      const chunk = (delta, finish = null, extra = {}) =>
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
      res.write(chunk({ role: 'assistant', content: 'Hello ' }));
      res.write(chunk({ content: 'from the fake provider.' }));
      res.write(chunk({}, 'stop', { usage: { prompt_tokens: 20, completion_tokens: 6, total_tokens: 26 } }));
      res.end('data: [DONE]\n\n');
    });
  });
  return new Promise((resolvePromise) =>
    server.listen(0, '127.0.0.1', () =>
      resolvePromise({ server, url: `http://127.0.0.1:${server.address().port}/v1` }),
    ),
  );
}

/** The compat request every bench sends: request `i`'s one user message is `<label> <i>`. */
export const compatBody = (label) => (i) => ({
  model: 'fake/m1',
  stream: true,
  stream_options: { include_usage: true },
  messages: [{ role: 'user', content: `${label} ${i}` }],
});

export async function streamOnce(url, headers, body) {
  const started = performance.now();
  const response = await fetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  const text = await response.text();
  if (!text.trimEnd().endsWith('data: [DONE]')) throw new Error(`no [DONE]: ${text.slice(-200)}`);
  const at = text.indexOf('"error"');
  if (at >= 0) throw new Error(`error chunk: ${text.slice(at, at + 300)}`);
  return performance.now() - started;
}

export async function round(n, fn) {
  const started = performance.now();
  const results = await Promise.allSettled(Array.from({ length: n }, (_, i) => fn(i)));
  const elapsed = performance.now() - started;
  const latencies = results.filter((r) => r.status === 'fulfilled').map((r) => r.value);
  const errors = results
    .filter((r) => r.status === 'rejected')
    .map((r) => String(r.reason?.message ?? r.reason));
  return { latencies, errors, rps: (latencies.length / elapsed) * 1000 };
}

/**
 * `options.concurrency`, `options.rounds` and `options.warmRounds` override BENCH_COMPAT_CONCURRENCY,
 * BENCH_COMPAT_ROUNDS and BENCH_COMPAT_WARM_ROUNDS (bench/store.bench.mjs runs a smaller load);
 * `options.target` BENCH_COMPAT_TARGET (`svc`, `floor`, `floor-2commits`, `floor-nosql`).
 */
export async function run(options = {}) {
  const CONCURRENCY = options.concurrency ?? DEFAULT_CONCURRENCY;
  const ROUNDS = options.rounds ?? DEFAULT_ROUNDS;
  const WARM = options.warmRounds ?? WARM_ROUNDS;
  const targetName = options.target ?? process.env.BENCH_COMPAT_TARGET ?? 'svc';
  const target = TARGETS[targetName];
  if (!target)
    throw new Error(`BENCH_COMPAT_TARGET: no target ${targetName} (${Object.keys(TARGETS).join(', ')})`);
  const ws = mkdtempSync(join(tmpdir(), 'svc-bench-compat-'));
  const provider = await fakeProvider();
  let child;
  try {
    writeCompatConfig(ws, provider.url);
    const diag = join(ws, 'diag');
    mkdirSync(diag);
    const gcs = gcTrace();
    const started = startService({
      bin: target.bin,
      ws,
      onLine: gcs.onLine,
      nodeArgs: [...NODE_ARGS, '--trace-gc', '--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${diag}`],
      // BENCH_STORE_URL serves from that PostgreSQL store (issue 18) instead of SQLite.
      // SVC_STEP_ONCE=0: a text step's message written at its first delta (p-heldstep), for A/B.
      env: {
        ...target.env,
        ...(process.env.BENCH_STORE_URL ? { SVC_STORE_URL: process.env.BENCH_STORE_URL } : {}),
        ...(process.env.SVC_STEP_ONCE ? { SVC_STEP_ONCE: process.env.SVC_STEP_ONCE } : {}),
      },
    });
    child = started.child;
    const svcUrl = `${await started.url}/v1`;
    const body = compatBody('bench request');
    const auth = { authorization: `Bearer ${TOKEN}` };
    // Warm-up: lazy imports, JIT, statement caches, connection pools on both sides.
    await round(20, (i) => streamOnce(svcUrl, auth, body(i)));
    await round(20, (i) => streamOnce(provider.url, {}, body(i)));
    const rssWarm = rssMb(child.pid);

    const direct = await round(CONCURRENCY, (i) => streamOnce(provider.url, {}, body(i)));
    const p50Direct = percentile(direct.latencies, 50);
    const cpuBefore = cpuMs(child.pid);
    const rounds = [];
    const rss = [];
    const gcRounds = [];
    gcs.take();
    for (let r = 0; r < ROUNDS; r++) {
      rounds.push(await round(CONCURRENCY, (i) => streamOnce(svcUrl, auth, body(i))));
      await new Promise((resolveWait) => setTimeout(resolveWait, 500));
      rss.push(rssMb(child.pid));
      gcRounds.push(gcs.take());
    }
    const cpuAfter = cpuMs(child.pid);
    const peak = rssMb(child.pid, 'VmHWM');

    const all = rounds.flatMap((r) => r.latencies);
    const p50Svc = percentile(all, 50);
    const added = p50Svc - p50Direct;
    const errorsOf = [direct, ...rounds].flatMap((r) => r.errors);
    const errors = errorsOf.length;
    const served = all.length;
    if (!served) throw new Error(`no request was served: ${errorsOf[0] ?? 'no request sent'}`);
    const cpuPerRequest =
      cpuBefore !== undefined && cpuAfter !== undefined && served
        ? (cpuAfter - cpuBefore) / served
        : undefined;
    const single = await sequential(svcUrl, provider.url, auth, body);
    const warm = await warmCpu(child.pid, ROUNDS, WARM, () =>
      round(CONCURRENCY, (i) => streamOnce(svcUrl, auth, body(i))),
    );
    const singleWarm = warm && (await sequential(svcUrl, provider.url, auth, body));
    // Last: once a heap snapshot is taken, V8 tracks every object the GC moves for the heap
    // profiler, for the rest of the process (allocation-heavy code 3–4x the CPU after it). Taken
    // after round 5 until stop 77, it put ≈ 1 ms on each later request: the single requests and
    // the warm rounds measured a process the bench had slowed (docs/performance-log.md).
    const heapLast = await heapMb(child, diag);
    const lastRound = warm ? warm.to : ROUNDS;
    const rows = [
      { name: 'concurrent streaming requests × rounds', value: `${CONCURRENCY} × ${ROUNDS}` },
      { name: 'direct to the fake provider: requests/s', value: direct.rps.toFixed(0) },
      {
        name: 'direct: p50 / p95 latency (ms)',
        value: `${p50Direct.toFixed(1)} / ${percentile(direct.latencies, 95).toFixed(1)}`,
      },
      { name: 'through svc: requests/s per round', value: rounds.map((r) => r.rps.toFixed(0)).join(' / ') },
      {
        name: 'through svc: p50 / p95 latency (ms)',
        value: `${p50Svc.toFixed(1)} / ${percentile(all, 95).toFixed(1)}`,
      },
      {
        name: 'added latency per request, p50 (ms)',
        value: added.toFixed(1),
        target: '≤ 300',
        pass: added <= 300,
      },
      {
        name: 'added latency, single request p50 (ms)',
        value: single.added.toFixed(1),
        target: '≤ 3',
        pass: single.added <= 3,
      },
      {
        name: 'added time to first content chunk, p50 (ms)',
        value: single.firstContent.toFixed(1),
        target: '≤ 5',
        pass: single.firstContent <= 5,
      },
      { name: 'errors', value: String(errors), target: '0', pass: errors === 0 },
    ];
    if (errors) rows.push({ name: 'first error', value: errorsOf[0].slice(0, 200) });
    if (cpuPerRequest !== undefined) {
      rows.push({
        name: 'svc CPU per request, all threads (ms)',
        value: cpuPerRequest.toFixed(2),
        target: '≤ 3',
        pass: cpuPerRequest <= 3,
      });
    }
    if (warm !== undefined) {
      rows.push({
        name: `svc CPU per request once warm, rounds ${warm.from}–${warm.to} (ms)`,
        value: warm.cpuPerRequest.toFixed(2),
      });
    }
    if (singleWarm) {
      rows.push({
        name: `added latency, single request / first content chunk p50 once warm, after round ${warm.to} (ms)`,
        value: `${singleWarm.added.toFixed(1)} / ${singleWarm.firstContent.toFixed(1)}`,
      });
    }
    if (rssWarm !== undefined && peak !== undefined) {
      rows.push({
        name: 'svc RSS after warm-up / rounds 1, 3, 5 (MB)',
        value: [rssWarm, rss[0], rss[2], rss.at(-1)].map((v) => (v ?? Number.NaN).toFixed(0)).join(' / '),
      });
      rows.push({ name: 'svc peak RSS (MB)', value: peak.toFixed(0), target: '≤ 200', pass: peak <= 200 });
      if (rss.length >= 5) {
        const growth = rss[4] - rss[2];
        rows.push({ name: 'svc RSS growth, round 3 → 5 (MB)', value: growth.toFixed(1) });
      }
    }
    const live = gcRounds.map((g) => g.liveAfterFullGc);
    if (live.length >= 5 && live[2] !== undefined && live[4] !== undefined) {
      rows.push({
        name: 'svc heap after last full GC, rounds 3, 5 (MB)',
        value: `${live[2].toFixed(1)} / ${live[4].toFixed(1)}`,
      });
    }
    if (served) {
      const fullGcs = gcRounds.reduce((sum, g) => sum + g.fullGcs, 0);
      const scavenges = gcRounds.reduce((sum, g) => sum + g.scavenges, 0);
      rows.push({
        name: 'svc full GCs / scavenges per 1,000 requests',
        value: `${((fullGcs * 1000) / served).toFixed(1)} / ${((scavenges * 1000) / served).toFixed(1)}`,
      });
    }
    if (heapLast !== undefined) {
      rows.push({
        name: `svc live JS heap at the end, after round ${lastRound} (MB)`,
        value: heapLast.toFixed(1),
      });
    }
    return rows;
  } finally {
    child?.kill('SIGTERM');
    provider.server.close();
    await new Promise((r) => setTimeout(r, 300));
    rmSync(ws, { recursive: true, force: true });
  }
}

/**
 * `warmRounds` more rounds after the `rounds` measured ones; svc's CPU per request over the last 5
 * of them (numbered on from the measured rounds), or undefined when skipped or unreadable.
 */
async function warmCpu(pid, rounds, warmRounds, oneRound) {
  if (warmRounds <= 0) return undefined;
  const measured = Math.min(5, warmRounds);
  let cpuBefore;
  let served = 0;
  for (let r = 0; r < warmRounds; r++) {
    if (r === warmRounds - measured) cpuBefore = cpuMs(pid);
    const result = await oneRound();
    if (r >= warmRounds - measured) served += result.latencies.length;
    await new Promise((resolveWait) => setTimeout(resolveWait, 500));
  }
  const cpuAfter = cpuMs(pid);
  if (cpuBefore === undefined || cpuAfter === undefined || !served) return undefined;
  return {
    from: rounds + warmRounds - measured + 1,
    to: rounds + warmRounds,
    cpuPerRequest: (cpuAfter - cpuBefore) / served,
  };
}

/**
 * The added latency of one request at a time (no queuing), and the added time to the first chunk
 * with answer text: medians of 30 pairs.
 */
async function sequential(svcUrl, providerUrl, auth, body) {
  const diffs = [];
  const firstDiffs = [];
  for (let i = 0; i < SINGLE_PAIRS; i++) {
    const viaSvc = await timedStream(svcUrl, auth, body(i));
    const direct = await timedStream(providerUrl, {}, body(i));
    diffs.push(viaSvc.total - direct.total);
    firstDiffs.push(viaSvc.firstContent - direct.firstContent);
  }
  return { added: percentile(diffs, 50), firstContent: percentile(firstDiffs, 50) };
}

/** One streaming request read as it arrives: the whole time and the time to the first answer text. */
async function timedStream(url, headers, body) {
  const started = performance.now();
  const response = await fetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  const decoder = new TextDecoder();
  let text = '';
  let firstContent;
  for await (const bytes of response.body) {
    text += decoder.decode(bytes, { stream: true });
    if (firstContent === undefined && /"content":"[^"]/.test(text))
      firstContent = performance.now() - started;
  }
  if (!text.trimEnd().endsWith('data: [DONE]')) throw new Error(`no [DONE]: ${text.slice(-200)}`);
  return { total: performance.now() - started, firstContent: firstContent ?? Number.NaN };
}
