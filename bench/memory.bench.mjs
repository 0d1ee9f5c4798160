// Memory of the long-lived processes (issue 17, item 4), measured from outside through
// /proc/<pid>/status (VmRSS, VmHWM) and a heap snapshot (--heapsnapshot-signal, taken after a
// full GC) for the live JS heap.
//
// 1. `svc service start http`: 1,000 streaming `POST /v1/chat/completions` (5 rounds of 200
//    concurrent) against an instant fake OpenAI-compatible provider in this process; RSS after
//    each round, peak RSS, RSS after 60 s idle, live heap at the end. Beside RSS, from svc's
//    `--trace-gc` lines (./gc-trace.mjs: V8's own figures, no extra GC or snapshot during the load):
//    the heap after each round's last full GC and the full GCs and scavenges of each round, so an
//    RSS growth between rounds 3 and 5 reads as live heap (a leak) or V8 sizing its heap.
//    Targets: idle RSS ≤ 120 MB a minute after the load, no growth between rounds 3 and 5.
// 2. The TUI (`svc` in a tmux pane of a private tmux server): a scripted 200-message session
//    (100 prompts, 100 answers from the fake provider), RSS and peak RSS after it.
//    RSS and peak right after it, RSS after 30 s idle (BENCH_MEMORY_TUI_IDLE_SECONDS), and the CPU
//    it used to start (first frame + 1.5 s) and over the session.
//    Target: ≤ 150 MB. Skipped without tmux.
//
// BENCH_SVC_BIN runs another build (a main checkout) for a before/after pair in one run;
// BENCH_MEMORY_IDLE_SECONDS (default 60), BENCH_MEMORY_ROUNDS (5), BENCH_MEMORY_CONCURRENCY (200),
// BENCH_MEMORY_TUI_PROMPTS (100); BENCH_MEMORY_ONLY=service|tui runs one half.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compatBody } from './compat.bench.mjs';
import { gcTrace } from './gc-trace.mjs';
import { startService, BENCH_TOKEN as TOKEN, writeCompatConfig } from './service-process.mjs';

const BIN =
  process.env.BENCH_SVC_BIN ??
  resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../dist/main.js');
const CONCURRENCY = Number(process.env.BENCH_MEMORY_CONCURRENCY ?? 200);
const ROUNDS = Number(process.env.BENCH_MEMORY_ROUNDS ?? 5);
const IDLE_SECONDS = Number(process.env.BENCH_MEMORY_IDLE_SECONDS ?? 60);
const TUI_PROMPTS = Number(process.env.BENCH_MEMORY_TUI_PROMPTS ?? 100);
const TUI_IDLE_SECONDS = Number(process.env.BENCH_MEMORY_TUI_IDLE_SECONDS ?? 30);
const ONLY = process.env.BENCH_MEMORY_ONLY;
// Extra node flags for svc (e.g. `--max-semi-space-size=4`), for trying V8 settings.
const NODE_FLAGS = (process.env.BENCH_MEMORY_NODE_FLAGS ?? '').split(' ').filter(Boolean);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function statusMb(pid, field = 'VmRSS') {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]);
    return Number.isFinite(kb) ? kb / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) the process has used so far, from /proc/<pid>/stat. */
function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 (1-based) of the whole line, in clock ticks (100 Hz).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

const mb = (v) => (v === undefined ? 'n/a' : v.toFixed(0));
const secs = (v) => (v === undefined ? 'n/a' : v.toFixed(2));

/** The live JS heap in MB: a heap snapshot through --heapsnapshot-signal=SIGUSR2, summed. */
async function heapMb(pid, dir) {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 60_000;
  for (;;) {
    const file = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (file) {
      const path = join(dir, file);
      const size = statSync(path).size;
      await sleep(500);
      if (size > 0 && statSync(path).size === size) {
        try {
          const snapshot = JSON.parse(readFileSync(path, 'utf8'));
          const fields = snapshot.snapshot.meta.node_fields;
          const at = fields.indexOf('self_size');
          let total = 0;
          for (let i = at; i < snapshot.nodes.length; i += fields.length) total += snapshot.nodes[i];
          // BENCH_MEMORY_KEEP_SNAPSHOTS=<dir> keeps the snapshot there, for a look in DevTools.
          const keep = process.env.BENCH_MEMORY_KEEP_SNAPSHOTS;
          if (keep) copyFileSync(path, join(keep, file));
          rmSync(path);
          return total / 1024 / 1024;
        } catch {
          // still being written
        }
      }
    }
    if (Date.now() > deadline) return undefined;
    await sleep(250);
  }
}

function fakeProvider() {
  const server = createServer((req, res) => {
    let request = '';
    req.on('data', (d) => {
      request += d;
    });
    req.on('end', () => {
      // Echo the number of the last prompt, so the TUI half can see its answer on screen.
      const numbers = [...request.matchAll(/bench prompt (\d+)/g)];
      const answer = numbers.length ? `answer ${numbers.at(-1)[1]}` : 'answer';
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const base = { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm1' };
      const chunk = (delta, finish = null, extra = {}) =>
        `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
      res.write(chunk({ role: 'assistant', content: 'Hello ' }));
      res.write(chunk({ content: `from the fake provider, ${answer}.` }));
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

function workspace(providerUrl) {
  const ws = mkdtempSync(join(tmpdir(), 'svc-bench-memory-'));
  writeCompatConfig(ws, providerUrl, { small: true });
  mkdirSync(join(ws, 'diag'));
  mkdirSync(join(ws, '.home', '.config'), { recursive: true });
  return ws;
}

async function streamOnce(url, body) {
  const response = await fetch(`${url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(body),
  });
  if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  const text = await response.text();
  if (!text.trimEnd().endsWith('data: [DONE]')) throw new Error(`no [DONE]: ${text.slice(-200)}`);
}

async function service(provider) {
  const ws = workspace(provider.url);
  const diag = join(ws, 'diag');
  const gcs = gcTrace();
  const started = startService({
    bin: BIN,
    ws,
    nodeArgs: [...NODE_FLAGS, '--trace-gc', '--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${diag}`],
    onLine: gcs.onLine,
  });
  const child = started.child;
  try {
    const url = `${await started.url}/v1`;
    const rssStart = statusMb(child.pid);
    const body = compatBody('memory bench request');
    const rss = [];
    const gcRounds = [];
    let errors = 0;
    let firstError;
    for (let r = 0; r < ROUNDS; r++) {
      const results = await Promise.allSettled(
        Array.from({ length: CONCURRENCY }, (_, i) => streamOnce(url, body(r * CONCURRENCY + i))),
      );
      for (const result of results) {
        if (result.status === 'rejected') {
          errors++;
          firstError ??= String(result.reason?.message ?? result.reason);
        }
      }
      await sleep(500);
      rss.push(statusMb(child.pid));
      gcRounds.push(gcs.take());
    }
    const peak = statusMb(child.pid, 'VmHWM');
    await sleep(IDLE_SECONDS * 1000);
    const idle = statusMb(child.pid);
    const heap = await heapMb(child.pid, diag);
    const rssAfterSnapshot = statusMb(child.pid);
    const growth = rss.length >= 5 ? rss[4] - rss[2] : undefined;
    const live = gcRounds.map((g) => g.liveAfterFullGc);
    const liveGrowth = live.length >= 5 && live[2] !== undefined ? live[4] - live[2] : undefined;
    const rows = [
      { name: 'service: requests (concurrent × rounds)', value: `${CONCURRENCY} × ${ROUNDS}` },
      { name: 'service: errors', value: String(errors), target: '0', pass: errors === 0 },
      { name: 'service: RSS at start (MB)', value: mb(rssStart) },
      { name: 'service: RSS after each round (MB)', value: rss.map(mb).join(' / ') },
      { name: 'service: peak RSS (MB)', value: mb(peak), target: '≤ 200', pass: peak <= 200 },
    ];
    if (growth !== undefined) {
      rows.push({
        name: 'service: RSS growth, round 3 → 5 (MB)',
        value: growth.toFixed(1),
        target: '≤ 0 (± 2)',
        pass: growth <= 2,
      });
    }
    rows.push(
      {
        name: "service: heap after each round's last full GC (MB)",
        value: live.map((v) => (v === undefined ? 'n/a' : v.toFixed(1))).join(' / '),
      },
      { name: 'service: full GCs per round', value: gcRounds.map((g) => g.fullGcs).join(' / ') },
      { name: 'service: scavenges per round', value: gcRounds.map((g) => g.scavenges).join(' / ') },
    );
    if (liveGrowth !== undefined) {
      // The heap after a full GC holds what marking could not yet prove dead (objects made during
      // incremental marking): ± 1–2 MB from round to round with a flat live heap.
      rows.push({
        name: 'service: heap after full GC, growth round 3 → 5 (MB)',
        value: liveGrowth.toFixed(1),
      });
    }
    rows.push(
      {
        name: `service: RSS after ${IDLE_SECONDS} s idle (MB)`,
        value: mb(idle),
        target: '≤ 120',
        pass: idle <= 120,
      },
      { name: 'service: live JS heap at the end (MB)', value: heap === undefined ? 'n/a' : heap.toFixed(1) },
      { name: 'service: RSS after the heap snapshot (MB)', value: mb(rssAfterSnapshot) },
    );
    if (firstError) rows.push({ name: 'service: first error', value: firstError.slice(0, 200) });
    return rows;
  } finally {
    child.kill('SIGTERM');
    await sleep(300);
    rmSync(ws, { recursive: true, force: true });
  }
}

/** The pid of the node process running BIN under the tmux pane's shell. */
function findPid(panePid) {
  const children = (pid) => {
    try {
      return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    } catch {
      return [];
    }
  };
  const queue = [String(panePid)];
  while (queue.length) {
    const pid = queue.shift();
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (argv[0] === process.execPath && argv.includes(BIN)) return Number(pid);
    } catch {
      // gone
    }
    queue.push(...children(pid));
  }
  return undefined;
}

async function tui(provider) {
  if (spawnSync('tmux', ['-V']).status !== 0) return [{ name: 'tui: skipped', value: 'tmux not found' }];
  const ws = workspace(provider.url);
  const socket = `svc-bench-mem-${process.pid}`;
  const tmux = (...args) =>
    execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const quote = (s) => `'${s.replace(/'/g, "'\\''")}'`;
  const home = join(ws, '.home');
  // BENCH_MEMORY_TUI_ENV adds variables to the TUI's environment (`NAME=value NAME2=value`).
  const env = `PATH=${quote(process.env.PATH ?? '')} HOME=${quote(home)} XDG_CONFIG_HOME=${quote(join(home, '.config'))} TERM=xterm-256color ${process.env.BENCH_MEMORY_TUI_ENV ?? ''}`;
  const flags = [...NODE_FLAGS, '--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${join(ws, 'diag')}`];
  const script = `cd ${quote(ws)}; env -i ${env} ${[process.execPath, ...flags, BIN].map(quote).join(' ')}; sleep 600`;
  try {
    tmux('new-session', '-d', '-s', 'svc', '-x', '120', '-y', '40', script);
    const screen = () => tmux('capture-pane', '-p', '-t', 'svc');
    const until = async (check, what, timeoutMs = 60_000) => {
      const start = Date.now();
      for (;;) {
        const s = screen();
        if (check(s)) return s;
        if (Date.now() - start > timeoutMs) throw new Error(`tui: timed out waiting for ${what}:\n${s}`);
        await sleep(50);
      }
    };
    const panePid = Number(tmux('display-message', '-p', '-t', 'svc', '#{pane_pid}').trim());
    let pid = findPid(panePid);
    const start = Date.now();
    while (!pid && Date.now() - start < 30_000) {
      await sleep(100);
      pid = findPid(panePid);
    }
    if (!pid) throw new Error('tui: svc process not found');
    await until((s) => s.trim().length > 0 && !/svc-exit/.test(s), 'the TUI');
    await sleep(1500);
    const rssStart = statusMb(pid);
    const cpuStart = cpuSeconds(pid);
    for (let i = 0; i < TUI_PROMPTS; i++) {
      tmux('send-keys', '-t', 'svc', '-l', `memory bench prompt ${i}`);
      tmux('send-keys', '-t', 'svc', 'Enter');
      const startWait = Date.now();
      for (;;) {
        if (screen().includes(`provider, answer ${i}.`)) break;
        if (Date.now() - startWait > 60_000) throw new Error(`tui: no answer to prompt ${i}:\n${screen()}`);
        await sleep(30);
      }
      // Wait for the run to finish (the prompt is accepted again).
      await sleep(150);
    }
    await sleep(2000);
    const rss = statusMb(pid);
    const peak = statusMb(pid, 'VmHWM');
    const cpuEnd = cpuSeconds(pid);
    await sleep(TUI_IDLE_SECONDS * 1000);
    const idle = statusMb(pid);
    const heap = await heapMb(pid, join(ws, 'diag'));
    return [
      { name: 'tui: messages in the session', value: String(TUI_PROMPTS * 2) },
      { name: 'tui: RSS at start (MB)', value: mb(rssStart) },
      { name: 'tui: CPU to the first frame + 1.5 s (s)', value: secs(cpuStart) },
      {
        name: 'tui: CPU over the session (s)',
        value: cpuStart === undefined || cpuEnd === undefined ? 'n/a' : (cpuEnd - cpuStart).toFixed(2),
      },
      { name: 'tui: RSS after the session (MB)', value: mb(rss), target: '≤ 150', pass: rss <= 150 },
      { name: 'tui: peak RSS (MB)', value: mb(peak), target: '≤ 150', pass: peak <= 150 },
      {
        name: `tui: RSS after ${TUI_IDLE_SECONDS} s idle (MB)`,
        value: mb(idle),
        target: '≤ 150',
        pass: idle <= 150,
      },
      { name: 'tui: live JS heap at the end (MB)', value: heap === undefined ? 'n/a' : heap.toFixed(1) },
    ];
  } finally {
    spawnSync('tmux', ['-L', socket, 'kill-server']);
    await sleep(300);
    rmSync(ws, { recursive: true, force: true });
  }
}

export async function run() {
  const provider = await fakeProvider();
  try {
    const rows = [];
    if (ONLY !== 'tui') rows.push(...(await service(provider)));
    if (ONLY !== 'service') rows.push(...(await tui(provider)));
    return rows;
  } finally {
    provider.server.close();
  }
}
