// Which modules svc loads after it is ready: `node --import ./late-loads-preload.mjs dist/main.js
// service start http` with LATE_LOADS_OUT=<file>. Every module load (CommonJS through
// `Module._load`, including `createRequire`'s; ESM, the bundle's own chunks and `import()`s, through
// a `load` hook) is appended to that file as a JSON line with the time since the process began, the
// count of HTTP requests the server had received by then (an ESM load's: when its hook's message
// arrived), and whether svc had printed its `svc: listening on` line (printed once the App is
// ready) when the load began; a line `{"mark":"ready"}` at that print. `node
// bench/profile/late-loads.mjs <file>` sums it: the modules loaded after ready, and by which request.
import { appendFileSync } from 'node:fs';
import { Server } from 'node:http';
import Module, { register } from 'node:module';
import { performance } from 'node:perf_hooks';
import { MessageChannel } from 'node:worker_threads';

const out = process.env.LATE_LOADS_OUT;
if (out) {
  let requests = 0;
  let ready = false;
  /** When the listening line was printed, in ms since the epoch (the clock the hook thread sends). */
  let readyAt = Number.POSITIVE_INFINITY;
  const write = (entry, at = performance.timeOrigin + performance.now()) =>
    appendFileSync(
      out,
      `${JSON.stringify({ t: +(at - performance.timeOrigin).toFixed(1), requests, ready: at >= readyAt, ...entry })}\n`,
    );

  const emit = Server.prototype.emit;
  Server.prototype.emit = function (event, ...args) {
    if (event === 'request') requests++;
    return emit.call(this, event, ...args);
  };
  const stdoutWrite = process.stdout.write;
  process.stdout.write = function (chunk, ...rest) {
    if (!ready && String(chunk).includes('svc: listening on')) {
      ready = true;
      readyAt = performance.timeOrigin + performance.now();
      write({ mark: 'ready' });
    }
    return stdoutWrite.call(this, chunk, ...rest);
  };

  const load = Module._load;
  const seen = new Set();
  Module._load = function (request, parent, isMain, ...rest) {
    let id = request;
    try {
      id = Module._resolveFilename(request, parent, isMain);
    } catch {
      // a built-in or a failing request: its name
    }
    const first = !seen.has(id) && !(id in Module._cache);
    seen.add(id);
    const start = performance.now();
    const result = load.call(this, request, parent, isMain, ...rest);
    if (first && !request.startsWith('node:') && !Module.isBuiltin(request)) {
      write({ kind: 'cjs', id, ms: +(performance.now() - start).toFixed(2) });
    }
    return result;
  };

  const { port1, port2 } = new MessageChannel();
  // A hook's message arrives after the load it reports: the time it sends says before or after ready.
  port1.on('message', ({ url, at }) => write({ kind: 'esm', id: url }, at));
  port1.unref();
  register(
    `data:text/javascript,${encodeURIComponent(
      'let port; export function initialize(data) { port = data.port; }' +
        ' export async function load(url, context, next) {' +
        " if (!url.startsWith('node:')) port.postMessage({ url, at: performance.timeOrigin + performance.now() });" +
        ' return next(url, context); }',
    )}`,
    { data: { port: port2 }, transferList: [port2] },
  );
}
