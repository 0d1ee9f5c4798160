/**
 * What the message search index costs a tool step's writes on SQLite (issue 17 item 2), in one
 * process: the session store's real writes of an agent-loop step (the assistant message appended
 * empty and updated with its tool call, the tool message appended and updated with its result,
 * one commit a step, as the step batch makes them) on a database with the triggers of migration 3
 * (the index written in the step's commit) and on one with migration 5's log, whose catch-up
 * (src/store/message-search-log.ts) runs every CATCH_UP_EVERY steps and is counted. Blocks of
 * BLOCK steps alternate between the two; CPU (process.cpuUsage) per step, median over the blocks.
 * Run by ./search-index-step.mjs (bundles this file first); not part of `npm run bench`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSessionStore } from '../src/sessions/session-store';
import { type Db, openDb } from '../src/store/db';
import { catchUpMessageSearch } from '../src/store/message-search-log';
import { migrations } from '../src/store/migrations/index';
import { createSequentialIds } from '../src/util/ids';

const BLOCK = Number(process.env.BENCH_BLOCK ?? 50);
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 20);
const CATCH_UP_EVERY = Number(process.env.BENCH_CATCH_UP_EVERY ?? 100);
const OUTPUT = JSON.stringify({
  phase: 'implement',
  workflow: 'default',
  steps: ['plan', 'implement', 'review'],
});

async function variant(name: string, old: boolean) {
  const db: Db = openDb({
    dataDir: mkdtempSync(join(tmpdir(), 'svc-bench-search-')),
    ...(old ? { migrations: migrations.filter((m) => m.id < 5) } : {}),
  });
  let now = 1_000;
  const store = createSessionStore({
    db: () => db,
    clock: { now: () => ++now },
    ids: createSequentialIds(),
    workspace: '/w',
  });
  const session = await store.create({ title: 'bench' });
  let steps = 0;
  const step = async () => {
    db.prepare('BEGIN IMMEDIATE').run();
    const reply = await store.appendMessage({
      session_id: session.id,
      role: 'assistant',
      parts: [],
      finished: false,
    });
    const call = {
      type: 'tool-call' as const,
      tool_call_id: `call_${steps}`,
      tool: 'get_workflow_phase',
      input: {},
    };
    await store.updateMessage(reply.id, { parts: [call] });
    const tool = await store.appendMessage({
      session_id: session.id,
      role: 'tool',
      parts: [],
      finished: false,
    });
    await store.updateMessage(tool.id, {
      parts: [{ type: 'tool-result', tool_call_id: call.tool_call_id, tool: call.tool, output: OUTPUT }],
      finished: true,
    });
    await store.updateMessage(reply.id, { finished: true });
    db.prepare('COMMIT').run();
    steps++;
    if (!old && steps % CATCH_UP_EVERY === 0) catchUpMessageSearch(db);
  };
  return { name, db, step };
}

const variants = [
  await variant('index in the commit (migration 3)', true),
  await variant('index from the log (migration 5)', false),
];
const perStep = new Map<string, number[]>(variants.map((v) => [v.name, []]));
for (const v of variants) for (let i = 0; i < BLOCK; i++) await v.step(); // warm-up
for (let b = 0; b < BLOCKS; b++) {
  for (const v of b % 2 ? [...variants].reverse() : variants) {
    const start = process.cpuUsage();
    for (let i = 0; i < BLOCK; i++) await v.step();
    const used = process.cpuUsage(start);
    perStep.get(v.name)?.push((used.user + used.system) / BLOCK);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
for (const v of variants) {
  const xs = perStep.get(v.name) ?? [];
  console.log(
    `${v.name.padEnd(36)} ${median(xs).toFixed(0).padStart(5)} µs CPU a step (blocks ${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`,
  );
  v.db.close();
}
