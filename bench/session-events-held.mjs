// A transaction's 14 session events (a compat request's, issue 17 item 3, p-sqlev): one INSERT
// each, as before, against the transaction's first alone and the other 13 in one multi-row INSERT
// (src/store/held-rows.ts), on the `session_events` table and indexes svc's migrations make
// (AUTOINCREMENT id, (session_id, id) and (type, id)). Alternates the two BENCH_ROUNDS (default 3)
// times, BENCH_TRANSACTIONS (default 2,000) transactions each, in memory (no WAL write: the
// statements' own cost); prints CPU µs a transaction (the median's is the figure to quote). Reported, never asserted. `node bench/session-events-held.mjs`.
import Database from 'better-sqlite3';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const TRANSACTIONS = Number(process.env.BENCH_TRANSACTIONS ?? 2000);
const EVENTS = 14;
const db = new Database(':memory:');
db.exec(`CREATE TABLE session_events (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
           type TEXT NOT NULL, payload TEXT NOT NULL, created_at INTEGER NOT NULL);
         CREATE INDEX session_events_session ON session_events(session_id, id);
         CREATE INDEX session_events_type ON session_events(type, id);`);
const one = db.prepare(
  'INSERT INTO session_events (session_id, type, payload, created_at) VALUES (?, ?, ?, ?)',
);
const tuple = '(?, ?, ?, ?, ?)';
const many = db.prepare(
  `INSERT INTO session_events (id, session_id, type, payload, created_at) VALUES ${Array(EVENTS - 1)
    .fill(tuple)
    .join(', ')}`,
);
const payload = JSON.stringify({ run_id: 'run_0123456789', state: 'running', step: 1 });
const begin = db.prepare('BEGIN IMMEDIATE');
const commit = db.prepare('COMMIT');
let n = 0;
const each = () => {
  begin.run();
  const s = `ses_${n++ % 50}`;
  for (let i = 0; i < EVENTS; i++) one.run(s, 'state.changed', payload, n);
  commit.run();
};
const held = () => {
  begin.run();
  const s = `ses_${n++ % 50}`;
  const first = Number(one.run(s, 'state.changed', payload, n).lastInsertRowid);
  const values = [];
  for (let i = 1; i < EVENTS; i++) values.push(first + i, s, 'state.changed', payload, n);
  many.run(...values);
  commit.run();
};
// The thread's CPU (user + system), not wall time: a loaded box deschedules it.
const time = (fn) => {
  const started = process.cpuUsage();
  for (let i = 0; i < TRANSACTIONS; i++) fn();
  const { user, system } = process.cpuUsage(started);
  return (user + system) / TRANSACTIONS;
};
time(each);
time(held);
for (let round = 1; round <= ROUNDS; round++) {
  const a = time(each);
  const b = time(held);
  console.log(
    `round ${round}: one INSERT an event ${a.toFixed(1)} µs, first + one multi-row ${b.toFixed(1)} µs a transaction of ${EVENTS}`,
  );
}
