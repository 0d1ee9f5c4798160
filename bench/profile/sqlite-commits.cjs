// Preload measuring what the transaction statements of a svc process cost (issue 17 item 3):
// every BEGIN / COMMIT / SAVEPOINT / RELEASE / ROLLBACK run through better-sqlite3's
// `Database.exec` or a prepared statement, counted and timed by kind, and for each COMMIT the WAL
// frames it wrote and whether it ran the automatic checkpoint (read from the WAL index, the
// `-shm` file: mxFrame and nBackfill). Written at exit to `$TMPDIR/svc-sqlite-commits-<pid>.json`;
// SIGUSR2 resets (after a warm-up). Used by bench/sqlite-commits.mjs; not part of `npm run bench`.
const { writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { closeWalIndexes, eachSqliteClass, statementPrototype, walIndex } = require('./sqlite-preload.cjs');

const fresh = () => ({ kinds: {}, commits: [] });
let stats = fresh();
const KIND = /^\s*(BEGIN|COMMIT|END|SAVEPOINT|RELEASE|ROLLBACK)\b/i;
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
eachSqliteClass((Database) => {
  const exec = Database.prototype.exec;
  Database.prototype.exec = function execTimed(sql) {
    return record(this, String(sql), () => exec.call(this, sql));
  };
  const proto = statementPrototype(Database);
  const run = proto.run;
  proto.run = function runTimed(...args) {
    return KIND.test(this.source)
      ? record(this.database, this.source, () => run.apply(this, args))
      : run.apply(this, args);
  };
});
process.on('SIGUSR2', () => {
  stats = fresh();
});
process.on('exit', () => {
  closeWalIndexes();
  const kinds = Object.fromEntries(
    Object.entries(stats.kinds).map(([k, s]) => [k, { n: s.n, ns: s.ns, texts: s.texts.size }]),
  );
  writeFileSync(
    join(tmpdir(), `svc-sqlite-commits-${process.pid}.json`),
    JSON.stringify({ kinds, commits: stats.commits }),
  );
});
