// Preload for a service under a bench: counts better-sqlite3's statement calls (run/get/all/
// iterate, exec, prepare) and their time by statement text, written on exit to
// `$TMPDIR/svc-sqlite-statements-<pid>.json`. `BENCH_NODE_ARGS="--require $PWD/bench/profile/sqlite-statements.cjs"`;
// summary: `node bench/profile/sqlite-statements-summary.mjs <file> <requests>`. Not part of `npm run bench`.
const { writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { dirname, join } = require('node:path');

// The better-sqlite3 of the build being run (BENCH_SVC_BIN may be another checkout's).
const from = process.argv[1] ? dirname(process.argv[1]) : join(__dirname, '..', '..');
const Database = require(require.resolve('better-sqlite3', { paths: [from, join(__dirname, '..', '..')] }));
const stats = new Map();
const add = (key, ns) => {
  const s = stats.get(key) ?? { n: 0, ns: 0 };
  s.n++;
  s.ns += ns;
  stats.set(key, s);
};
const timed = (target, method, keyOf) => {
  const original = target[method];
  target[method] = function (...args) {
    const started = process.hrtime.bigint();
    try {
      return original.apply(this, args);
    } finally {
      add(keyOf(this, args), Number(process.hrtime.bigint() - started));
    }
  };
};
const probe = new Database(':memory:');
const statement = Object.getPrototypeOf(probe.prepare('SELECT 1'));
probe.close();
for (const method of ['run', 'get', 'all', 'iterate'])
  timed(statement, method, (s) => `${method} ${s.source.replace(/\s+/g, ' ').trim()}`);
timed(
  Database.prototype,
  'exec',
  (_db, [sql]) => `exec ${String(sql).replace(/\s+/g, ' ').trim().slice(0, 80)}`,
);
timed(Database.prototype, 'prepare', () => 'prepare');
process.on('exit', () => {
  writeFileSync(join(tmpdir(), `svc-sqlite-statements-${process.pid}.json`), JSON.stringify([...stats]));
});
