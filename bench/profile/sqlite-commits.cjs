// Preload measuring what the transaction statements of a svc process cost (issue 17 item 3):
// every BEGIN / COMMIT / SAVEPOINT / RELEASE / ROLLBACK run through better-sqlite3's
// `Database.exec` or a prepared statement, counted and timed by kind, and for each COMMIT the WAL
// frames it wrote and whether it ran the automatic checkpoint (read from the WAL index, the
// `-shm` file: mxFrame and nBackfill). Written at exit to `$TMPDIR/svc-sqlite-commits-<pid>.json`;
// SIGUSR2 resets (after a warm-up). Used by bench/sqlite-commits.mjs; not part of `npm run bench`.
const Module = require('node:module');
const { closeSync, openSync, readSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { dirname, join } = require('node:path');

const fresh = () => ({ kinds: {}, commits: [] });
let stats = fresh();
const KIND = /^\s*(BEGIN|COMMIT|END|SAVEPOINT|RELEASE|ROLLBACK)\b/i;
const shmOf = new Map();
/** mxFrame and nBackfill of the database's WAL index (little-endian, as on x86 and arm64). */
function walIndex(db) {
  let fd = shmOf.get(db.name);
  if (fd === undefined) {
    try {
      fd = openSync(`${db.name}-shm`, 'r');
    } catch {
      fd = null;
    }
    shmOf.set(db.name, fd);
  }
  if (fd === null) return undefined;
  const b = Buffer.alloc(100);
  readSync(fd, b, 0, 100, 0);
  return { mxFrame: b.readUInt32LE(16), nBackfill: b.readUInt32LE(96) };
}
function record(db, sql, run) {
  const match = KIND.exec(sql);
  if (!match) return run();
  const kind = match[1].toUpperCase() === 'END' ? 'COMMIT' : match[1].toUpperCase();
  const commit = kind === 'COMMIT' && !/ROLLBACK/i.test(sql);
  const before = commit ? walIndex(db) : undefined;
  const started = process.hrtime.bigint();
  try {
    return run();
  } finally {
    const ns = Number(process.hrtime.bigint() - started);
    if (!stats.kinds[kind]) stats.kinds[kind] = { n: 0, ns: 0, texts: new Set() };
    const s = stats.kinds[kind];
    s.n++;
    s.ns += ns;
    if (s.texts.size < 1000) s.texts.add(sql.replace(/\d+/g, 'N'));
    if (commit && before) {
      const after = walIndex(db);
      const frames = after.mxFrame >= before.mxFrame ? after.mxFrame - before.mxFrame : after.mxFrame;
      const checkpointed = after.nBackfill > before.nBackfill ? after.nBackfill - before.nBackfill : 0;
      // The WAL's length after this commit's frames: at 1000 and more (wal_autocheckpoint) the
      // committing connection ran the automatic checkpoint itself.
      const length = after.mxFrame >= before.mxFrame ? after.mxFrame : frames;
      stats.commits.push([ns, frames, checkpointed, length]);
    }
  }
}
const patched = new WeakSet();
const patch = (Database) => {
  if (typeof Database !== 'function' || patched.has(Database)) return;
  patched.add(Database);
  const exec = Database.prototype.exec;
  Database.prototype.exec = function execTimed(sql) {
    return record(this, String(sql), () => exec.call(this, sql));
  };
  const probe = new Database(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1'));
  probe.close();
  const run = proto.run;
  proto.run = function runTimed(...args) {
    return KIND.test(this.source)
      ? record(this.database, this.source, () => run.apply(this, args))
      : run.apply(this, args);
  };
};
const from = process.argv[1] ? dirname(process.argv[1]) : join(__dirname, '..', '..');
for (const name of ['better-sqlite3', 'better-sqlite3-napi']) {
  try {
    patch(require(require.resolve(name, { paths: [from, join(__dirname, '..', '..')] })));
  } catch {
    // not installed
  }
}
const originalLoad = Module._load;
Module._load = function load(request, parent, isMain) {
  const loaded = originalLoad.apply(this, [request, parent, isMain]);
  if (request === 'better-sqlite3' || request === 'better-sqlite3-napi') patch(loaded);
  return loaded;
};
process.on('SIGUSR2', () => {
  stats = fresh();
});
process.on('exit', () => {
  for (const fd of shmOf.values()) if (fd !== null) closeSync(fd);
  const kinds = Object.fromEntries(
    Object.entries(stats.kinds).map(([k, s]) => [k, { n: s.n, ns: s.ns, texts: s.texts.size }]),
  );
  writeFileSync(
    join(tmpdir(), `svc-sqlite-commits-${process.pid}.json`),
    JSON.stringify({ kinds, commits: stats.commits }),
  );
});
