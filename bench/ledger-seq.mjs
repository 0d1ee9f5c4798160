// The run ledger's append on SQLite (issue 17 item 3): what the seq subquery
// `(SELECT coalesce(max(seq), 0) + 1 FROM agent_run_events WHERE run_id = ?)` costs against a
// plain value, the form a run's later appends within one transaction use (src/runs/run-events.ts);
// and that plain value's insert answering its id by `RETURNING id` against `run` and its
// `lastInsertRowid` (the form insertEventAt uses since p-bus, src/runs/run-repository.ts).
// The table and its indexes as migration 'agent' makes them, WAL, foreign keys on; transactions
// of 10 appends to a new run, the two forms alternating, each run's appends timed together.
// "small": an empty ledger; "large": 300,000 events of 30,000 runs first, random run ids, a write
// to another table between appends (the page cache less warm). Prints the median per append.
// `node bench/ledger-seq.mjs`; not part of `npm run bench`.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3');
const ROUNDS = Number(process.env.BENCH_LEDGER_SEQ_ROUNDS ?? 4000);

function scenario(large) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-ledger-seq-'));
  const db = new Database(join(dir, 'svc.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
    db.pragma('synchronous = NORMAL');
    db.pragma('temp_store = MEMORY');
    db.pragma('cache_size = -4000');
    db.exec(`CREATE TABLE agent_runs (id TEXT PRIMARY KEY, x TEXT);
      CREATE TABLE agent_run_events (id INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL REFERENCES agent_runs(id) ON DELETE CASCADE, session_id TEXT NOT NULL,
        seq INTEGER NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL DEFAULT '{}', created_at INTEGER NOT NULL);
      CREATE UNIQUE INDEX agent_run_events_run ON agent_run_events(run_id, seq);
      CREATE INDEX agent_run_events_type ON agent_run_events(type, id);
      CREATE TABLE other (id INTEGER PRIMARY KEY, s TEXT, p TEXT); CREATE INDEX other_s ON other(s, id);`);
    const columns = 'INSERT INTO agent_run_events (run_id, session_id, seq, type, payload, created_at)';
    const withSubquery = db.prepare(
      `${columns} VALUES (?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM agent_run_events WHERE run_id = ?), ?, ?, ?) RETURNING id, seq`,
    );
    const plain = db.prepare(`${columns} VALUES (?, ?, ?, ?, ?, ?) RETURNING id`);
    const bare = db.prepare(`${columns} VALUES (?, ?, ?, ?, ?, ?)`);
    const insertRun = db.prepare('INSERT INTO agent_runs (id) VALUES (?)');
    const other = db.prepare('INSERT INTO other (s, p) VALUES (?, ?)');
    const payload = JSON.stringify({
      step: 1,
      usage: { input_tokens: 100, output_tokens: 20 },
      text: 'x'.repeat(100),
    });
    if (large) {
      db.transaction(() => {
        for (let k = 0; k < 30_000; k++) {
          insertRun.run(`old_${k}`);
          for (let seq = 1; seq <= 10; seq++) plain.get(`old_${k}`, 'ses', seq, 'step', payload, 0);
        }
      })();
    }
    const times = { subquery: [], plain: [], bare: [] };
    const forms = ['plain', 'subquery', 'bare'];
    for (let round = 0; round < ROUNDS; round++) {
      const id = large ? `run_${Math.floor(Math.random() * 1e12)}` : `run_${round}`;
      insertRun.run(id);
      const form = forms[round % 3];
      db.exec('BEGIN IMMEDIATE');
      const started = process.hrtime.bigint();
      for (let seq = 1; seq <= 10; seq++) {
        if (form === 'subquery') withSubquery.get(id, 'ses', id, 'step', payload, Date.now());
        else if (form === 'plain') plain.get(id, 'ses', seq, 'step', payload, Date.now()).id;
        else Number(bare.run(id, 'ses', seq, 'step', payload, Date.now()).lastInsertRowid);
        if (large) other.run(`s${round % 97}`, payload);
      }
      times[form].push(Number(process.hrtime.bigint() - started) / 10 / 1000);
      db.exec('COMMIT');
    }
    // The first quarter is warm-up.
    const median = (list) => {
      const sorted = list.slice(list.length >> 2).sort((a, b) => a - b);
      return sorted[sorted.length >> 1];
    };
    return { subquery: median(times.subquery), plain: median(times.plain), bare: median(times.bare) };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const [name, large] of [
  ['small', false],
  ['large', true],
]) {
  const { subquery, plain, bare } = scenario(large);
  console.log(
    `${name}: per append, median: with the seq subquery ${subquery.toFixed(2)} µs, plain value ${plain.toFixed(2)} µs (${(subquery - plain).toFixed(2)} µs saved), plain value without RETURNING ${bare.toFixed(2)} µs (${(plain - bare).toFixed(2)} µs less)`,
  );
}
