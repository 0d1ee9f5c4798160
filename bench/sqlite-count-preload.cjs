// Counts the SQLite statements a svc process runs, by SQL text (issue 17 item 3, issue 18 item 6):
// `node --require bench/sqlite-count-preload.cjs dist/main.js …`. Wraps better-sqlite3's
// Statement get/all/run/iterate and Database exec wherever the process loads it; SIGUSR2 resets the
// counts (after a warm-up); at exit they are written as JSON to
// `<tmpdir>/svc-sqlite-counts-<pid>.json`. Used by bench/sqlite-statements.mjs; not a benchmark.
const Module = require('node:module');
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { tmpdir } = require('node:os');

let counts = new Map();
// SVC_COUNT_STACKS=<regex>: statements matching it are counted by their caller's stack as well.
const stacksOf = process.env.SVC_COUNT_STACKS ? new RegExp(process.env.SVC_COUNT_STACKS) : undefined;
const bump = (sql) => {
  counts.set(sql, (counts.get(sql) ?? 0) + 1);
  if (!stacksOf?.test(sql)) return;
  const stack = (new Error().stack ?? '')
    .split('\n')
    .slice(3, 12)
    .map((line) => line.trim().replace(/\(.*\/(src|dist|node_modules)\//, '($1/'))
    .join(' < ');
  const key = `stack: ${stack}`;
  counts.set(key, (counts.get(key) ?? 0) + 1);
};
const patched = new WeakSet();
const originalLoad = Module._load;
Module._load = function load(request, parent, isMain) {
  const loaded = originalLoad.apply(this, [request, parent, isMain]);
  if (request === 'better-sqlite3' && !patched.has(loaded)) {
    patched.add(loaded);
    const proto = loaded.prototype;
    const prepare = proto.prepare;
    let statementProto;
    proto.prepare = function wrappedPrepare(...args) {
      const statement = prepare.apply(this, args);
      const sp = Object.getPrototypeOf(statement);
      if (sp !== statementProto && !patched.has(sp)) {
        patched.add(sp);
        statementProto = sp;
        for (const name of ['get', 'all', 'run', 'iterate']) {
          const original = sp[name];
          sp[name] = function counted(...a) {
            bump(this.source);
            return original.apply(this, a);
          };
        }
      }
      return statement;
    };
    const exec = proto.exec;
    proto.exec = function countedExec(sql) {
      bump(sql);
      return exec.call(this, sql);
    };
  }
  return loaded;
};
process.on('SIGUSR2', () => {
  counts = new Map();
});
process.on('exit', () => {
  writeFileSync(
    join(tmpdir(), `svc-sqlite-counts-${process.pid}.json`),
    JSON.stringify(Object.fromEntries(counts)),
  );
});
