// A step's usage UPDATE of its session on SQLite (issue 17 item 3, p-sqlusage): `RETURNING *`
// answered as better-sqlite3's row object (the form before p-sqlusage) against `RETURNING` of the
// 9 columns some writer may change, read as values (`raw`) and filled into a copy of the table's
// template with the 4 fixed columns held and `updated_at` from the statement's own value (the
// form of src/sessions/session-row-known.ts), then `toSession`'s metadata parse for both. The
// table as migration 'foundation' makes it, WAL; a session with a compat request's metadata and
// a workspace path; the two forms alternating in rounds of 200 updates inside one transaction.
// Prints the median CPU time per update (process.cpuUsage: the box's load
// moves it less than wall time). `node bench/session-usage-returning.mjs`; not part of `npm run bench`.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3');
const ROUNDS = Number(process.env.BENCH_USAGE_ROUNDS ?? 400);
const PER_ROUND = 200;

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-usage-'));
const db = new Database(join(dir, 'svc.db'));
try {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE sessions (
    id TEXT PRIMARY KEY, parent_id TEXT REFERENCES sessions(id) ON DELETE CASCADE,
    title TEXT NOT NULL DEFAULT '', mode TEXT NOT NULL DEFAULT 'build', agent TEXT NOT NULL DEFAULT 'build',
    model TEXT, reasoning_effort TEXT, workspace TEXT NOT NULL DEFAULT '',
    prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0, metadata TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
    CREATE INDEX sessions_parent ON sessions(parent_id);
    CREATE INDEX sessions_updated ON sessions(updated_at);`);
  const metadata = JSON.stringify({
    origin: 'openai_compat',
    request_id: 'chatcmpl_01JEXAMPLE',
    user: 'bench',
  });
  const id = 'ses_01JBENCHSESSION0000000000';
  db.prepare(
    `INSERT INTO sessions (id, parent_id, title, mode, agent, model, workspace, metadata, created_at, updated_at)
     VALUES (?, NULL, 'openai compat request', 'build', 'build', 'fake/m1', '/home/user/projects/workspace', ?, 1, 1)`,
  ).run(id, metadata);
  const update =
    'UPDATE sessions SET prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?, cost = cost + ?, updated_at = ? WHERE id = ?';
  const whole = db.prepare(`${update} RETURNING *`);
  const columns = whole.columns().map((c) => c.name);
  const fixed = ['id', 'parent_id', 'workspace', 'created_at'];
  const answered = columns.filter((c) => !fixed.includes(c) && c !== 'updated_at');
  const short = db.prepare(`${update} RETURNING ${answered.join(', ')}`);
  const template = JSON.parse(JSON.stringify(Object.fromEntries(columns.map((c) => [c, null]))));
  const held = { id, parent_id: null, workspace: '/home/user/projects/workspace', created_at: 1 };
  const toSession = (row) => ({ ...row, metadata: JSON.parse(row.metadata) });
  let now = 2;
  let sink = 0;
  const forms = {
    whole: () => {
      const row = whole.get(1, 2, 0.001, now++, id);
      sink += toSession(row).prompt_tokens;
    },
    short: () => {
      const at = now++;
      let values;
      try {
        values = short.raw(true).get(1, 2, 0.001, at, id);
      } finally {
        short.raw(false);
      }
      const row = { ...template };
      for (const column of fixed) row[column] = held[column];
      row.updated_at = at;
      for (let i = 0; i < answered.length; i++) row[answered[i]] = values[i];
      sink += toSession(row).prompt_tokens;
    },
  };
  const times = { whole: [], short: [] };
  const begin = db.prepare('BEGIN');
  const commit = db.prepare('COMMIT');
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 ? ['short', 'whole'] : ['whole', 'short']) {
      begin.run();
      const started = process.cpuUsage();
      for (let i = 0; i < PER_ROUND; i++) forms[name]();
      const { user, system } = process.cpuUsage(started);
      commit.run();
      if (round >= ROUNDS / 10) times[name].push((user + system) / PER_ROUND);
    }
  }
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    `usage UPDATE, median CPU µs per update over ${times.whole.length} rounds of ${PER_ROUND} (sink ${sink > 0})`,
  );
  console.log(`  RETURNING * (14 columns, row object):      ${median(times.whole).toFixed(2)}`);
  console.log(`  RETURNING 9 columns (raw, template filled): ${median(times.short).toFixed(2)}`);
} finally {
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
