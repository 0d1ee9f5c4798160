// Where a PostgreSQL agent-loop tool step's wall time goes (issue 18 item 6, p-steppg): one
// bench/agent-loop.bench.mjs run (BENCH_STEPS tool steps, default 100) on a throwaway PostgreSQL,
// with every statement svc sends logged (sent, answered: a `--import` hook on pg's
// `Client.prototype.query` in the svc process) and the fake model server's marks (request arrived,
// response ended), all on CLOCK_MONOTONIC. For each steady step (the 6th on): from the model's
// answer to the next request, the step's start statement (assistant message, `tool.started`), its
// step end, the previous step's end still in flight, and any other statement. Prints the medians
// and one step's timeline. Firm: the order and which statements lie in the gap; the times are
// this box's (noisy when loaded). A step with no start statement (p-heldstep: a lone read-only
// call's start in its step end) has its start columns empty (NaN, left out of the medians).
// The gap is split at svc's own marks (Node's `http.client.response.finish` and
// `http.client.request.start`): the answer's end reaching svc, svc's work to the next request, and
// that request reaching the server. BENCH_TIMELINE_STORE=sqlite runs the same on SQLite (the split
// rows only), for a side-by-side reading. BENCH_SVC_BIN runs another build.
// `node bench/step-timeline.mjs`; not part of `npm run bench`.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startPostgres } from './pg-cluster.mjs';

const BIN = process.env.BENCH_SVC_BIN ?? resolve(import.meta.dirname, '../dist/main.js');
const dir = mkdtempSync(join(tmpdir(), 'svc-step-timeline-'));
const svcLog = join(dir, 'svc.log');
const serverLog = join(dir, 'server.log');
const hook = join(dir, 'hook.mjs');
// The hook resolves pg as the svc build does (its node_modules) and logs each query's send and answer.
writeFileSync(
  hook,
  `import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import diagnostics_channel from 'node:diagnostics_channel';
const pg = createRequire(${JSON.stringify(createRequire(BIN).resolve('pg'))})('pg');
const lines = [];
// Each mark with the process's CPU time so far (µs, all threads): wall less CPU in a stretch is
// about the time svc waited for I/O.
const cpu = () => { const { user, system } = process.cpuUsage(); return user + system; };
const us = () => \`\${process.hrtime.bigint() / 1000n} \${cpu()}\`;
// The model's request and answer as svc sees them (svc's transport is node:http; the fake server writes the answer at once).
diagnostics_channel.subscribe('http.client.response.finish', () => lines.push(\`\${us()} svc answer\\n\`));
diagnostics_channel.subscribe('http.client.request.start', () => lines.push(\`\${us()} svc request\\n\`));
process.on('exit', () => appendFileSync(${JSON.stringify(svcLog)}, lines.join('')));
const query = pg.Client.prototype.query;
let n = 0;
pg.Client.prototype.query = function (...args) {
  const config = args[0];
  const text = (typeof config === 'string' ? config : (config?.text ?? '')).replace(/\\s+/g, ' ').slice(0, 40);
  const id = ++n;
  lines.push(\`\${us()} pg \${id} sent \${this.processID ?? 0} \${text}\\n\`);
  const answered = (error) => lines.push(\`\${us()} pg \${id} answered\${error ? ' error' : ''}\\n\`);
  const last = args.length - 1;
  if (typeof args[last] === 'function') {
    const callback = args[last];
    args[last] = function (error, ...rest) { answered(error); return callback.call(this, error, ...rest); };
    return query.apply(this, args);
  }
  const result = query.apply(this, args);
  if (typeof result?.then === 'function') result.then(() => answered(), (error) => answered(error ?? true));
  return result;
};
`,
);

// BENCH_TIMELINE_STORE=sqlite: the same run on SQLite, for the gap's split beside PostgreSQL's.
const onPg = process.env.BENCH_TIMELINE_STORE !== 'sqlite';
const pg = onPg ? await startPostgres() : undefined;
if (pg) process.env.BENCH_STORE_URL = await pg.createDatabase('svc_step_timeline');
process.env.BENCH_LOOP_TRACE = serverLog;
process.env.BENCH_NODE_ARGS = `${process.env.BENCH_NODE_ARGS ?? ''} --import ${hook}`;
const { runOnce } = await import('./agent-loop.bench.mjs');
try {
  await runOnce('all');
} finally {
  pg?.stop?.();
}

const events = [readFileSync(svcLog, 'utf8'), readFileSync(serverLog, 'utf8')]
  .join('')
  .trim()
  .split('\n')
  .map((line) => {
    const [at, second, ...rest] = line.split(' ');
    // svc's marks carry its CPU µs so far; the server's do not. `wait`: wall less CPU so far,
    // which grows while svc waits for I/O (and while a loaded box keeps it off the CPU).
    return /^\d+$/.test(second)
      ? { at: Number(at) / 1000, wait: (Number(at) - Number(second)) / 1000, what: rest.join(' ') }
      : { at: Number(at) / 1000, what: [second, ...rest].join(' ') };
  })
  .sort((a, b) => a.at - b.at);
if (process.env.BENCH_KEEP) console.log(`kept ${dir}`);
else rmSync(dir, { recursive: true, force: true });

const statements = new Map(); // id → { sent, sentWait, answered, answeredWait, text }
const responses = new Map(); // step → the server's end of its answer
const requests = new Map(); // step → the server's arrival of its request
const heardMarks = []; // svc's end of reading an answer: { at, wait }
const askedMarks = []; // svc's start of a request: { at, wait }
for (const { at, wait, what } of events) {
  const sent = what.match(/^pg (\d+) sent (\d+) (.*)$/);
  const answered = what.match(/^pg (\d+) answered/);
  const response = what.match(/^model response (\d+) ended/);
  const request = what.match(/^model request (\d+) arrived/);
  // `backend`: the PostgreSQL connection's server process (pg's `processID`).
  if (sent) statements.set(sent[1], { sent: at, sentWait: wait, backend: sent[2], text: sent[3] });
  else if (answered) Object.assign(statements.get(answered[1]), { answered: at, answeredWait: wait });
  else if (what === 'svc answer') heardMarks.push({ at, wait });
  else if (what === 'svc request') askedMarks.push({ at, wait });
  else if (response) responses.set(Number(response[1]), at);
  else if (request) requests.set(Number(request[1]), at);
}
const all = [...statements.values()];
const isStart = (s) => s.text.startsWith('WITH s AS (UPDATE sessions');
// The step end; its model call rides first when no start statement carried it (p-heldstep).
const isEnd = (s) => s.text.startsWith('WITH g AS') || s.text.startsWith('WITH svc_riding AS');
const rows = [];
let sample;
for (const [step, answer] of responses) {
  const next = requests.get(step + 1);
  if (step < 6 || next === undefined) continue;
  // The step's start statement (assistant message, `tool.started`), its end, the last end before.
  const found = all.find((s) => isStart(s) && s.sent > answer && s.sent < next);
  const end = all.find((s) => isEnd(s) && s.sent > (found?.sent ?? answer));
  // No start statement: its columns NaN, the end in its place where the start's time is read.
  const none = { sent: Number.NaN, answered: Number.NaN, sentWait: Number.NaN, answeredWait: Number.NaN };
  const start = found ?? none;
  const first = found ?? end;
  const previous = end && all.findLast((s) => isEnd(s) && s.sent < first.sent);
  const heard = heardMarks.find((mark) => mark.at >= answer - 1 && mark.at < (first?.sent ?? next));
  const asked = askedMarks.findLast((mark) => mark.at < next);
  const split = {
    'gap (answer ended → next request arrived)': next - answer,
    '  answer ended → svc read it': heard ? heard.at - answer : Number.NaN,
    '  svc read it → request made': heard && asked ? asked.at - heard.at : Number.NaN,
    '  request made → arrived (at the server)': asked ? next - asked.at : Number.NaN,
    '  svc waiting in it (answer read → request made)': heard && asked ? asked.wait - heard.wait : Number.NaN,
  };
  if (!onPg) {
    rows.push(split);
    continue;
  }
  if (!end || !previous) continue;
  const others = all.filter(
    (s) => s.sent > answer && s.sent < next && s !== start && s !== end && s !== previous,
  );
  rows.push({
    ...split,
    'steps with a start statement (share)': found ? 1 : 0,
    'answer ended → first statement sent (start, else end)': first.sent - answer,
    '  the previous step end in flight in it': Math.max(0, Math.min(previous.answered, first.sent) - answer),
    '  svc waiting in it (answer read → first sent)': heard ? first.sentWait - heard.wait : Number.NaN,
    'start round trip': start.answered - start.sent,
    '  svc waiting in it': start.answeredWait - start.sentWait,
    'start answered → end sent': end.sent - start.answered,
    '  svc waiting in it ': end.sentWait - start.answeredWait,
    'end sent → next request arrived (negative: sent after it)': next - end.sent,
    'end round trip': end.answered - end.sent,
    'end answered before the next answer ended (share)': end.answered < responses.get(step + 1) ? 1 : 0,
    'other statements sent in the gap (mean)': others.length,
    ...(found
      ? {
          'end sent before the start answered (share)': end.sent < start.answered ? 1 : 0,
          'start and end on one connection (share)': end.backend === start.backend ? 1 : 0,
        }
      : {}),
  });
  if (step === 50 || !sample) sample = { step, answer, next, previous, start, end, others };
}
const median = (values) => {
  const known = values.filter(Number.isFinite).sort((a, b) => a - b);
  return known[Math.floor(known.length / 2)] ?? Number.NaN;
};
const mean = (values) => {
  const known = values.filter(Number.isFinite);
  return known.reduce((a, b) => a + b, 0) / known.length;
};
console.log(`${rows.length} steady steps; medians (means) in ms, shares and means as said:`);
for (const key of Object.keys(rows[0] ?? {})) {
  const values = rows.map((row) => row[key]);
  const shown =
    key.includes('share') || key.includes('mean')
      ? (values.reduce((a, b) => a + b, 0) / values.length).toFixed(2)
      : `${median(values).toFixed(3)} (${mean(values).toFixed(3)})`;
  console.log(`  ${shown.padStart(16)}  ${key}`);
}
if (sample) {
  const { step, answer } = sample;
  const marks = [
    [requests.get(step), `model request ${step} arrived`],
    [sample.previous.sent, `previous step end sent`],
    [sample.previous.answered, `previous step end answered`],
    [answer, `model answer ${step} ended`],
    ...(Number.isNaN(sample.start.sent)
      ? []
      : [
          [sample.start.sent, `start statement sent`],
          [sample.start.answered, `start statement answered`],
        ]),
    [sample.end.sent, `step end sent`],
    [sample.next, `model request ${step + 1} arrived`],
    [sample.end.answered, `step end answered`],
    ...sample.others.flatMap((s) => [
      [s.sent, `other sent: ${s.text}`],
      [s.answered, `other answered: ${s.text}`],
    ]),
  ].sort((a, b) => a[0] - b[0]);
  console.log(`step ${step}'s timeline (ms from the model's answer):`);
  for (const [at, what] of marks) console.log(`  ${(at - answer).toFixed(3).padStart(8)}  ${what}`);
}
process.exit(0);
