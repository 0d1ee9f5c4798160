// The session bus's publish and the run ledger's append in-process on SQLite (issue 17 item 3):
// what they cost in JavaScript and SQLite together, without HTTP, the agent or the AI SDK around
// them, so a change of a few µs shows (the compat bench's CPU per request moves by more than that
// between two runs of the same build). For each tree (BENCH_TREES, comma-separated source trees;
// default this one), bundles a driver over its `src/` with rolldown, then runs the bundles in turn,
// BENCH_BUS_ROUNDS rounds (default 3) of BENCH_BUS_REQUESTS "requests" each (default 4000): a new
// session and run, then in one transaction the 14 session events of a compat request (a session
// listener and two '*' listeners subscribed) and 10 ledger appends (one append listener). Prints
// the median per request of each part, over the rounds (min–max). `raw` is the 14 events' own
// JSON.stringify and INSERT alone, the floor under the bus.
// `BENCH_TREES=/work/base-40,$PWD node bench/bus-append.mjs`; not part of `npm run bench`.
import { benchTrees, runTreeDrivers, showMedian as show } from './tree-drivers.mjs';

const trees = benchTrees();
const ROUNDS = Number(process.env.BENCH_BUS_ROUNDS ?? 3);
const REQUESTS = Number(process.env.BENCH_BUS_REQUESTS ?? 4000);

const driver = (tree) => `
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDb } from '${tree}/src/store/db';
import { createEventBus } from '${tree}/src/events/bus';
import { createRunLedger } from '${tree}/src/runs/run-ledger';
import { createIds, systemClock } from '${tree}/src/util/ids';

const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-bus-'));
const db = openDb({ dataDir });
const bus = createEventBus({ db: () => db, clock: systemClock });
let seen = 0;
bus.subscribe('*', () => { seen++; });
bus.subscribe('*', (event) => { if (event.type === 'file.changed') seen--; });
const ledger = createRunLedger({ clock: systemClock, ids: createIds(), runner: 'bench', db: () => db, dbPath: join(dataDir, 'svc.db') });
ledger.onAppend(() => { seen++; });
const TYPES = ['session.created', 'queue.changed', 'state.changed', 'run.started', 'message.created', 'message.delta',
  'message.completed', 'context.usage', 'message.created', 'message.delta', 'message.completed', 'state.changed',
  'queue.changed', 'run.finished'];
const addSession = db.prepare('INSERT INTO sessions (id, created_at, updated_at) VALUES (?, 1, 1)');
const rawInsert = db.prepare('INSERT INTO session_events (session_id, type, payload, created_at) VALUES (?, ?, ?, ?)');
const times = { publish: [], raw: [], append: [], create: [] };
const payload = (sessionId, runId) => ({ session_id: sessionId, run_id: runId, message_id: 'msg_0123456789', delta: 'Hello there, a delta of text', length: 0 });
const N = ${REQUESTS};
for (let r = 0; r < N; r++) {
  const sessionId = 'ses_' + r;
  addSession.run(sessionId);
  let started = process.hrtime.bigint();
  const run = await ledger.create({ session_id: sessionId, family_session_id: sessionId, agent: 'build', origin: 'compat', prompt: 'p', options: { max_steps: 3 } });
  times.create.push(Number(process.hrtime.bigint() - started));
  db.exec('BEGIN IMMEDIATE');
  const off = bus.subscribe(sessionId, () => { seen++; });
  started = process.hrtime.bigint();
  for (const type of TYPES) bus.publish(sessionId, type, payload(sessionId, run.id));
  times.publish.push(Number(process.hrtime.bigint() - started));
  started = process.hrtime.bigint();
  for (let k = 0; k < 10; k++) await ledger.append(run.id, 'step.finished', { step: k, usage: { input_tokens: 10, output_tokens: 5 } });
  times.append.push(Number(process.hrtime.bigint() - started));
  off();
  db.exec('COMMIT');
  // The raw inserts in a transaction of their own: inside the bus's, the events it holds were
  // answered the ids after the transaction's last (p-sqlev), which a write beside the store takes.
  db.exec('BEGIN IMMEDIATE');
  started = process.hrtime.bigint();
  for (const type of TYPES) Number(rawInsert.run(sessionId, type, JSON.stringify(payload(sessionId, run.id)), Date.now()).lastInsertRowid);
  times.raw.push(Number(process.hrtime.bigint() - started));
  db.exec('COMMIT');
}
// The first quarter is warm-up.
const median = (list) => { const s = list.slice(list.length >> 2).sort((a, b) => a - b); return s[s.length >> 1] / 1000; };
console.log(JSON.stringify({ publish: median(times.publish), raw: median(times.raw), append: median(times.append), create: median(times.create), seen }));
db.close();
rmSync(dataDir, { recursive: true, force: true });
`;

const results = runTreeDrivers({ name: 'bus-append', trees, rounds: ROUNDS, driver });
console.log(`µs per request, median over ${ROUNDS} rounds of ${REQUESTS} (min–max)`);
trees.forEach((tree, i) => {
  console.log(
    `${tree}: 14 publishes ${show(results[i], 'publish')}, their raw inserts ${show(results[i], 'raw')}, ` +
      `10 ledger appends ${show(results[i], 'append')}, a run's create ${show(results[i], 'create')}`,
  );
});
