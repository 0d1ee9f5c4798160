// The HTTP edge's route match per request (issue 17 item 3): the real app's routes
// (`createHttpApp`, every built-in route and extension) and Hono's router alone, in-process, so a
// change of a few hundred ns shows. For each tree (BENCH_TREES, comma-separated source trees;
// default this one), bundles a driver over its `src/` with rolldown, then runs the bundles in
// turn, alternating, BENCH_ROUTER_ROUNDS rounds (default 5). Each round is a fresh process: the
// first match (the SmartRouter's choice and the matcher's build) and the next BENCH_ROUTER_COLD
// (default 200) are timed apart from the warm ones (BENCH_ROUTER_CALLS, default 200000), which go
// over the compat request's path and a few others. Prints the router chosen and the median per
// match over the rounds (min–max), wall time and process CPU.
// `BENCH_TREES=/work/base-44,$PWD node bench/router-dispatch.mjs`; not part of `npm run bench`.
import { benchTrees, runTreeDrivers, showMedian as show } from './tree-drivers.mjs';

const trees = benchTrees();
const ROUNDS = Number(process.env.BENCH_ROUTER_ROUNDS ?? 5);
const COLD = Number(process.env.BENCH_ROUTER_COLD ?? 200);
const CALLS = Number(process.env.BENCH_ROUTER_CALLS ?? 200000);

const driver = (tree) => `
import { createHttpApp } from '${tree}/src/surfaces/http/index';

const hono = createHttpApp(() => undefined, { token: 'bench' });
const router = hono.router;
// The compat request first (the bench's whole point), then the other paths a client hits.
const REQUESTS = [
  ['POST', '/v1/chat/completions'],
  ['POST', '/v1/chat/completions'],
  ['POST', '/v1/chat/completions'],
  ['GET', '/v1/sessions/ses_0123456789/events'],
  ['GET', '/v1/agent-runs/run_0123456789'],
  ['GET', '/healthz'],
  ['GET', '/assets/index-abc123.js'],
  ['GET', '/v1/not-a-route'],
];
let seen = 0;
let started = process.hrtime.bigint();
seen += router.match('POST', '/v1/chat/completions')[0].length;
const first = Number(process.hrtime.bigint() - started) / 1000;
const cpu0 = process.cpuUsage();
started = process.hrtime.bigint();
for (let i = 0; i < ${COLD}; i++) {
  const [method, path] = REQUESTS[i % REQUESTS.length];
  seen += router.match(method, path)[0].length;
}
const cold = Number(process.hrtime.bigint() - started) / ${COLD};
const cpu1 = process.cpuUsage(cpu0);
started = process.hrtime.bigint();
for (let i = 0; i < ${CALLS}; i++) {
  const [method, path] = REQUESTS[i & 7];
  seen += router.match(method, path)[0].length;
}
const warm = Number(process.hrtime.bigint() - started) / ${CALLS};
const cpu2 = process.cpuUsage(cpu1);
const used = (u) => (u.user + u.system) * 1000;
const name = router.activeRouter?.name ?? router.name;
console.log(JSON.stringify({ name, first, cold, warm, coldCpu: used(cpu1) / ${COLD}, warmCpu: used(cpu2) / ${CALLS}, seen }));
`;

const results = runTreeDrivers({
  name: 'router-dispatch',
  trees,
  rounds: ROUNDS,
  driver,
  bundleArgs: ['--inline-dynamic-imports'],
});
console.log(
  `ns per match, median over ${ROUNDS} rounds (min–max): the first, ${COLD} cold, then ${CALLS} warm`,
);
trees.forEach((tree, i) => {
  console.log(
    `${tree} (${results[i][0].name}): first match ${show(results[i], 'first')} µs, cold ${show(results[i], 'cold')} (CPU ${show(results[i], 'coldCpu')}), ` +
      `warm ${show(results[i], 'warm')} (CPU ${show(results[i], 'warmCpu')})`,
  );
});
