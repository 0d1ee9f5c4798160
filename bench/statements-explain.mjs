// Where the server's time of a compat request's PostgreSQL statements goes, node by node (issue
// 18 item 6, p-pglone): the harness of ./store-statements.mjs (one `svc service start http` node
// on a new database of a throwaway cluster, 20 requests of warm-up), then auto_explain (ANALYZE,
// timing, triggers) turned on for that database (svc's connections are ended and come back with
// it) and BENCH_STATEMENTS_REQUESTS requests (BENCH_STATEMENTS_CONCURRENCY at once, 1 for the lone
// request). Printed for each statement text called at least once a request (its first 60
// characters): the median of its duration, then of each `WITH`'s (`CTE name`), each function
// scan's and each trigger's time (a node's time includes its children's; InitPlans run where
// first read). BENCH_EXPLAIN_NESTED=1 logs the statements inside functions too (each its own
// entry, slower). Not a benchmark: auto_explain's timing adds to every node.
// BENCH_EXPLAIN_LOG=<file> writes the raw auto_explain log there too (every plan in full).
// `node bench/statements-explain.mjs` (BENCH_SVC_BIN as the others').
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { startPostgres } from './pg-cluster.mjs';
import { compatStatements, REQUESTS } from './statements-harness.mjs';

const pg = await startPostgres();
const { default: driver } = await import('pg');
const url = await pg.createDatabase('svc_explain');
const database = new URL(url).pathname.slice(1);
const admin = new driver.Client({ connectionString: pg.urlOf('postgres') });
await admin.connect();
const logFile = join(dirname((await admin.query('SHOW data_directory')).rows[0].data_directory), 'log');
let from = 0;
let log = '';
try {
  await compatStatements({
    env: { SVC_STORE_URL: url },
    warmedUp: async () => {
      const settings = {
        session_preload_libraries: "'auto_explain'",
        'auto_explain.log_min_duration': '0',
        'auto_explain.log_analyze': 'on',
        'auto_explain.log_timing': 'on',
        'auto_explain.log_triggers': 'on',
        'auto_explain.log_nested_statements': process.env.BENCH_EXPLAIN_NESTED === '1' ? 'on' : 'off',
      };
      for (const [name, value] of Object.entries(settings))
        await admin.query(`ALTER DATABASE ${database} SET ${name} = ${value}`);
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [
        database,
      ]);
      await new Promise((wait) => setTimeout(wait, 300));
      from = readFileSync(logFile, 'utf8').length;
    },
    finished: async () => {
      log = readFileSync(logFile, 'utf8').slice(from);
      if (process.env.BENCH_EXPLAIN_LOG) writeFileSync(process.env.BENCH_EXPLAIN_LOG, log);
    },
  });
} finally {
  await admin.end();
  pg.stop?.();
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
const byText = new Map();
for (const entry of log.split(/\n(?=\S+ \S+ \S+ \[\d+\] LOG: {2}duration)/)) {
  const duration = /duration: ([\d.]+) ms {2}plan:/.exec(entry);
  const text = /Query Text: (.*)/.exec(entry);
  if (!duration || !text) continue;
  const key = text[1].replace(/\s+/g, ' ').slice(0, 60);
  if (!byText.has(key)) byText.set(key, { durations: [], nodes: new Map() });
  const found = byText.get(key);
  found.durations.push(Number(duration[1]));
  const lines = entry.split('\n');
  // A node named twice in one statement (two calls of one function): their sum, and how many.
  const here = new Map();
  const add = (name, ms) => {
    const [sum, count] = here.get(name) ?? [0, 0];
    here.set(name, [sum + ms, count + 1]);
  };
  lines.forEach((line, i) => {
    const cte = /^\s*CTE (\w+)$/.exec(line);
    const next = cte && /actual time=[\d.]+\.\.([\d.]+)/.exec(lines[i + 1] ?? '');
    if (cte && next) add(`CTE ${cte[1]}`, Number(next[1]));
    const scan = /Function Scan on (\w+).*actual time=[\d.]+\.\.([\d.]+)/.exec(line);
    if (scan) add(`function ${scan[1]}`, Number(scan[2]));
    const trigger = /^\s*Trigger (.*): time=([\d.]+) calls=(\d+)/.exec(line);
    if (trigger) add(`trigger ${trigger[1]} (${trigger[3]})`, Number(trigger[2]));
  });
  for (const [name, [sum, count]] of here) {
    const key = count > 1 ? `${name} (${count} in a statement, summed)` : name;
    if (!found.nodes.has(key)) found.nodes.set(key, []);
    found.nodes.get(key).push(sum);
  }
}
for (const [text, { durations, nodes }] of byText) {
  if (durations.length < REQUESTS) continue;
  console.log(`\n${durations.length} × ${text}: median ${median(durations).toFixed(3)} ms`);
  for (const [name, values] of nodes)
    console.log(
      `  ${median(values).toFixed(3).padStart(7)}  ${name}${values.length < durations.length ? ` (${values.length}×)` : ''}`,
    );
}
process.exit(0);
