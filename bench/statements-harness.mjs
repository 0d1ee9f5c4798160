// The harness of ./sqlite-statements.mjs and ./store-statements.mjs: one `svc service start http`
// node on a new workspace over the fake provider, 20 compat requests of warm-up, then `requests`
// requests, 10 at once (BENCH_STATEMENTS_CONCURRENCY), BENCH_STATEMENTS_GAP_MS apart; BENCH_STATEMENTS_PACKS=1 with operating packs on. The callers count the statements around it (`warmedUp`, `finished`).
// Not a benchmark.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compatBody, fakeProvider, round, streamOnce } from './compat.bench.mjs';
import { startService, BENCH_TOKEN as TOKEN, writeCompatConfig } from './service-process.mjs';

export const BIN =
  process.env.BENCH_SVC_BIN ??
  resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../dist/main.js');
export const REQUESTS = Number(process.env.BENCH_STATEMENTS_REQUESTS ?? 50);
/** Requests at once (BENCH_STATEMENTS_CONCURRENCY, default 10). */
export const CONCURRENCY = Number(process.env.BENCH_STATEMENTS_CONCURRENCY ?? 10);
/** A pause after each group of CONCURRENCY requests (BENCH_STATEMENTS_GAP_MS, default 0): a quiet service's pace. */
export const GAP_MS = Number(process.env.BENCH_STATEMENTS_GAP_MS ?? 0);
/** BENCH_STATEMENTS_PACKS=1: operating packs on (`options.operating_packs`, no pack applied to the new sessions). */
const PACKS = process.env.BENCH_STATEMENTS_PACKS === '1' ? '[options]\noperating_packs = true\n' : '';

/** Prints `rows` ({ text, calls }) per `per`, most called first, leaving out the ones under 0.05. */
export function printRows(rows, per) {
  for (const { text, calls, plans, ms, planMs } of [...rows].sort((a, b) => b.calls - a.calls)) {
    if (calls / per < 0.05) continue;
    const shown = text.startsWith('stack: ')
      ? text
      : text.replace(/\s+/g, ' ').slice(0, Number(process.env.BENCH_STATEMENTS_WIDTH ?? 150));
    // `plans` (PostgreSQL's top-level plans, when counted): after the calls.
    const planned = plans === undefined ? '' : `${(plans / per).toFixed(2).padStart(7)}  `;
    // `ms` (the server's plan + execution time a call, when counted): after the plans.
    // `planMs` (of it, the planning's, when counted): after it.
    const planning = planMs === undefined ? '' : ` (plan ${(planMs / calls).toFixed(3)})`;
    const server = ms === undefined ? '' : `${(ms / calls).toFixed(3).padStart(7)}ms${planning}  `;
    console.log(`${(calls / per).toFixed(2).padStart(7)}  ${planned}${server}${shown}`);
  }
}

/**
 * Runs the compat requests on one node started with `nodeArgs` and `env` (on top of the
 * workspace's); `warmedUp(child)` after the warm-up, `finished(child, exited)` after the requests,
 * before the node is stopped. Answers the requests' error count and what `finished` answered.
 */
export async function compatStatements({ nodeArgs = [], env = {}, warmedUp, finished }) {
  const provider = await fakeProvider();
  const ws = mkdtempSync(join(tmpdir(), 'svc-bench-statements-'));
  writeCompatConfig(ws, provider.url, { extra: PACKS });
  mkdirSync(join(ws, '.data'), { recursive: true });
  const { child, url, exited } = startService({
    bin: BIN,
    ws,
    nodeArgs,
    env: { SVC_DATA_DIR: join(ws, '.data'), ...env },
    stderr: 'inherit',
  });
  try {
    const base = `${await url}/v1`;
    const auth = { authorization: `Bearer ${TOKEN}` };
    const body = compatBody('statements request');
    await round(20, (i) => streamOnce(base, auth, body(i)));
    await new Promise((r) => setTimeout(r, 500));
    await warmedUp(child);
    let errors = 0;
    for (let done = 0; done < REQUESTS; done += CONCURRENCY) {
      const result = await round(Math.min(CONCURRENCY, REQUESTS - done), (i) =>
        streamOnce(base, auth, body(done + i)),
      );
      errors += result.errors.length;
      if (GAP_MS > 0) await new Promise((r) => setTimeout(r, GAP_MS));
    }
    await new Promise((r) => setTimeout(r, 500));
    return { errors, result: await finished(child, exited) };
  } finally {
    child.kill('SIGTERM');
    provider.server.close();
    await new Promise((r) => setTimeout(r, 300));
    rmSync(ws, { recursive: true, force: true });
  }
}
