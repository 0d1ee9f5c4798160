// Preload counting and timing the SQLite statements a svc process runs (issue 17 item 3, issue 18
// item 6): better-sqlite3's Statement run/get/all/iterate, Database exec and prepare, by
// `<method> <statement text>` (`prepare` alone), written at exit to
// `$TMPDIR/svc-sqlite-statements-<pid>.json` as `[[key, { n, ns }], …]`. SIGUSR2 resets them
// (after a warm-up). SVC_COUNT_STACKS=<regex>: the statements whose text matches are counted by
// their caller's stack as well (keys `stack: …`). `node --require bench/profile/sqlite-statements.cjs
// dist/main.js …`, or `BENCH_NODE_ARGS="--require $PWD/bench/profile/sqlite-statements.cjs"` for a
// bench. Used by bench/sqlite-statements.mjs; summary: `node bench/profile/sqlite-statements-summary.mjs
// <file> <requests>`. Not part of `npm run bench`.
const { writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { eachSqliteClass, statementPrototype } = require('./sqlite-preload.cjs');

let stats = new Map();
const add = (key, ns) => {
  const s = stats.get(key) ?? { n: 0, ns: 0 };
  s.n++;
  s.ns += ns;
  stats.set(key, s);
};
const stacksOf = process.env.SVC_COUNT_STACKS ? new RegExp(process.env.SVC_COUNT_STACKS) : undefined;
// SVC_COUNT_TX=1: a statement's key says whether its connection was in a transaction when it ran.
const txOf =
  process.env.SVC_COUNT_TX === '1'
    ? (statement) => (statement.database?.inTransaction ? ' [in tx]' : ' [no tx]')
    : () => '';
/** The caller's stack (called from the wrapper: frames 0-2 are the error, this and the wrapper). */
const callerStack = () =>
  (new Error().stack ?? '')
    .split('\n')
    .slice(3, 12)
    .map((line) => line.trim().replace(/\(.*\/(src|dist|node_modules)\//, '($1/'))
    .join(' < ');
const timed = (target, method, textOf) => {
  const original = target[method];
  target[method] = function timedCall(...args) {
    const text = textOf(this, args);
    const tx = text === undefined ? '' : txOf(this);
    const stack = text !== undefined && stacksOf?.test(text) ? callerStack() : undefined;
    const started = process.hrtime.bigint();
    try {
      return original.apply(this, args);
    } finally {
      const ns = Number(process.hrtime.bigint() - started);
      add(text === undefined ? method : `${method} ${text}${tx}`, ns);
      if (stack !== undefined) add(`stack: ${stack}${tx}`, ns);
    }
  };
};
const oneLine = (sql) => String(sql).replace(/\s+/g, ' ').trim();
// Each better-sqlite3 class's methods and its statements' (the build's copy and any other loaded).
eachSqliteClass(
  (Database) => {
    const statement = statementPrototype(Database);
    for (const method of ['run', 'get', 'all', 'iterate']) timed(statement, method, (s) => oneLine(s.source));
    timed(Database.prototype, 'exec', (_db, [sql]) => oneLine(sql));
    timed(Database.prototype, 'prepare', () => undefined);
  },
  ['better-sqlite3'],
);
process.on('SIGUSR2', () => {
  stats = new Map();
});
process.on('exit', () => {
  writeFileSync(join(tmpdir(), `svc-sqlite-statements-${process.pid}.json`), JSON.stringify([...stats]));
});
