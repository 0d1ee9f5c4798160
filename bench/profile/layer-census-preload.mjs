// Preload (`--import`) for a svc process: every async resource counted by type, and for one promise
// in `every` (default 5; the URL's `?every=`) the svc source regions on its stack (innermost first,
// consecutive repeats folded), read from the bundle's `//#region` marks at exit. At exit writes
// `<dir>/svc-layer-census-<pid>.json`: { types, promises, every, chains: [[regions joined by ' < ',
// count], …] }. Two runs of a bench with different request counts, diffed by
// ./layer-table.mjs, give promises per request by layer (self: the innermost svc region; inclusive:
// any region of the layer on the stack). The hook slows svc several-fold: read counts, never times.
import { createHook } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleRegions } from './bundle-regions.mjs';

const options = new URL(import.meta.url).searchParams;
const every = Number(options.get('every') ?? 5);
// `?fn=1`: each svc region with its function's name (`src/agent/run-loop.ts#prepare`).
const withNames = options.get('fn') === '1';
const dir = options.get('dir') ?? tmpdir();
const types = Object.create(null);
const chains = new Map();
let promises = 0;
let inside = false;
const structured = (_error, sites) => sites;
createHook({
  init(_id, type) {
    types[type] = (types[type] ?? 0) + 1;
    if (type !== 'PROMISE' || inside || ++promises % every !== 0) return;
    inside = true;
    const limit = Error.stackTraceLimit;
    const prepare = Error.prepareStackTrace;
    Error.stackTraceLimit = 60;
    Error.prepareStackTrace = structured;
    const holder = {};
    Error.captureStackTrace(holder);
    const sites = holder.stack;
    Error.prepareStackTrace = prepare;
    Error.stackTraceLimit = limit;
    const frames = [];
    for (const site of sites) {
      const file = site.getFileName() ?? '';
      if (!file.includes('/dist/')) {
        if (file.includes('node_modules'))
          frames.push(`npm:${/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1]}`);
        else if (file.startsWith('node:') && !file.includes('async_hooks')) frames.push(file);
        continue;
      }
      frames.push(
        `${file}:${site.getLineNumber()}${withNames ? `#${site.getFunctionName() ?? '(anon)'}` : ''}`,
      );
    }
    const key = frames.join('\n');
    chains.set(key, (chains.get(key) ?? 0) + 1);
    inside = false;
  },
}).enable();
process.on('exit', () => {
  let regions;
  const named = new Map();
  for (const [key, count] of chains) {
    const out = [];
    for (const frame of key ? key.split('\n') : []) {
      let region = frame;
      const m = /^(.*\/dist\/([^/]+\.js)):(\d+)(#.*)?$/.exec(frame);
      if (m) {
        regions ??= bundleRegions(join(m[1].startsWith('file:') ? fileURLToPath(m[1]) : m[1], '..'));
        region = (regions.get(m[2])?.[Number(m[3]) - 1] ?? m[2]) + (m[4] ?? '');
      }
      if (out[out.length - 1] !== region) out.push(region);
    }
    const chain = out.join(' < ') || '(no frame)';
    named.set(chain, (named.get(chain) ?? 0) + count);
  }
  writeFileSync(
    join(dir, `svc-layer-census-${process.pid}.json`),
    JSON.stringify({ types, promises, every, chains: [...named] }),
  );
});
