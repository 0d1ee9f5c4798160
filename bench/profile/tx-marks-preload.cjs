// Preload (`node --require`, with bench/compat-timeline.mjs's `--import timeline-preload.mjs`): marks
// every SQLite statement a svc process runs on the timeline's clock (`globalThis.__mark`, set by the
// timeline preload): `sql:<kind> <text's first 48 chars>`, the transaction statements as
// `tx:BEGIN|COMMIT|SAVEPOINT|RELEASE|ROLLBACK…`, a COMMIT with the WAL frames it wrote (`f=<n>`, from
// the WAL index, the `-shm` file's mxFrame) and `ck` when it copied frames back (nBackfill moved).
// TX_MARKS_STACK=1 adds to each transaction statement the svc functions on its stack (which body
// or batch ran it; slow, for orders only), TX_MARKS_STACK=all to every statement. TX_MARKS_SQL=0 marks the transaction statements only.
// p-spwhy: where a lone compat request's COMMIT lands against its `[DONE]` and the next request.
const { eachSqliteClass, statementPrototype, walIndex } = require('./sqlite-preload.cjs');

const STACK = process.env.TX_MARKS_STACK === '1' || process.env.TX_MARKS_STACK === 'all';
const STACK_ALL = process.env.TX_MARKS_STACK === 'all';
const SQL = process.env.TX_MARKS_SQL !== '0';
const TX = /^\s*(BEGIN|COMMIT|END|SAVEPOINT|RELEASE|ROLLBACK)\b/i;
// Frames that only carry the statement (this preload, the statement helpers): left out of the stack tag.
const PLUMBING = new Set(['record', 'runMarked', 'execMarked', 'runTransactionStatement', 'tx', 'retryBusy']);
// TX_MARKS_CPU=1: each mark ends with ` cpu=<µs>`, the process's CPU time so far (user + system, all
// threads), so that spans between marks can be read in CPU time too (less moved by the box's load).
const CPU = process.env.TX_MARKS_CPU === '1';
const cpu = () => {
  const { user, system } = process.cpuUsage();
  return ` cpu=${user + system}`;
};
const mark = (name) => globalThis.__mark?.(CPU ? `${name}${cpu()}` : name);
function callers() {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 24;
  const stack = new Error().stack ?? '';
  Error.stackTraceLimit = limit;
  const names = [];
  for (const line of stack.split('\n').slice(2)) {
    const match = /^\s*at (?:async )?([\w$.<>]+) \(/.exec(line);
    const name = match?.[1].replace(/^Object\./, '');
    if (!name || PLUMBING.has(name) || names.at(-1) === name) continue;
    names.push(name);
    if (names.length === 6) break;
  }
  return names.join('<');
}
function record(db, sql, run) {
  const match = TX.exec(sql);
  if (!match) {
    if (SQL && !db.memory)
      mark(`sql:${sql.replace(/\s+/g, ' ').trim().slice(0, 48)}${STACK_ALL ? ` ${callers()}` : ''}`);
    return run();
  }
  const kind = sql.replace(/\s+/g, ' ').trim().toUpperCase();
  const commit = /^(COMMIT|END)/.test(kind);
  const before = commit ? walIndex(db) : undefined;
  const tag = STACK ? ` ${callers()}` : '';
  try {
    return run();
  } finally {
    let frames = '';
    if (before) {
      const after = walIndex(db);
      const wrote = after.mxFrame >= before.mxFrame ? after.mxFrame - before.mxFrame : after.mxFrame;
      frames = ` f=${wrote}${after.nBackfill !== before.nBackfill ? ' ck' : ''}`;
    }
    if (!db.memory) mark(`tx:${kind}${frames}${tag}`);
  }
}
eachSqliteClass((Database) => {
  const exec = Database.prototype.exec;
  Database.prototype.exec = function execMarked(sql) {
    return record(this, String(sql), () => exec.call(this, sql));
  };
  const proto = statementPrototype(Database);
  for (const method of ['run', 'get', 'all']) {
    const original = proto[method];
    proto[method] = function runMarked(...args) {
      return record(this.database, this.source, () => original.apply(this, args));
    };
  }
});
// TX_MARKS_TIMERS=1: each timer callback run is marked `tmo:<delay>` (with its setter's callers under
// TX_MARKS_STACK): whether a timer sits on a lone request's path.
if (process.env.TX_MARKS_TIMERS === '1') {
  for (const name of ['setTimeout', 'setInterval']) {
    const original = globalThis[name];
    const wrapped = function timerMarked(fn, delay, ...args) {
      if (typeof fn !== 'function') return original.call(this, fn, delay, ...args);
      const tag = `tmo:${name === 'setInterval' ? 'i' : ''}${delay ?? 0}${STACK ? ` ${callers()}` : ''}`;
      return original.call(
        this,
        function timerFired(...inner) {
          mark(tag);
          return fn.apply(this, inner);
        },
        delay,
        ...args,
      );
    };
    Object.defineProperties(wrapped, Object.getOwnPropertyDescriptors(original));
    globalThis[name] = wrapped;
  }
}
