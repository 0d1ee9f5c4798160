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
// TIMELINE_PG_PORT names the PostgreSQL server's port: that client socket is `pg` (its writes and
// reads labelled by the protocol messages they carry), any other client socket the provider's.
const parsed = new Set();
const parses = []; // written at every SIGUSR2, never cleared: a statement is parsed once per connection
const PG_PORT = Number(process.env.TIMELINE_PG_PORT ?? 0);
const kind = (socket) => (socket.server ? 'cli' : PG_PORT && socket.remotePort === PG_PORT ? 'pg' : 'prov');
/**
 * The protocol messages of a PostgreSQL buffer, by their type bytes (`P`arse, `B`ind, `E`xecute,
 * `S`ync, `Q`uery; `1`, `2`, `D`ata, `C`omplete, `Z` ready, `A` notification), run-length
 * counted, with each Bind's statement name (`B<name>`): which statement a write sends.
 */
function pgLabel(data, fromServer) {
  if (!Buffer.isBuffer(data)) return typeof data === 'string' ? 'str' : '?';
  const parts = [];
  let at = 0;
  while (at + 5 <= data.length) {
    const type = String.fromCharCode(data[at]);
    const length = data.readUInt32BE(at + 1);
    let name = type;
    if (!fromServer && type === 'B') {
      const portalEnd = data.indexOf(0, at + 5);
      const nameEnd = data.indexOf(0, portalEnd + 1);
      name = `B<${data.toString('latin1', portalEnd + 1, Math.min(nameEnd, portalEnd + 41))}>`;
    }
    if (!fromServer && type === 'P') {
      // A Parse names its statement: kept once per name, printed with the marks (`parse:<name> <sql>`).
      const nameEnd = data.indexOf(0, at + 5);
      const statement = data.toString('latin1', at + 5, nameEnd);
      const sql = data.toString(
        'latin1',
        nameEnd + 1,
        Math.min(data.indexOf(0, nameEnd + 1), nameEnd + 1200),
      );
      if (!parsed.has(`${statement} ${sql}`)) {
        parsed.add(`${statement} ${sql}`);
        parses.push([now(), `parse:${statement} ${sql.replace(/\s+/g, ' ')}`]);
      }
    }
    if (!fromServer && type === 'Q')
      name = `Q<${data.toString('latin1', at + 5, Math.min(at + 45, at + 1 + length))}>`;
    const last = parts.at(-1);
    if (last && last[0] === name) last[1]++;
    else parts.push([name, 1]);
    at += 1 + length;
  }
  if (at < data.length) parts.push([`…${data.length - at}b`, 1]);
  return parts.map(([name, n]) => (n > 1 ? `${name}x${n}` : name)).join(',');
}
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
  if (kind(this) === 'pg') {
    const pieces = writev ? data.map((piece) => piece.chunk ?? piece) : [data];
    marks.push([now(), `out:pg:${this.localPort}:${pieces.map((piece) => pgLabel(piece, false)).join('|')}`]);
    return writeGeneric.call(this, writev, data, encoding, callback);
  }
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
  if (chunk) {
    const from = kind(this);
    marks.push([
      now(),
      from === 'pg' ? `in:pg:${this.localPort}:${pgLabel(chunk, true)}` : `in:${from}:${label(chunk)}`,
    ]);
  }
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
  writeFileSync(
    process.env.TIMELINE_FILE,
    [...parses, ...marks].map(([at, name]) => `${at} ${name}`).join('\n'),
  );
  marks.length = 0;
});
