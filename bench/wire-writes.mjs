// The socket writes of a compat request (issue 17 item 3, branch p-leanio): one `service start http`
// node (./statements-harness.mjs: svc, or BENCH_SVC_BIN=bench/compat-floor.mjs for the floor), 20
// requests of warm-up, then strace on every thread (`strace -f -yy -e trace=%network,write,writev`)
// over BENCH_STATEMENTS_REQUESTS (default 50) requests, 10 at once. Prints per request, for the
// client's socket (the SSE answer) and the model's socket (svc's request to the fake provider): the
// write calls, their buffers and their bytes, each write's size in order of the first request seen.
// Counts, not times. Needs strace. `node bench/wire-writes.mjs`; not part of `npm run bench`.
import { compatStatements, REQUESTS } from './statements-harness.mjs';
import { straced } from './strace-service.mjs';

const { errors, result } = await compatStatements(
  straced('wire-writes', ['-f', '-yy', '-s', '0', '-e', 'trace=writev,write,sendto,sendmsg,read,recvfrom']),
);

const calls = [];
const ports = new Map();
for (const line of result.split('\n')) {
  const m = /^(?:\d+\s+)?(\w+)\((\d+)<TCP:\[[^\]:]+:(\d+)->[^\]:]+:(\d+)\]>(.*)= (-?\d+)/.exec(line);
  if (!m) continue;
  const [, name, , local, , rest, ret] = m;
  ports.set(local, (ports.get(local) ?? 0) + 1);
  const iov = name === 'writev' ? Number(/\], (\d+)\) +$/.exec(rest)?.[1] ?? 1) : 1;
  calls.push({ name, local, iov, bytes: Number(ret) });
}
const listening = [...ports].sort((a, b) => b[1] - a[1])[0]?.[0];
const per = REQUESTS;
const sum = new Map();
for (const c of calls) {
  const key = `${c.name} ${c.local === listening ? 'client' : 'model'}`;
  const s = sum.get(key) ?? { calls: 0, iov: 0, bytes: 0 };
  s.calls++;
  s.iov += c.iov;
  s.bytes += Math.max(0, c.bytes);
  sum.set(key, s);
}
console.log(`errors ${errors}; per request:`);
for (const [key, s] of [...sum].sort()) {
  console.log(
    `${key.padEnd(16)} ${(s.calls / per).toFixed(2).padStart(6)} calls ${(s.iov / per).toFixed(2).padStart(6)} buffers ${(s.bytes / per).toFixed(0).padStart(7)} bytes`,
  );
}
