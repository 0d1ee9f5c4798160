// Where a compat request's PostgreSQL statements go (issue 18, item 6): a throwaway PostgreSQL
// (./pg-cluster.mjs, with pg_stat_statements), one `svc service start http` node on a new
// database, 20 requests of warm-up, then BENCH_STATEMENTS_REQUESTS (default 50) requests, 10 at
// once; prints the statements per request, in total and by statement text (pg_stat_statements'
// normalized query), most called first. BENCH_SVC_BIN runs another build.
// BENCH_STATEMENTS_LOOP=1: the agent loop instead (bench/agent-loop.bench.mjs, BENCH_STEPS tool
// steps on a new database), statements per step over the whole `svc run`, start-up included.
// `node bench/store-statements.mjs`; not part of `npm run bench`.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runOnce as agentLoopOnce } from './agent-loop.bench.mjs';
import { fakeProvider, round, streamOnce } from './compat.bench.mjs';
import { startPostgres } from './pg-cluster.mjs';

const BIN =
  process.env.BENCH_SVC_BIN ??
  resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../dist/main.js');
const REQUESTS = Number(process.env.BENCH_STATEMENTS_REQUESTS ?? 50);
const TOKEN = 'bench-token';

const pg = await startPostgres();
const { default: driver } = await import('pg');
/** The statements pg_stat_statements counted in the database of `url` (read in `postgres`, where it is created). */
async function statements(url) {
  const admin = new driver.Client({ connectionString: pg.urlOf('postgres') });
  await admin.connect();
  try {
    const database = new URL(url).pathname.slice(1);
    return (
      await admin.query(
        `SELECT queryid, calls, query FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`,
        [database],
      )
    ).rows;
  } finally {
    await admin.end();
  }
}
function print(rows, per, label) {
  const total = rows.reduce((sum, r) => sum + r.calls, 0);
  console.log(`${(total / per).toFixed(1)} statements per ${label}`);
  for (const r of rows.sort((a, b) => b.calls - a.calls)) {
    if (r.calls / per < 0.05) continue;
    console.log(`${(r.calls / per).toFixed(2).padStart(7)}  ${r.query.replace(/\s+/g, ' ').slice(0, 150)}`);
  }
}
if (process.env.BENCH_STATEMENTS_LOOP) {
  const url = await pg.createDatabase('svc_statements_loop');
  process.env.BENCH_STORE_URL = url;
  const result = await agentLoopOnce('all');
  const steps = Number(result.find((r) => r.name === 'tool steps')?.value);
  await new Promise((r) => setTimeout(r, 1000));
  print(
    (await statements(url)).map((r) => ({ query: r.query, calls: Number(r.calls) })),
    steps,
    'step',
  );
  pg.stop?.();
  process.exit(0);
}
const provider = await fakeProvider();
const url = await pg.createDatabase('svc_statements');
const ws = mkdtempSync(join(tmpdir(), 'svc-bench-statements-'));
writeFileSync(
  join(ws, 'svc.toml'),
  `[providers.fake]\ntype = "openai-compat"\nbase_url = "${provider.url}"\n[models]\nlarge = "fake/m1"\n[options.openai_compat]\ntool_policy = "read_only"\n[services.http]\ntoken = "${TOKEN}"\nsse_heartbeat_seconds = 60\n`,
);
mkdirSync(join(ws, '.data'), { recursive: true });
const child = spawn(process.execPath, [BIN, 'service', 'start', 'http', '--port', '0'], {
  cwd: ws,
  env: {
    PATH: process.env.PATH,
    HOME: join(ws, '.home'),
    XDG_CONFIG_HOME: join(ws, '.home', '.config'),
    SVC_STORE_URL: url,
    SVC_DATA_DIR: join(ws, '.data'),
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
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
  const { default: driver } = await import('pg');
  // pg_stat_statements is created in the cluster's \`postgres\` database; read there, for svc's.
  const admin = new driver.Client({ connectionString: pg.urlOf('postgres') });
  await admin.connect();
  const database = new URL(url).pathname.slice(1);
  const snapshot = async () =>
    (
      await admin.query(
        `SELECT queryid, calls, query FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)`,
        [database],
      )
    ).rows;
  await round(20, (i) => streamOnce(base, auth, body(i)));
  await new Promise((r) => setTimeout(r, 500));
  const before = new Map((await snapshot()).map((r) => [r.queryid, Number(r.calls)]));
  let errors = 0;
  for (let done = 0; done < REQUESTS; done += 10) {
    const result = await round(Math.min(10, REQUESTS - done), (i) => streamOnce(base, auth, body(done + i)));
    errors += result.errors.length;
  }
  await new Promise((r) => setTimeout(r, 500));
  const rows = (await snapshot())
    .map((r) => ({ query: r.query, calls: Number(r.calls) - (before.get(r.queryid) ?? 0) }))
    .filter((r) => r.calls > 0)
    .sort((a, b) => b.calls - a.calls);
  await admin.end();
  const total = rows.reduce((sum, r) => sum + Number(r.calls), 0);
  console.log(
    `${REQUESTS} compat requests (${errors} errors): ${(total / REQUESTS).toFixed(1)} statements per request`,
  );
  for (const r of rows) {
    const per = Number(r.calls) / REQUESTS;
    if (per < 0.05) continue;
    console.log(`${per.toFixed(2).padStart(7)}  ${r.query.replace(/\s+/g, ' ').slice(0, 150)}`);
  }
} finally {
  child.kill('SIGTERM');
  provider.server.close();
  await new Promise((r) => setTimeout(r, 300));
  rmSync(ws, { recursive: true, force: true });
  pg.stop?.();
}
process.exit(0);
