// Where a compat request's (or an agent-loop step's) SQLite statements go (issue 17 item 3): the
// SQLite counterpart of ./store-statements.mjs. One `svc service start http` node with
// ./sqlite-count-preload.cjs, 20 requests of warm-up (then the counts are reset), then
// BENCH_STATEMENTS_REQUESTS (default 50) requests, 10 at once; prints statements per request by
// SQL text, most run first. BENCH_STATEMENTS_LOOP=1: the agent loop (./agent-loop.bench.mjs,
// BENCH_STEPS tool steps), per step over the whole `svc run`. BENCH_SVC_BIN runs another build.
// `node bench/sqlite-statements.mjs`; not part of `npm run bench`.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fakeProvider, round, streamOnce } from './compat.bench.mjs';

const here = import.meta.dirname ?? new URL('.', import.meta.url).pathname;
const BIN = process.env.BENCH_SVC_BIN ?? resolve(here, '../dist/main.js');
const PRELOAD = resolve(here, 'sqlite-count-preload.cjs');
const REQUESTS = Number(process.env.BENCH_STATEMENTS_REQUESTS ?? 50);
const TOKEN = 'bench-token';

function print(counts, per, label) {
  const rows = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  const total = rows.reduce((sum, [, n]) => sum + n, 0);
  const sessionReads = rows
    .filter(([sql]) => /^\s*SELECT \* FROM sessions WHERE id = \?\s*$/.test(sql))
    .reduce((sum, [, n]) => sum + n, 0);
  console.log(
    `${(total / per).toFixed(1)} statements per ${label}; session row reads ${(sessionReads / per).toFixed(2)}`,
  );
  for (const [sql, n] of rows) {
    if (n / per < 0.05) continue;
    if (sql.startsWith('stack: ')) {
      console.log(`${(n / per).toFixed(2).padStart(7)}  ${sql}`);
      continue;
    }
    console.log(`${(n / per).toFixed(2).padStart(7)}  ${sql.replace(/\s+/g, ' ').slice(0, 150)}`);
  }
}
const countsOf = (pid) => JSON.parse(readFileSync(join(tmpdir(), `svc-sqlite-counts-${pid}.json`), 'utf8'));

if (process.env.BENCH_STATEMENTS_LOOP) {
  process.env.BENCH_NODE_ARGS = `--require ${PRELOAD}`;
  process.env.BENCH_EXPOSURE = 'all';
  const since = Date.now();
  const { runOnce } = await import('./agent-loop.bench.mjs');
  const result = await runOnce('all');
  const steps = Number(result.find((r) => r.name === 'tool steps')?.value);
  // The newest counts file written since the run started is the run's.
  const file = readdirSync(tmpdir())
    .filter((f) => f.startsWith('svc-sqlite-counts-'))
    .map((f) => ({ f, t: statSync(join(tmpdir(), f)).mtimeMs }))
    .filter((x) => x.t >= since)
    .sort((a, b) => b.t - a.t)[0];
  print(JSON.parse(readFileSync(join(tmpdir(), file.f), 'utf8')), steps, 'step');
  process.exit(0);
}
const provider = await fakeProvider();
const ws = mkdtempSync(join(tmpdir(), 'svc-bench-sqlite-statements-'));
writeFileSync(
  join(ws, 'svc.toml'),
  `[providers.fake]\ntype = "openai-compat"\nbase_url = "${provider.url}"\n[models]\nlarge = "fake/m1"\n[options.openai_compat]\ntool_policy = "read_only"\n[services.http]\ntoken = "${TOKEN}"\nsse_heartbeat_seconds = 60\n`,
);
mkdirSync(join(ws, '.data'), { recursive: true });
const child = spawn(
  process.execPath,
  ['--require', PRELOAD, BIN, 'service', 'start', 'http', '--port', '0'],
  {
    cwd: ws,
    env: {
      PATH: process.env.PATH,
      HOME: join(ws, '.home'),
      XDG_CONFIG_HOME: join(ws, '.home', '.config'),
      SVC_DATA_DIR: join(ws, '.data'),
      ...(process.env.SVC_COUNT_STACKS ? { SVC_COUNT_STACKS: process.env.SVC_COUNT_STACKS } : {}),
      ...(process.env.NODE_OPTIONS ? { NODE_OPTIONS: process.env.NODE_OPTIONS } : {}),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
const exited = new Promise((r) => child.on('exit', r));
try {
  const base = await new Promise((resolvePromise, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const match = /svc: listening on (http:\/\/\S+)/.exec(out);
      if (match) resolvePromise(`${match[1]}/v1`);
    });
    child.on('exit', (code) => reject(new Error(`svc exited ${code}`)));
  });
  const auth = { authorization: `Bearer ${TOKEN}` };
  const body = (i) => ({
    model: 'fake/m1',
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: `statements request ${i}` }],
  });
  await round(20, (i) => streamOnce(base, auth, body(i)));
  await new Promise((r) => setTimeout(r, 500));
  child.kill('SIGUSR2');
  await new Promise((r) => setTimeout(r, 100));
  let errors = 0;
  for (let done = 0; done < REQUESTS; done += 10) {
    const result = await round(Math.min(10, REQUESTS - done), (i) => streamOnce(base, auth, body(done + i)));
    errors += result.errors.length;
  }
  await new Promise((r) => setTimeout(r, 500));
  child.kill('SIGTERM');
  await exited;
  console.log(`${REQUESTS} compat requests (${errors} errors)`);
  print(countsOf(child.pid), REQUESTS, 'request');
} finally {
  child.kill('SIGTERM');
  provider.server.close();
  rmSync(ws, { recursive: true, force: true });
}
process.exit(0);
