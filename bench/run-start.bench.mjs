// `svc run` on a short task, whole process (issue 17, start-up): the scripted 3-step task of the
// peer comparison (read hello.txt, write it, answer "done") against a fake OpenAI-compatible
// server that answers instantly, so the figures are svc's own cost: start-up, three model round
// trips through the AI SDK, two tool calls, the database, shutdown. Each run gets a fresh git
// workspace (a new data dir, as a user in a new repository); each build keeps one home (so its
// user cache dir, with the code cache and the template database, is warm, as after a first run).
// The `svc` command (bin/svc.cjs) is run, as installed.
//
// BENCH_SVC_BIN=/other/checkout/dist/main.js adds that build (its bin/svc.cjs): runs alternate
// between the two, one pair at a time, so load drifts on a shared box hit both alike. Reported:
// medians of wall, time to the first model request (spawn to its arrival at the server), CPU
// (user + sys of the process and the git processes it waited for, from /usr/bin/time; 10 ms
// resolution, so the mean is shown too) and peak RSS. BENCH_RUNS sets the number of runs per
// build (default 15, after 1 warm-up each).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { startChatServer } from './fake-chat.mjs';

const ROOT = import.meta.dirname ?? new URL('.', import.meta.url).pathname;
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const PROMPT =
  'Read hello.txt, then change its contents to exactly `hello, bench`. Reply `done` when finished.';
const TIME = '/usr/bin/time';

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;

/** When the current run's first model request arrived (runs are one at a time). */
const current = { started: 0n, firstRequest: undefined };

/** The turn is the number of tool results in the request: view, then write, then "done". */
function startServer() {
  const usage = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 };
  return startChatServer({
    onRequest: () => {
      current.firstRequest ??= process.hrtime.bigint();
    },
    answer(text) {
      const turn = JSON.parse(text).messages.filter((m) => m.role === 'tool').length;
      const id = `call_${turn}`;
      if (turn === 0) return { call: { id, name: 'view', args: { path: 'hello.txt' } }, usage };
      if (turn === 1)
        return { call: { id, name: 'write', args: { path: 'hello.txt', content: 'hello, bench\n' } }, usage };
      return { text: 'done', usage };
    },
  });
}

function workspace() {
  const ws = mkdtempSync(join(tmpdir(), 'svc-bench-run-'));
  const git = (args) => execFileSync('git', args, { cwd: ws, stdio: 'ignore' });
  git(['init', '-q']);
  writeFileSync(join(ws, 'hello.txt'), 'hello world\n');
  git(['add', 'hello.txt']);
  git([
    '-c',
    'user.name=bench',
    '-c',
    'user.email=bench@localhost',
    '-c',
    'commit.gpgsign=false',
    'commit',
    '-q',
    '-m',
    'init',
  ]);
  return ws;
}

function once(build, port) {
  const ws = workspace();
  const env = {
    PATH: process.env.PATH,
    HOME: build.home,
    XDG_CACHE_HOME: join(build.home, '.cache'),
    XDG_CONFIG_HOME: join(build.home, '.config'),
    XDG_DATA_HOME: join(build.home, '.local', 'share'),
    XDG_STATE_HOME: join(build.home, '.local', 'state'),
    SVC_CONFIG: join(build.home, 'svc.toml'),
    BENCH_API_KEY: 'bench-key',
  };
  writeFileSync(
    env.SVC_CONFIG,
    `[providers.fake]\ntype = "openai-compat"\nbase_url = "http://127.0.0.1:${port}/v1"\napi_key = "\${BENCH_API_KEY}"\n`,
  );
  const args = ['run', PROMPT, '--output', 'json', '--yolo', '--model', 'fake/fake-model'];
  return new Promise((done, fail) => {
    current.started = process.hrtime.bigint();
    current.firstRequest = undefined;
    const child = spawn(TIME, ['-f', '%e %M %U %S', process.execPath, build.command, ...args], {
      cwd: ws,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('close', (code) => {
      const ok = readFileSync(join(ws, 'hello.txt'), 'utf8') === 'hello, bench\n';
      rmSync(ws, { recursive: true, force: true });
      if (code !== 0 || !ok) {
        fail(
          new Error(
            `${build.label}: svc run exited ${code}, hello.txt ${ok ? 'written' : 'unchanged'}: ${stderr.slice(-400)}`,
          ),
        );
        return;
      }
      const [wall, rssKb, user, sys] = stderr.trim().split('\n').pop().split(' ').map(Number);
      const first = Number(current.firstRequest - current.started) / 1e9;
      done({ wall, rss: rssKb / 1024, cpu: user + sys, first });
    });
  });
}

export async function run() {
  if (!existsSync(TIME)) return [{ name: 'svc run start-up', value: `skipped: no ${TIME}` }];
  const builds = [{ label: 'this build', command: resolve(ROOT, '../bin/svc.cjs') }];
  if (process.env.BENCH_SVC_BIN) {
    builds.push({
      label: 'BENCH_SVC_BIN',
      command: resolve(dirname(process.env.BENCH_SVC_BIN), '../bin/svc.cjs'),
    });
  }
  const homes = mkdtempSync(join(tmpdir(), 'svc-bench-homes-'));
  builds.forEach((b, i) => {
    b.home = join(homes, String(i));
    mkdirSync(b.home, { recursive: true });
    b.samples = [];
  });
  const server = await startServer();
  const { port } = server.address();
  const loadBefore = loadavg()[0];
  try {
    for (const b of builds) await once(b, port); // warm-up: code cache, template database, probes
    for (let i = 0; i < RUNS; i++) {
      const order = i % 2 ? [...builds].reverse() : builds;
      for (const b of order) b.samples.push(await once(b, port));
    }
  } finally {
    server.close();
    rmSync(homes, { recursive: true, force: true });
  }
  const rows = [];
  for (const b of builds) {
    const s = b.samples;
    rows.push(
      { name: `${b.label}: wall (median s)`, value: median(s.map((x) => x.wall)).toFixed(3) },
      {
        name: `${b.label}: to 1st model request (median s)`,
        value: median(s.map((x) => x.first)).toFixed(3),
      },
      {
        name: `${b.label}: CPU (median / mean s)`,
        value: `${median(s.map((x) => x.cpu)).toFixed(3)} / ${mean(s.map((x) => x.cpu)).toFixed(4)}`,
      },
      { name: `${b.label}: peak RSS (median MiB)`, value: median(s.map((x) => x.rss)).toFixed(1) },
    );
  }
  if (builds.length === 2) {
    const [a, b] = builds;
    const ratio = (key) => median(a.samples.map((x, i) => x[key] / b.samples[i][key])).toFixed(3);
    rows.push(
      { name: 'this / BENCH_SVC_BIN: CPU (median of pair ratios)', value: ratio('cpu') },
      { name: 'this / BENCH_SVC_BIN: wall (median of pair ratios)', value: ratio('wall') },
      { name: 'this / BENCH_SVC_BIN: to 1st request (median of pair ratios)', value: ratio('first') },
    );
  }
  rows.push({
    name: 'load average (1 min) before / after',
    value: `${loadBefore.toFixed(2)} / ${loadavg()[0].toFixed(2)}`,
  });
  return rows;
}
