// Where the WAL frames of a compat request come from (issue 17 item 3): one `svc service start
// http` node (./statements-harness.mjs), 20 requests of warm-up, a TRUNCATE checkpoint from this
// process, then BENCH_STATEMENTS_REQUESTS (default 20: under the 1000-frame automatic checkpoint)
// requests (BENCH_STATEMENTS_CONCURRENCY at once, default 10; 1 gives counts that do not depend on
// load: no commit carries two requests). Every COMMIT's frames are counted by the preload
// ./profile/sqlite-commits.cjs. The WAL is then read frame by frame (only frames of the current salt) and each page
// number is named by the b-tree it belongs to (`dbstat` of a copy of the database). Prints frames
// per request in all, per commit, and per table / index. BENCH_SVC_BIN runs another build.
// BENCH_FRAMES_KEEP=1 keeps the copy of the database. `node bench/sqlite-frames.mjs`; not part of `npm run bench`.
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

process.env.BENCH_STATEMENTS_REQUESTS ??= '20';
const { CONCURRENCY, compatStatements, REQUESTS } = await import('./statements-harness.mjs');
const Database = createRequire(import.meta.url)('better-sqlite3');

/** The `.data/svc.db` of the child: its workspace is its cwd. */
const dbOf = (child) => join(readlinkSync(`/proc/${child.pid}/cwd`), '.data', 'svc.db');

/** Valid frames of a WAL file: [page number, commit size (0 unless a commit frame)]. */
function walFrames(buf) {
  if (buf.length < 32) return [];
  const pageSize = buf.readUInt32BE(8);
  const salt1 = buf.readUInt32BE(16);
  const salt2 = buf.readUInt32BE(20);
  const frames = [];
  const pending = [];
  for (let at = 32; at + 24 + pageSize <= buf.length; at += 24 + pageSize) {
    if (buf.readUInt32BE(at + 8) !== salt1 || buf.readUInt32BE(at + 12) !== salt2) break;
    const page = buf.readUInt32BE(at);
    const commit = buf.readUInt32BE(at + 4);
    pending.push([page, commit]);
    if (commit) frames.push(...pending.splice(0));
  }
  return frames;
}

const copyDir = mkdtempSync(join(tmpdir(), 'svc-bench-frames-'));
let source;
const { errors, result } = await compatStatements({
  nodeArgs: [
    '--require',
    resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, 'profile/sqlite-commits.cjs'),
  ],
  warmedUp: async (child) => {
    child.kill('SIGUSR2');
    source = dbOf(child);
    const db = new Database(source);
    db.pragma('busy_timeout = 5000');
    const [row] = db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    if (row.busy) throw new Error('the TRUNCATE checkpoint was blocked; run again');
  },
  finished: async (child, exited) => {
    // Copy while the node is still up (its close would checkpoint and delete the WAL).
    for (const suffix of ['', '-wal']) copyFileSync(`${source}${suffix}`, join(copyDir, `svc.db${suffix}`));
    child.kill('SIGTERM');
    await exited;
    return JSON.parse(readFileSync(join(tmpdir(), `svc-sqlite-commits-${child.pid}.json`), 'utf8'));
  },
});
const counted = result.commits.reduce((n, [, f]) => n + f, 0);
const frames = walFrames(readFileSync(join(copyDir, 'svc.db-wal')));
const commits = frames.filter(([, c]) => c > 0).length;
const copy = join(copyDir, 'svc.db');
const names = new Map();
if (existsSync(copy)) {
  const db = new Database(copy, { readonly: true });
  for (const { name, pageno } of db.prepare('SELECT name, pageno FROM dbstat').iterate())
    names.set(pageno, name);
  db.close();
}
const byName = new Map();
const distinct = new Map();
for (const [page] of frames) {
  const name = page === 1 ? 'page 1 (header, sqlite_schema)' : (names.get(page) ?? '(free / other)');
  byName.set(name, (byName.get(name) ?? 0) + 1);
  if (!distinct.has(name)) distinct.set(name, new Set());
  distinct.get(name).add(page);
}
if (process.env.BENCH_FRAMES_KEEP) console.log(`database kept in ${copyDir}`);
else rmSync(copyDir, { recursive: true, force: true });
console.log(`${REQUESTS} compat requests, ${CONCURRENCY} at once (${errors} errors)`);
console.log(
  `WAL frames ${(counted / REQUESTS).toFixed(1)} a request; ${result.commits.length} commits (${(result.commits.length / REQUESTS).toFixed(2)} a request), ${(counted / Math.max(1, result.commits.length)).toFixed(1)} frames a commit`,
);
// The preload counted every COMMIT's frames: when the WAL restarted (an automatic checkpoint), the
// file holds only the frames since, and the split below covers those.
if (counted !== frames.length) {
  console.log(
    `(the WAL restarted: the ${frames.length} frames of its last ${commits} commits are split below)`,
  );
}
// Scaled to all the run's frames when the file holds only the last ones.
const scale = frames.length ? counted / frames.length : 0;
console.log('frames a request by b-tree (distinct pages in the run):');
for (const [name, n] of [...byName].sort((a, b) => b[1] - a[1])) {
  console.log(
    `${((n * scale) / REQUESTS).toFixed(2).padStart(7)}  ${String(distinct.get(name).size).padStart(5)}  ${name}`,
  );
}
