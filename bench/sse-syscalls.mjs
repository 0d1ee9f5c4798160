// The system calls of a compat request in the service (issue 17 item 3, branch p-sse): one
// `svc service start http` node (./statements-harness.mjs), 20 requests of warm-up, then strace
// attached to every thread of it (`strace -f -yy`) over BENCH_STATEMENTS_REQUESTS (default 50)
// requests, 10 at once. Prints calls per request by system call and by what they act on: the
// client's socket (the SSE answer; local port = the port svc listens on, the most common local
// port), the model's socket (the request svc sends to the fake provider), or anything else
// (files, pipes, eventfds: `other`), and the buffers of the writev calls. Counts, not times: they do not depend on the box's load.
// Needs strace (and ptrace allowed). BENCH_SVC_BIN runs another build.
// `node bench/sse-syscalls.mjs`; not part of `npm run bench`.
import { compatStatements, REQUESTS } from './statements-harness.mjs';
import { straced } from './strace-service.mjs';

const traced = straced('sse-syscalls', ['-f', '-yy']);
const { errors, result } = await compatStatements({
  warmedUp: traced.warmedUp,
  finished: async () => summarize(await traced.finished()),
});

/** Calls by `<syscall> <target>`, target: client | model | other. */
function summarize(text) {
  const calls = [];
  const localPorts = new Map();
  for (const line of text.split('\n')) {
    const m = /^(?:\d+\s+)?(?:<\.\.\. (\w+) resumed>|(\w+)\()(.*)$/.exec(line);
    if (!m || m[1]) continue; // a resumed call was counted where it started
    const name = m[2];
    const socket = /^(\d+)<TCP:\[[^\]:]+:(\d+)->[^\]:]+:(\d+)\]>/.exec(m[3]);
    if (socket) localPorts.set(socket[2], (localPorts.get(socket[2]) ?? 0) + 1);
    calls.push({ name, local: socket?.[2] });
    // A writev's buffers (`…], N) = bytes`): fewer per write is less work on both sides.
    const iov = name === 'writev' ? /\], (\d+)\) += \d+$/.exec(m[3]) : null;
    if (iov)
      for (let i = 0; i < Number(iov[1]); i++) calls.push({ name: '(writev buffers)', local: socket?.[2] });
  }
  const listening = [...localPorts].sort((a, b) => b[1] - a[1])[0]?.[0];
  const counts = new Map();
  for (const { name, local } of calls) {
    const target = local === undefined ? 'other' : local === listening ? 'client' : 'model';
    const key = `${name} ${target}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

const per = REQUESTS;
let total = 0;
const byTarget = { client: 0, model: 0, other: 0 };
for (const [key, n] of result) {
  if (key.startsWith('(')) continue;
  total += n;
  byTarget[key.split(' ')[1]] += n;
}
console.log(
  `${(total / per).toFixed(1)} system calls per request (client socket ${(byTarget.client / per).toFixed(1)}, model socket ${(byTarget.model / per).toFixed(1)}, other ${(byTarget.other / per).toFixed(1)}); errors ${errors}`,
);
for (const [key, n] of [...result].sort((a, b) => b[1] - a[1])) {
  if (n / per < 0.05) continue;
  console.log(`${(n / per).toFixed(2).padStart(7)}  ${key}`);
}
