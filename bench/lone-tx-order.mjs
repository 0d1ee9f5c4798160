// Where a lone compat request's SQLite transaction statements land (p-spwhy): reads dumps of
// bench/compat-timeline.mjs run with the statement marks of ./profile/tx-marks-preload.cjs
//   BENCH_NODE_ARGS="--require bench/profile/tx-marks-preload.cjs" BENCH_TIMELINE_DUMP=<file> \
//     node bench/compat-timeline.mjs
// and prints, per build (`node bench/lone-tx-order.mjs main=<dump>,<dump> other=<dump>`):
// 1. the most common sequences of a request's marks from its arrival to the next request's
//    arrival (transaction statements, socket writes, the client's and the fake model's marks,
//    check-phase hops), each with its count: the order, which the box's load does not change
//    except where two processes race (the client's marks against svc's);
// 2. counts a request: COMMITs, the COMMITs before its model answer was read (the start's batch
//    committed alone), the COMMITs after its `[DONE]`, and of those the ones that ran after the
//    client's next send (on the next request's path);
// 3. spans (ms, p10 / p25 / p50): under load read the low percentiles, and only side by side.
// With TX_MARKS_STACK=1 in BENCH_SVC_ENV each transaction statement names its callers.
import { readFileSync } from 'node:fs';

const KEPT = /^(S:tx:|S:out:|S:in:|S:req:|S:imm$|C:|P:)/;
const builds = process.argv.slice(2).map((arg) => {
  const at = arg.indexOf('=');
  return {
    label: arg.slice(0, at),
    requests: arg
      .slice(at + 1)
      .split(',')
      .flatMap(requestsOf),
  };
});
if (!builds.length) {
  console.error('usage: node bench/lone-tx-order.mjs <label>=<dump>[,<dump>…] …');
  process.exit(2);
}
for (const { label, requests } of builds) printSequences(label, requests);
printCounts(builds);
printSpans(builds);

/** A dump's svc requests: each one's marks from its client send to the next one's, with its window. */
function requestsOf(file) {
  const lines = readFileSync(file, 'utf8').split('\n');
  const windows = JSON.parse(lines[0]).map(([start, end]) => [BigInt(start), BigInt(end)]);
  const marks = lines
    .slice(1)
    .filter(Boolean)
    .map((line) => {
      const at = line.indexOf(' ');
      return [BigInt(line.slice(0, at)), line.slice(at + 1)];
    });
  const requests = [];
  for (let i = 0; i + 1 < windows.length; i++) {
    const [send, end] = windows[i];
    const next = windows[i + 1][0];
    // To the next request's arrival in svc: what svc runs before it is on its path.
    const nextArrival = marks.find(([at, name]) => at >= next && name === 'S:req:start')?.[0] ?? next;
    const inside = marks.filter(([at]) => at >= send && at < nextArrival);
    requests.push({ send, end, next, marks: inside });
  }
  return requests;
}

/** A mark's name for a sequence: frames, times and statement text left out. */
function shortName(name) {
  if (name.startsWith('S:tx:')) return name.replace(/ f=\d+( ck)?/, '').replace(/ cpu=\d+/, '');
  return name;
}

function printSequences(label, requests) {
  const counts = new Map();
  for (const request of requests) {
    const arrived = request.marks.findIndex(([, name]) => name === 'S:req:start');
    if (arrived < 0) continue;
    const names = request.marks
      .slice(arrived)
      .map(([, name]) => name)
      .filter((name) => KEPT.test(name))
      .map(shortName);
    const key = names.join(' | ');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const ranked = [...counts].sort((a, b) => b[1] - a[1]);
  console.log(`== ${label}: ${requests.length} requests, ${ranked.length} sequences; the most common:`);
  for (const [key, n] of ranked.slice(0, Number(process.env.BENCH_SEQUENCES ?? 3)))
    console.log(`${n}×  ${key}\n`);
}

/** Per request: [name, value] rows of counts. */
function countsOf(request) {
  const find = (test) => request.marks.find(([, name]) => test(name))?.[0];
  const arrived = find((n) => n === 'S:req:start');
  const answer = find((n) => n.startsWith('S:in:prov'));
  const done = find((n) => n.startsWith('S:out:cli') && n.includes('done'));
  const commits = request.marks.filter(([at, n]) => n.startsWith('S:tx:COMMIT') && at >= (arrived ?? 0n));
  const after = commits.filter(([at]) => done !== undefined && at > done);
  return [
    ['COMMITs', commits.length],
    [
      'COMMITs before the model answer was read',
      commits.filter(([at]) => answer !== undefined && at < answer).length,
    ],
    ['COMMITs after [DONE]', after.length],
    ["… of them after the client's next send", after.filter(([at]) => at > request.next).length],
    [
      'SAVEPOINTs',
      request.marks.filter(([at, n]) => n.startsWith('S:tx:SAVEPOINT') && at >= (arrived ?? 0n)).length,
    ],
  ];
}

function printCounts(all) {
  console.log(`== counts a request (mean)`);
  const rows = new Map();
  for (const { label, requests } of all) {
    for (const request of requests)
      for (const [name, value] of countsOf(request)) {
        if (!rows.has(name)) rows.set(name, {});
        const row = rows.get(name);
        row[label] = (row[label] ?? 0) + value / requests.length;
      }
  }
  console.log(`${''.padEnd(44)}${all.map(({ label }) => label.padStart(12)).join('')}`);
  for (const [name, row] of rows)
    console.log(
      `${name.padEnd(44)}${all.map(({ label }) => (row[label] ?? 0).toFixed(2).padStart(12)).join('')}`,
    );
}

/** Per request: [name, ms] spans between its marks. */
function spansOf(request) {
  const find = (test) => request.marks.find(([, name]) => test(name))?.[0];
  const arrived = find((n) => n === 'S:req:start');
  const modelOut = find((n) => n.startsWith('S:out:prov') && n.includes('request'));
  const answer = find((n) => n.startsWith('S:in:prov'));
  const text = find((n) => n.startsWith('S:out:cli') && n.includes('text'));
  const done = find((n) => n.startsWith('S:out:cli') && n.includes('done'));
  const lastCommit = request.marks.findLast(([, n]) => n.startsWith('S:tx:COMMIT'))?.[0];
  const ms = (from, to) => (from === undefined || to === undefined ? undefined : Number(to - from) / 1e6);
  return [
    ['client send → request in svc', ms(request.send, arrived)],
    ['request in → model request written', ms(arrived, modelOut)],
    ['model request → answer read', ms(modelOut, answer)],
    ['answer read → first text written', ms(answer, text)],
    ['first text → [DONE] written', ms(text, done)],
    ['[DONE] written → client has it', ms(done, request.end)],
    ["[DONE] written → the request's last COMMIT", lastCommit > done ? ms(done, lastCommit) : undefined],
    ["client end → client's next send", ms(request.end, request.next)],
    ['client send → client end', ms(request.send, request.end)],
  ];
}

function printSpans(all) {
  const at = (values, p) => values[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];
  console.log(`== spans (ms): p10 / p25 / p50 [n]`);
  const table = new Map();
  for (const { label, requests } of all)
    for (const request of requests)
      for (const [name, value] of spansOf(request)) {
        if (value === undefined) continue;
        if (!table.has(name)) table.set(name, {});
        const byLabel = table.get(name);
        if (!byLabel[label]) byLabel[label] = [];
        byLabel[label].push(value);
      }
  for (const [name, byLabel] of table) {
    const cells = all.map(({ label }) => {
      const values = (byLabel[label] ?? []).sort((a, b) => a - b);
      if (!values.length) return '—'.padStart(30);
      const shown = [10, 25, 50].map((p) => at(values, p).toFixed(3)).join(' / ');
      return `${shown} [${values.length}]`.padStart(30);
    });
    console.log(`${name.padEnd(44)}${cells.join('')}`);
  }
}
