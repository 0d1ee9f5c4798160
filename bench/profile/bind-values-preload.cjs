// Preload (`node --require`) for a PostgreSQL service (e.g. `BENCH_TIMELINE_STORE=postgres
// BENCH_NODE_ARGS="--require $PWD/bench/profile/bind-values-preload.cjs" node bench/compat-timeline.mjs`):
// what writing a statement with parameters costs in the live service, where a profile at load
// spreads it (issue 18 item 6, p-pgvalue). Times pg's `Query.submit` of each statement with
// parameters up to its uncork: the cork and svc's or pg's `prepare` (parse when not yet parsed,
// bind with each parameter's text, describe, execute, sync), not the socket write. At exit writes to
// stderr, per statement (its first 48 characters), the calls, its parameters and arrays, the median
// µs and pg's own binds (`Connection.bind`, pg-protocol's writer: svc writes its own Bind when it
// can, src/store/postgres/bind-message.ts). Wall clock in the process (hrtime): read medians,
// under load the tails are the box's.
'use strict';
const { dirname, join } = require('node:path');

// pg as the service's build resolves it (its own worktree's node_modules), else this checkout's.
const from = [process.argv[1] ? dirname(process.argv[1]) : undefined, join(__dirname, '..', '..')];
const resolved = (name) => require(require.resolve(name, { paths: from.filter(Boolean) }));
const Query = resolved('pg/lib/query.js');
const Connection = resolved('pg/lib/connection.js');

const byText = new Map();
let current;
const bind = Connection.prototype.bind;
Connection.prototype.bind = function pgBind(config) {
  if (current) current.pgBinds++;
  return bind.call(this, config);
};
const submit = Query.prototype.submit;
Query.prototype.submit = function timedSubmit(connection) {
  const values = this.values;
  if (!values || values.length === 0) return submit.call(this, connection);
  const key = this.text.slice(0, 48).replace(/\s+/g, ' ');
  let entry = byText.get(key);
  if (!entry) {
    entry = { params: values.length, arrays: values.filter(Array.isArray).length, pgBinds: 0, times: [] };
    byText.set(key, entry);
  }
  current = entry;
  // Up to the uncork: the socket write after it is the kernel's (and wakes the backend).
  const stream = connection.stream;
  const uncork = stream.uncork;
  let prepared;
  stream.uncork = function timedUncork() {
    prepared ??= process.hrtime.bigint();
    return uncork.call(this);
  };
  const start = process.hrtime.bigint();
  try {
    return submit.call(this, connection);
  } finally {
    entry.times.push(Number((prepared ?? process.hrtime.bigint()) - start) / 1000);
    stream.uncork = uncork;
    current = undefined;
  }
};

const median = (list) => [...list].sort((a, b) => a - b)[list.length >> 1].toFixed(1);
process.on('exit', () => {
  const rows = [...byText].sort((a, b) => b[1].times.length - a[1].times.length);
  const lines = [
    'bind-values: statement | calls | params | arrays | submit to uncork µs (median) | pg binds',
  ];
  for (const [text, e] of rows)
    lines.push(
      `  ${text.padEnd(48)} | ${e.times.length} | ${e.params} | ${e.arrays} | ${median(e.times)} | ${e.pgBinds}`,
    );
  process.stderr.write(`${lines.join('\n')}\n`);
});
