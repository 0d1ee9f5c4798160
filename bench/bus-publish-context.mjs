// The bus's publish on a PostgreSQL-shaped log (issue 18): a log that answers a macrotask later
// and appends with `appendAcross`, so every publish captures the publisher's async context for
// its delivery (src/events/bus.ts). The publishes run inside an open AsyncLocalStorage scope, as
// a step's do inside a PostgreSQL transaction, with a session listener and two '*' listeners.
// For each tree (BENCH_TREES, comma-separated source trees; default this one), bundles a driver
// over its `src/` with rolldown, then runs the bundles in turn, BENCH_BUS_ROUNDS rounds (default
// 5) of BENCH_BUS_REQUESTS "requests" (default 3000) of 20 publishes each (a compat request's
// ≈ 20 on PostgreSQL). Prints the median per request, over the rounds (min–max), of the 20
// `publish` calls (the synchronous part, where the context is captured) and of the whole request
// until `flush` (appends and deliveries, the fake log's timers included), CPU time of the process.
// `BENCH_TREES=/work/base-40,$PWD node bench/bus-publish-context.mjs`; not part of `npm run bench`.
import { benchTrees, runTreeDrivers, showMedian as show } from './tree-drivers.mjs';

const trees = benchTrees();
const ROUNDS = Number(process.env.BENCH_BUS_ROUNDS ?? 5);
const REQUESTS = Number(process.env.BENCH_BUS_REQUESTS ?? 3000);

const driver = (tree) => `
import { AsyncLocalStorage } from 'node:async_hooks';
import { createEventBus } from '${tree}/src/events/bus';
import { systemClock } from '${tree}/src/util/ids';

let nextId = 0;
const maxIds = new Map();
const later = (value) => new Promise((resolve) => setImmediate(() => resolve(value())));
const store = {
  insert: () => later(() => ++nextId),
  maxId: (sessionId) => later(() => maxIds.get(sessionId) ?? 0),
  after: () => later(() => []),
  appendAcross: (events) => later(() => events.map((e) => {
    const previous = maxIds.get(e.sessionId) ?? 0;
    const id = ++nextId;
    maxIds.set(e.sessionId, id);
    return { id, previous };
  })),
};
const bus = createEventBus({ store: () => store, clock: systemClock, shared: true });
const scope = new AsyncLocalStorage();
let seen = 0;
let missing = 0;
bus.subscribe('*', () => { seen++; });
bus.subscribe('*', () => { if (scope.getStore() === undefined) missing++; });
const payload = { message_id: 'msg_0123456789', delta: 'Hello there, a delta of text', length: 0 };
const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; };
const times = { publish: [], request: [] };
for (let r = 0; r < ${REQUESTS}; r++) {
  const sessionId = 'ses_' + r;
  const off = bus.subscribe(sessionId, () => { seen++; });
  await scope.run({ open: true }, async () => {
    const started = cpu();
    const wall = process.hrtime.bigint();
    for (let k = 0; k < 20; k++) bus.publish(sessionId, 'message.delta', payload);
    times.publish.push(Number(process.hrtime.bigint() - wall) / 1000);
    await bus.flush();
    times.request.push(cpu() - started);
  });
  off();
}
const median = (list) => { const s = list.slice(list.length >> 2).sort((a, b) => a - b); return s[s.length >> 1]; };
console.log(JSON.stringify({ publish: median(times.publish), request: median(times.request), seen, missing }));
`;

const results = runTreeDrivers({
  name: 'bus-publish-context',
  trees,
  rounds: ROUNDS,
  driver,
  check: (result, tree) => {
    // Every delivery must run in its publisher's context, or the figure measures something else.
    if (result.missing)
      throw new Error(`${tree}: ${result.missing} deliveries outside their publisher's context`);
  },
});
console.log(`µs per request of 20 publishes, median over ${ROUNDS} rounds of ${REQUESTS} (min–max)`);
trees.forEach((tree, i) => {
  console.log(
    `${tree}: 20 publish calls ${show(results[i], 'publish')}, ` +
      `the request until flush (CPU) ${show(results[i], 'request')}`,
  );
});
