// What the SQLite preloads (./sqlite-statements.cjs, ./sqlite-commits.cjs, ./tx-marks-preload.cjs)
// share: patching every better-sqlite3 `Database` class the process has or loads, its statements'
// prototype, and the WAL index of a database (its `-shm` file).
const Module = require('node:module');
const { closeSync, openSync, readSync } = require('node:fs');
const { dirname, join } = require('node:path');

/**
 * `patch(Database)` once for each class of the packages `names`: the copy of the build being run
 * (BENCH_SVC_BIN may be another checkout's: found from the entry script, else this checkout's) and
 * any other copy the process loads later. A package not installed is passed over.
 */
function eachSqliteClass(patch, names = ['better-sqlite3', 'better-sqlite3-napi']) {
  const patched = new WeakSet();
  const once = (Database) => {
    if (typeof Database !== 'function' || patched.has(Database)) return;
    patched.add(Database);
    patch(Database);
  };
  const from = process.argv[1] ? dirname(process.argv[1]) : join(__dirname, '..', '..');
  for (const name of names) {
    try {
      once(require(require.resolve(name, { paths: [from, join(__dirname, '..', '..')] })));
    } catch {
      // not installed
    }
  }
  const load = Module._load;
  Module._load = function loadPatched(request, parent, isMain) {
    const loaded = load.apply(this, [request, parent, isMain]);
    if (names.includes(request)) once(loaded);
    return loaded;
  };
}

/** The prototype of `Database`'s statements (better-sqlite3 exports no Statement class). */
function statementPrototype(Database) {
  const probe = new Database(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1'));
  probe.close();
  return proto;
}

const shm = new Map();
/** mxFrame and nBackfill of the database's WAL index (little-endian, as on x86 and arm64). */
function walIndex(db) {
  let fd = shm.get(db.name);
  if (fd === undefined) {
    try {
      fd = openSync(`${db.name}-shm`, 'r');
    } catch {
      fd = null;
    }
    shm.set(db.name, fd);
  }
  if (fd === null) return undefined;
  const b = Buffer.alloc(100);
  readSync(fd, b, 0, 100, 0);
  return { mxFrame: b.readUInt32LE(16), nBackfill: b.readUInt32LE(96) };
}
/** The WAL indexes `walIndex` opened, closed. */
function closeWalIndexes() {
  for (const fd of shm.values()) if (fd !== null) closeSync(fd);
  shm.clear();
}

module.exports = { closeWalIndexes, eachSqliteClass, statementPrototype, walIndex };
