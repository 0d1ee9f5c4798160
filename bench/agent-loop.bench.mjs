// Agent-loop overhead per tool step: `svc run` (the built binary) against a fake OpenAI-compatible
// server that answers instantly with one tool call per step (`get_workflow_phase`, a cheap read).
// svc time per step, excluding the model: at the server, from the end of one response to the
// arrival of the next request (SSE parsing, the tool call through the registry and the permission
// service, ledger and message writes, the bus, building and sending the next request through the
// AI SDK and fetch). Median over the steady steps (the first ones warm up lazy imports and JIT).
// Also reported: the svc process's CPU time per step from /proc (all threads: GC and JIT helper
// threads count too, so it can exceed the wall time).
// Target (issue 17): at most 3 ms of svc time per step.
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// BENCH_SVC_BIN runs another build (a main checkout) for a side-by-side comparison.
const BIN =
  process.env.BENCH_SVC_BIN ??
  resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../dist/main.js');
const STEPS = Number(process.env.BENCH_STEPS ?? 100);
// BENCH_CALLS: the calls a tool step makes (default 1), each `get_workflow_phase` (p-heldmulti: a
// step of several read-only calls).
const CALLS = Math.max(1, Number(process.env.BENCH_CALLS ?? 1));
// BENCH_NODE_ARGS adds Node flags to the svc process (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
// BENCH_EXPOSURE runs one tool exposure only ("all" or "deferred").
const EXPOSURES = (process.env.BENCH_EXPOSURE ?? 'all,deferred').split(',');
const TICK_MS = 10; // USER_HZ is 100 on Linux
// BENCH_LOOP_TRACE=<file>: the server's marks (`<µs CLOCK_MONOTONIC> model request N arrived`,
// `… model response N ended`), appended once the run ended, for bench/step-timeline.mjs.
const TRACE = process.env.BENCH_LOOP_TRACE;

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

/** utime + stime of a live process in ms, or undefined without /proc. */
function cpuMs(pid) {
  const file = `/proc/${pid}/stat`;
  if (!pid || !existsSync(file)) return undefined;
  const fields = readFileSync(file, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

function startServer(steps, childPid) {
  let count = 0;
  const gaps = [];
  const cpu = {};
  const marks = {};
  const trace = [];
  let lastEnd;
  const server = createServer((req, res) => {
    if (!req.url?.includes('/chat/completions')) {
      // The context-window and model-list probes (src/providers/server-models.ts): this server tells nothing.
      req.resume();
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no route"}}');
      return;
    }
    const arrived = process.hrtime.bigint();
    if (lastEnd !== undefined) gaps.push(Number(arrived - lastEnd) / 1e6);
    if (TRACE) trace.push(`${arrived / 1000n} model request ${count + 1} arrived`);
    req.resume();
    req.on('end', () => {
      count++;
      if (count === 1) cpu.first = cpuMs(childPid());
      if (count === steps + 1) cpu.last = cpuMs(childPid());
      // BENCH_MARKS=<file>: the steady steps' CLOCK_MONOTONIC span in µs (the clock of `perf record
      // -k mono` and of --cpu-prof), from the 11th request to the last, for bench/profile/perf-slices.mjs.
      if (process.env.BENCH_MARKS && count === Math.min(11, steps)) marks.start = monotonicUs();
      if (process.env.BENCH_MARKS && count === steps + 1) {
        writeFileSync(
          process.env.BENCH_MARKS,
          JSON.stringify([{ label: 'round 1', ...marks, end: monotonicUs() }]),
        );
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const base = { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm1' };
      const chunk = (delta, finish = null, extra = {}) =>
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
      const usage = { usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 } };
      if (count <= steps) {
        res.write(
          chunk({
            role: 'assistant',
            tool_calls: Array.from({ length: CALLS }, (_, index) => ({
              index,
              id: CALLS === 1 ? `call_${count}` : `call_${count}_${index}`,
              type: 'function',
              function: { name: 'get_workflow_phase', arguments: '{}' },
            })),
          }),
        );
        res.write(chunk({}, 'tool_calls', usage));
      } else {
        res.write(chunk({ role: 'assistant', content: 'done' }));
        res.write(chunk({}, 'stop', usage));
      }
      res.end('data: [DONE]\n\n');
      lastEnd = process.hrtime.bigint();
      if (TRACE) trace.push(`${lastEnd / 1000n} model response ${count} ended`);
    });
  });
  return new Promise((resolvePromise) =>
    server.listen(0, '127.0.0.1', () =>
      resolvePromise({ server, gaps, cpu, trace, port: server.address().port }),
    ),
  );
}

export async function run() {
  // Once with options.tool_exposure = "all" (every tool schema on every step), once with "deferred"
  // (the core tools only: what `auto` gives a model with no known window or a small one).
  if (EXPOSURES.length === 1) return runOnce(EXPOSURES[0]);
  const all = await runOnce('all');
  const deferred = await runOnce('deferred');
  return [
    ...all,
    ...deferred
      .filter((row) => row.name.startsWith('svc time per step, median'))
      .map((row) => ({ ...row, name: 'svc time per step, median, tool_exposure deferred (ms)' })),
  ];
}

/** One `svc run` of STEPS tool steps with that tool exposure (bench/store.bench.mjs runs it too). */
export async function runOnce(exposure) {
  const ws = mkdtempSync(join(tmpdir(), 'svc-bench-loop-'));
  let child;
  const { server, gaps, cpu, trace, port } = await startServer(STEPS, () => child?.pid);
  try {
    writeFileSync(
      join(ws, 'svc.toml'),
      `[providers.fake]\ntype = "openai-compat"\nbase_url = "http://127.0.0.1:${port}/v1"\n[models]\nlarge = "fake/m1"\n[options]\ntool_exposure = "${exposure}"\n[options.loop_detection]\nmax_repeats = 100000\n`,
    );
    const env = {
      PATH: process.env.PATH,
      HOME: join(ws, '.home'),
      XDG_DATA_HOME: join(ws, '.home', 'share'),
      ...(process.env.SVC_GROUP_COMMIT ? { SVC_GROUP_COMMIT: process.env.SVC_GROUP_COMMIT } : {}),
      // SVC_STEP_ONCE=0: a lone read-only call's start written before it runs (p-heldstep), for A/B.
      ...(process.env.SVC_STEP_ONCE ? { SVC_STEP_ONCE: process.env.SVC_STEP_ONCE } : {}),
      // BENCH_STORE_URL runs svc on that PostgreSQL store (issue 18) instead of SQLite.
      ...(process.env.BENCH_STORE_URL ? { SVC_STORE_URL: process.env.BENCH_STORE_URL } : {}),
      // bench/sqlite-statements.mjs: the statements counted by their callers.
      ...(process.env.SVC_COUNT_STACKS ? { SVC_COUNT_STACKS: process.env.SVC_COUNT_STACKS } : {}),
    };
    const started = process.hrtime.bigint();
    let stderr = '';
    const code = await new Promise((resolvePromise) => {
      child = spawn(
        process.execPath,
        [...NODE_ARGS, BIN, 'run', '--max-steps', String(STEPS + 5), '--yolo', 'bench'],
        {
          cwd: ws,
          env,
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      child.on('exit', resolvePromise);
    });
    const total = Number(process.hrtime.bigint() - started) / 1e6;
    if (code !== 0) {
      // The first line that is not one of Node's warnings (svc prints its error as one line).
      const first = stderr.split('\n').find((l) => l.trim() && !/^\((node:\d+|Use `node)/.test(l));
      throw new Error(`svc run exited ${code}${first ? `: ${first}` : ''}`);
    }
    if (!gaps.length) throw new Error('svc run made no tool step: is BENCH_STEPS at least 1?');
    // The first steps warm up (lazy imports, JIT, statement cache): up to 5, at most half the run.
    const steady = gaps.slice(Math.min(5, Math.floor(gaps.length / 2)));
    const wall = percentile(steady, 50);
    const perStepCpu =
      cpu.first !== undefined && cpu.last !== undefined ? (cpu.last - cpu.first) / STEPS : undefined;
    const rows = [
      { name: 'tool steps', value: String(gaps.length) },
      { name: 'svc time per step, median (ms)', value: wall.toFixed(2), target: '≤ 3', pass: wall <= 3 },
      { name: 'svc time per step, p95 (ms)', value: percentile(steady, 95).toFixed(2) },
    ];
    if (perStepCpu !== undefined) {
      rows.push({ name: 'svc CPU per step, all threads (ms)', value: perStepCpu.toFixed(2) });
    }
    rows.push({ name: 'whole svc run (ms)', value: total.toFixed(0) });
    return rows;
  } finally {
    server.close();
    if (TRACE) appendFileSync(TRACE, trace.map((line) => `${line}\n`).join(''));
    if (!process.env.BENCH_KEEP) rmSync(ws, { recursive: true, force: true });
    else process.stderr.write(`kept ${ws}\n`);
  }
}
