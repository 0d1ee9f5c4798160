// Where one warm compat request's wall time goes (issue 17 item 3, "single request added latency"):
// the compat bench's service and load (bench/compat.bench.mjs: 20-request warm-up, BENCH_ROUNDS
// rounds of 200 streaming requests), then BENCH_REQUESTS pairs one at a time, each through svc and
// then straight to the fake provider, as the bench's single-request figure. svc runs with
// bench/profile/timeline-preload.mjs, which marks its request arrivals, socket writes and reads
// and check-phase hops; this process marks the client's send, first text and end and the fake
// provider's request and answer, on the same clock (CLOCK_MONOTONIC). Printed: the medians (and
// ranges) of the spans of the svc requests, and the added latency as the bench computes it.
// BENCH_TIMELINE_DUMP=<file> keeps every mark (the pairs' windows on its first line) to read one
// request through; `globalThis.__mark('name')` in svc's code adds one (a temporary edit).
// BENCH_RENICE=<n> (negative: root) renices svc's threads and this process for the requests one at a
// time, so that other processes on a shared box weigh less on the figure (it still moves with them:
// 3.6–13 ms added at load 6 with `-10`, 2.9–3.3 at load 4.5–6, 14–30 at load 10–14 without).
// BENCH_TIMELINE_STORE=postgres serves from a new database of a throwaway cluster (bench/pg-cluster.mjs)
// and marks the PostgreSQL socket's writes and reads too (`out:pg:<local port>:P,B<statement>,E,S…`,
// `in:pg:…:1,2,C,Z…`): then the requests' most common mark sequence is printed with each mark's
// median ms from the request's arrival and the gap before it (the table of p-pgcritical).
// BENCH_TIMELINE_GAP_MS=<ms>: the fake model sends its first text alone and the rest that many ms
// later (a real model's stream in several reads; `P:first` marks the first). BENCH_TIMELINE_THINK_MS=<ms>:
// the fake model answers that many ms after the request (the direct requests wait as long).
// Not a *.bench.mjs: `node bench/compat-timeline.mjs` (BENCH_SVC_BIN, BENCH_NODE_ARGS as compat's).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compatBody, round, streamOnce } from './compat.bench.mjs';
import { startPostgres } from './pg-cluster.mjs';
import { startService, BENCH_TOKEN as TOKEN, writeCompatConfig } from './service-process.mjs';

const here = import.meta.dirname;
const BIN = process.env.BENCH_SVC_BIN ?? resolve(here, '../dist/main.js');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 30);
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const GAP_MS = Number(process.env.BENCH_TIMELINE_GAP_MS ?? 0);
const THINK_MS = Number(process.env.BENCH_TIMELINE_THINK_MS ?? 0);
const now = () => process.hrtime.bigint();
const own = [];

// The compat bench's fake provider, with marks.
const provider = createServer((req, res) => {
  own.push([now(), 'P:request']);
  req.resume();
  // BENCH_TIMELINE_THINK_MS: the model thinks that many ms before its answer (a real model's wait:
  // whether svc's work after the model request is hidden in it).
  req.on('end', () => (THINK_MS > 0 ? setTimeout(answer, THINK_MS) : answer()));
  const answer = () => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const base = { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm1' };
    const chunk = (delta, finish = null, extra = {}) =>
      `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
    const rest = () => {
      res.write(chunk({ content: 'from the fake provider.' }));
      res.write(chunk({}, 'stop', { usage: { prompt_tokens: 20, completion_tokens: 6, total_tokens: 26 } }));
      res.end('data: [DONE]\n\n');
      own.push([now(), 'P:answered']);
    };
    res.write(chunk({ role: 'assistant', content: 'Hello ' }));
    // BENCH_TIMELINE_GAP_MS: the first text alone, the rest that many ms later (a real model's
    // stream, several reads): whether svc's first text waits for anything but the first read.
    if (GAP_MS > 0) {
      own.push([now(), 'P:first']);
      setTimeout(rest, GAP_MS);
    } else rest();
  };
});
await new Promise((done) => provider.listen(0, '127.0.0.1', done));
const providerUrl = `http://127.0.0.1:${provider.address().port}/v1`;
const ws = mkdtempSync(join(tmpdir(), 'svc-bench-timeline-'));
writeCompatConfig(ws, providerUrl);
const file = join(ws, 'marks.txt');
const cluster = process.env.BENCH_TIMELINE_STORE === 'postgres' ? await startPostgres() : undefined;
const storeEnv = cluster
  ? {
      SVC_STORE_URL: await cluster.createDatabase('svc_bench_timeline'),
      TIMELINE_PG_PORT: String(cluster.port),
    }
  : {};
const started = startService({
  bin: BIN,
  ws,
  nodeArgs: [...NODE_ARGS, '--import', resolve(here, 'profile/timeline-preload.mjs')],
  env: { TIMELINE_FILE: file, ...storeEnv },
  stderr: 'inherit',
});
const child = started.child;
try {
  const svcUrl = `${await started.url}/v1`;
  const body = compatBody('bench request');
  const auth = { authorization: `Bearer ${TOKEN}` };
  await round(20, (i) => streamOnce(svcUrl, auth, body(i)));
  await round(20, (i) => streamOnce(providerUrl, {}, body(i)));
  for (let r = 0; r < ROUNDS; r++) {
    await round(200, (i) => streamOnce(svcUrl, auth, body(i)));
    await new Promise((wait) => setTimeout(wait, 500));
  }
  const dump = async () => {
    child.kill('SIGUSR2');
    await new Promise((wait) => setTimeout(wait, 300));
  };
  if (process.env.BENCH_RENICE) {
    const threads = readdirSync(`/proc/${child.pid}/task`);
    // The cluster's processes (its backends: the statements' other end) too.
    const backends = cluster ? clusterPids(cluster.port) : [];
    execFileSync('renice', [
      '-n',
      process.env.BENCH_RENICE,
      '-p',
      ...threads,
      ...backends,
      String(process.pid),
    ]);
  }
  await dump();
  own.length = 0;
  const pairs = [];
  for (let i = 0; i < REQUESTS; i++) {
    const viaSvc = await timed(svcUrl, auth, body(i), 'svc');
    const direct = await timed(providerUrl, {}, body(i), 'direct');
    pairs.push({ viaSvc, direct });
  }
  await dump();
  const marks = [
    ...readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const at = line.indexOf(' ');
        return [BigInt(line.slice(0, at)), `S:${line.slice(at + 1)}`];
      }),
    ...own,
  ].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  report(pairs, marks);
  sequence(pairs, marks);
  if (process.env.BENCH_TIMELINE_DUMP) {
    const windows = pairs.map(({ viaSvc }) => [String(viaSvc.start), String(viaSvc.end)]);
    writeFileSync(
      process.env.BENCH_TIMELINE_DUMP,
      `${JSON.stringify(windows)}\n${marks.map(([at, name]) => `${at} ${name}`).join('\n')}\n`,
    );
  }
} finally {
  child.kill('SIGTERM');
  provider.close();
  await new Promise((wait) => setTimeout(wait, 300));
  rmSync(ws, { recursive: true, force: true });
  cluster?.stop();
}

/** One streaming request read as it arrives, with marks. */
async function timed(url, headers, requestBody, tag) {
  const start = now();
  own.push([start, `C:${tag}:send`]);
  const response = await fetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(requestBody),
  });
  const decoder = new TextDecoder();
  let text = '';
  let first;
  for await (const bytes of response.body) {
    text += decoder.decode(bytes, { stream: true });
    if (first === undefined && /"content":"[^"]/.test(text)) first = now();
  }
  if (!text.trimEnd().endsWith('data: [DONE]')) throw new Error(`no [DONE]: ${text.slice(-200)}`);
  const end = now();
  own.push([end, `C:${tag}:end`]);
  return { start, first, end };
}

function report(pairs, marks) {
  const ms = (from, to) => Number(to - from) / 1e6;
  const gcHit = [];
  const spans = new Map();
  const add = (name, value) => {
    if (value === undefined || Number.isNaN(value)) return;
    if (!spans.has(name)) spans.set(name, []);
    spans.get(name).push(value);
  };
  for (const { viaSvc, direct } of pairs) {
    const inside = marks.filter(([at]) => at >= viaSvc.start && at <= viaSvc.end);
    const first = (test, after = 0n) => inside.find(([at, name]) => at >= after && test(name))?.[0];
    const arrived = first((n) => n === 'S:req:start');
    const head = first((n) => n.startsWith('S:out:cli') && n.includes('role'));
    const modelOut = first((n) => n.startsWith('S:out:prov') && n.includes('request'));
    const answered = first((n) => n === 'P:answered');
    const answerIn = first((n) => n.startsWith('S:in:prov'));
    const textOut = first((n) => n.startsWith('S:out:cli') && n.includes('text'));
    const doneOut = first((n) => n.startsWith('S:out:cli') && n.includes('done'));
    add('client send → request in svc', ms(viaSvc.start, arrived));
    add('request in → model request written', ms(arrived, modelOut));
    add('request in → head and role written', ms(arrived, head));
    add('model request written → answer read', ms(modelOut, answerIn));
    add('  of which: provider answered → answer read', ms(answered, answerIn));
    add('answer read → first text written', ms(answerIn, textOut));
    add('first text written → [DONE] written', ms(textOut, doneOut));
    add('[DONE] written → client has it', ms(doneOut, viaSvc.end));
    // After the model's last read (its last byte): the PostgreSQL statements' socket writes and the
    // waits for their answers (a write whose connection answers before svc's next write), p-pgtail.
    const lastIn = inside.findLast(([, n]) => n.startsWith('S:in:prov'))?.[0];
    if (lastIn !== undefined && inside.some(([, n]) => n.startsWith('S:out:pg'))) {
      const after = inside.filter(
        ([at, n]) => at >= lastIn && /^S:(out|in):pg:\d+:/.test(n) && !/:A(x\d+)?$/.test(n),
      );
      let writes = 0;
      let trips = 0;
      let waiting = false;
      for (const [, n] of after) {
        if (n.startsWith('S:out:pg')) {
          writes++;
          waiting = true;
        } else if (waiting) {
          trips++;
          waiting = false;
        }
      }
      add("pg writes after the model's last read", writes);
      add("pg round trips after the model's last read", trips);
      add("model's last read → [DONE] written", ms(lastIn, doneOut));
    }
    add('total through svc', ms(viaSvc.start, viaSvc.end));
    add('total direct', ms(direct.start, direct.end));
    add('added (svc − direct)', ms(viaSvc.start, viaSvc.end) - ms(direct.start, direct.end));
    add('added to first text', ms(viaSvc.start, viaSvc.first) - ms(direct.start, direct.first));
    // A pause that began before the request and lasted into it counts too.
    const pauses = marks.filter(
      ([at, name]) =>
        name.startsWith('S:gc:') &&
        at <= viaSvc.end &&
        at + BigInt(Math.round(Number(name.split(' ')[1]) * 1e6)) >= viaSvc.start,
    );
    if (pauses.length) gcHit.push(pauses.reduce((sum, [, name]) => sum + Number(name.split(' ')[1]), 0));
  }
  const gcAll = marks.filter(([, name]) => name.startsWith('S:gc:')).map(([, name]) => name.slice(5));
  const sorted = (values) => [...values].sort((a, b) => a - b);
  process.stdout.write(
    `${pairs.length} requests one at a time after ${ROUNDS} rounds of 200; ms, median [p25–p75]\n`,
  );
  for (const [name, values] of spans) {
    const s = sorted(values);
    const at = (p) => s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))].toFixed(3);
    process.stdout.write(`${name.padEnd(46)} ${at(50)} [${at(25)}–${at(75)}]\n`);
  }
  process.stdout.write(
    `GC pauses of svc over the ${pairs.length} pairs: ${gcAll.join(', ') || 'none'}; within a svc request: ${gcHit.length} (${gcHit.map((v) => v.toFixed(2)).join(', ')} ms)\n`,
  );
}

/**
 * The svc requests' marks (check-phase hops and GC left out, counted) as sequences of names from the
 * request's arrival to the client's end; for the most common sequence, each mark's median ms from
 * the arrival and the median gap from the mark before it.
 */
function sequence(pairs, marks) {
  const bySignature = new Map();
  for (const { viaSvc } of pairs) {
    const inside = marks.filter(([at]) => at >= viaSvc.start && at <= viaSvc.end);
    const arrived = inside.find(([, name]) => name === 'S:req:start')?.[0];
    if (arrived === undefined) continue;
    const rows = [];
    let hops = 0;
    for (const [at, name] of inside) {
      // A read of notifications only (the LISTEN connection's) is left out: its timing varies.
      if (at < arrived || name.startsWith('S:gc:') || name.startsWith('S:parse:')) continue;
      if (/^S:in:pg:\d+:A(x\d+)?$/.test(name)) continue;
      if (name === 'S:imm') {
        hops++;
        continue;
      }
      // The local port of a pg socket varies by run: named by order of first use in the request.
      rows.push([at, name, hops]);
      hops = 0;
    }
    rows.push([viaSvc.end, 'C:svc:end', hops]);
    const ports = new Map();
    const named = rows.map(([at, name, h]) => {
      const match = /^S:(out|in):pg:(\d+):/.exec(name);
      if (!match) return [at, name, h];
      if (!ports.has(match[2])) ports.set(match[2], `c${ports.size + 1}`);
      return [at, name.replace(`:${match[2]}:`, `:${ports.get(match[2])}:`), h];
    });
    const signature = named.map(([, name]) => name).join('\n');
    if (!bySignature.has(signature)) bySignature.set(signature, []);
    bySignature.get(signature).push(named.map(([at, , h]) => [Number(at - arrived) / 1e6, h]));
  }
  const statements = new Map();
  for (const [, name] of marks) {
    if (!name.startsWith('S:parse:')) continue;
    const text = name.slice(8);
    const at = text.indexOf(' ');
    if (text.slice(0, at)) statements.set(text.slice(0, at), text.slice(at + 1));
  }
  const ranked = [...bySignature].sort((a, b) => b[1].length - a[1].length);
  if (!ranked.length) return;
  const [signature, runs] = ranked[0];
  const median = (values) => {
    const s = [...values].sort((a, b) => a - b);
    return s[Math.floor(s.length / 2)];
  };
  process.stdout.write(
    `\nmost common mark sequence: ${runs.length} of ${pairs.length} requests (${ranked.length} sequences); ms from the request's arrival, median: at, gap from the mark before, check-phase hops before it\n`,
  );
  signature.split('\n').forEach((name, i) => {
    const at = median(runs.map((r) => r[i][0]));
    const gap = i ? median(runs.map((r) => r[i][0] - r[i - 1][0])) : 0;
    const hops = median(runs.map((r) => r[i][1]));
    process.stdout.write(
      `${at.toFixed(3).padStart(8)} ${gap.toFixed(3).padStart(7)} ${String(hops).padStart(2)}  ${name.slice(0, 150)}\n`,
    );
  });
  const used = new Set([...signature.matchAll(/B<(\w+)>/g)].map((m) => m[1]));
  for (const name of used) process.stdout.write(`${name}: ${(statements.get(name) ?? '?').slice(0, 300)}\n`);
}

/** The pids of the cluster's processes: the postmaster listening on `port` and its children. */
function clusterPids(port) {
  const pids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (command.includes('postgres') && (command.includes(`-p\0${port}`) || command.includes(`-p ${port}`)))
        pids.push(entry);
    } catch {
      // gone
    }
  }
  const children = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const parent = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ')[1];
      if (pids.includes(parent)) children.push(entry);
    } catch {
      // gone
    }
  }
  return [...pids, ...children];
}
