// Preload (`node --import`) for bench/compat-timeline.mjs: marks, on CLOCK_MONOTONIC (the clock of
// the harness's own marks), the moments of one svc process that a request's wall time is made of:
// a request's arrival (diagnostics_channel `http.server.request.start`), every socket write (to a
// client: `out:cli`, to the provider: `out:prov`, labelled by what it carries: the head, the role
// chunk, answer text, `[DONE]`), every socket read of the provider's answer (`in:prov`), and each
// `setImmediate` callback run (`imm`: a check-phase hop), each GC pause (`gc`). `globalThis.__mark(name)` is there for a
// temporary mark in svc's own code. SIGUSR2 writes the marks so far to $TIMELINE_FILE and clears them.
import dc from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { promisify } from 'node:util';

const marks = [];
const now = () => process.hrtime.bigint();
globalThis.__mark = (name) => marks.push([now(), name]);
const kind = (socket) => (socket.server ? 'cli' : 'prov');
/** What a write or read carries, from its first and last bytes (cheap: no full decode). */
function label(data) {
  const text =
    typeof data === 'string'
      ? data.slice(0, 400) + data.slice(-40)
      : Buffer.isBuffer(data)
        ? data.toString('latin1', 0, Math.min(data.length, 400)) +
          data.toString('latin1', Math.max(0, data.length - 40))
        : '';
  const flags = [];
  if (text.startsWith('POST ')) flags.push('request');
  if (text.includes('"role":"assistant"')) flags.push('role');
  if (/"content":"[^"]/.test(text)) flags.push('text');
  if (text.includes('[DONE]')) flags.push('done');
  return flags.join('+');
}
const writeGeneric = net.Socket.prototype._writeGeneric;
net.Socket.prototype._writeGeneric = function (writev, data, encoding, callback) {
  const what = writev
    ? data
        .map((piece) => label(piece.chunk ?? piece))
        .filter(Boolean)
        .join('+')
    : label(data);
  marks.push([now(), `out:${kind(this)}:${what}`]);
  return writeGeneric.call(this, writev, data, encoding, callback);
};
// The HTTP server's sockets are read by its parser straight from the handle: only the client
// side (the provider's answer) passes here.
const push = net.Socket.prototype.push;
net.Socket.prototype.push = function (chunk, encoding) {
  if (chunk) marks.push([now(), `in:${kind(this)}:${label(chunk)}`]);
  return push.call(this, chunk, encoding);
};
dc.subscribe('http.server.request.start', () => marks.push([now(), 'req:start']));
const immediate = globalThis.setImmediate;
globalThis.setImmediate = Object.assign(
  function setImmediate(fn, ...args) {
    return immediate.call(
      this,
      function (...inner) {
        marks.push([now(), 'imm']);
        return fn.apply(this, inner);
      },
      ...args,
    );
  },
  { [promisify.custom]: immediate[promisify.custom] },
);
// Each GC pause of the main thread, at its start (`gc:<kind> <ms>`): performance.now() and hrtime are
// both monotonic, so one offset converts the entry's start.
const GC_KINDS = { 1: 'minor', 4: 'major', 8: 'incremental', 16: 'weakcb' };
const offset = process.hrtime.bigint() - BigInt(Math.round(performance.now() * 1e6));
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const at = offset + BigInt(Math.round(entry.startTime * 1e6));
    const kind = GC_KINDS[entry.detail?.kind ?? entry.kind] ?? 'other';
    marks.push([at, `gc:${kind} ${entry.duration.toFixed(2)}`]);
  }
}).observe({ entryTypes: ['gc'] });
process.on('SIGUSR2', () => {
  writeFileSync(process.env.TIMELINE_FILE, marks.map(([at, name]) => `${at} ${name}`).join('\n'));
  marks.length = 0;
});
