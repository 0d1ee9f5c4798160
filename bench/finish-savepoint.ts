/**
 * What a transaction body's SAVEPOINT + RELEASE costs inside an open SQLite batch (issue 17 item 3,
 * p-savepoint): svc's `atomicallyWith` (src/store/db.ts) with its savepoint (`undo`, every body
 * before p-savepoint) against without (`batchedWith`, a run's finish since), around the same body:
 * one UPDATE of a run's row and one session event (held for the batch's multi-row INSERT,
 * src/store/held-rows.ts, whose marks the savepoint moves), as a finish's. A step batch (`stepBatch`) open per block of BLOCK
 * bodies run one after the other (as the finish runs in the step batch of its run's last step),
 * committed at the check phase; blocks alternate between the two forms. CPU (process.cpuUsage) per
 * body, median over the blocks. Run by ./finish-savepoint.mjs (bundles this file first); not part
 * of `npm run bench`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEventStore } from '../src/events/event-store';
import { atomicallyWith, openDb, stepBatch } from '../src/store/db';

const BLOCK = Number(process.env.BENCH_BLOCK ?? 200);
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 200);

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-savepoint-'));
const db = openDb({ dataDir: dir });
try {
  db.prepare("INSERT INTO sessions (id, created_at, updated_at) VALUES ('ses_bench', 1, 1)").run();
  db.prepare(
    `INSERT INTO agent_runs (id, session_id, family_session_id, status, agent, origin, prompt, options, created_at, updated_at)
     VALUES ('run_bench', 'ses_bench', 'ses_bench', 'running', 'build', 'openai_compat', 'p', '{}', 1, 1)`,
  ).run();
  const update = db.prepare(
    "UPDATE agent_runs SET status = 'running', updated_at = ? WHERE id = 'run_bench'",
  );
  const log = createEventStore(db);
  let now = 2;
  const body = async () => {
    update.run(now);
    log.now.insert('ses_bench', 'run.finished', '{"status":"completed"}', now++);
  };
  const block = async (undo: boolean): Promise<number> => {
    stepBatch(() => db);
    const started = process.cpuUsage();
    for (let i = 0; i < BLOCK; i++) await atomicallyWith(() => db, body, undefined, undo);
    const used = process.cpuUsage(started);
    await new Promise((resolve) => setImmediate(resolve));
    if (db.inTransaction) throw new Error('the step batch did not commit');
    return (used.user + used.system) / BLOCK;
  };
  const times: Record<'savepoint' | 'none', number[]> = { savepoint: [], none: [] };
  for (let i = 0; i < 20; i++) await block(i % 2 === 0);
  for (let i = 0; i < BLOCKS; i++) {
    const undo = i % 2 === 0;
    times[undo ? 'savepoint' : 'none'].push(await block(undo));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const savepoint = median(times.savepoint);
  const none = median(times.none);
  console.log(
    `${BLOCKS} blocks of ${BLOCK} bodies, CPU µs a body (median): with SAVEPOINT + RELEASE ${savepoint.toFixed(2)}, ` +
      `without ${none.toFixed(2)}, difference ${(savepoint - none).toFixed(2)}`,
  );
} finally {
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
