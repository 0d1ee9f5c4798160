// A compat request's model resolution alone (issue 17 item 3, p-modelkeep): `app.models.resolve`
// for `fake/m1` (an OpenAI-compatible loopback provider as compat.bench configures it, its
// context window learned from a loopback `/api/show` and cached), warmed up, then timed. Prints,
// per resolution: node:fs calls (statSync, existsSync, readFileSync: counted with a patched
// `node:fs` and `syncBuiltinESMExports`), credential store reads, and CPU µs (this process's
// user+system over BENCH_RESOLVES resolutions: load-dependent, say the load). The app is bundled
// from BENCH_ROOT's src (default: this checkout) into BENCH_ROOT/.bench-cache/model-resolve.
//   node bench/model-resolve.mjs            BENCH_ROOT=/work/base-mk node bench/model-resolve.mjs
import fs, { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const HERE = import.meta.dirname ?? new URL('.', import.meta.url).pathname;
const ROOT = resolve(process.env.BENCH_ROOT ?? join(HERE, '..'));
const RESOLVES = Number(process.env.BENCH_RESOLVES ?? 20000);

async function loadApp() {
  const outDir = join(ROOT, '.bench-cache', 'model-resolve');
  const { build } = await import('tsdown');
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  await build({
    cwd: ROOT,
    config: false,
    entry: { app: join(ROOT, 'src/app.ts') },
    outDir,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    dts: false,
    clean: true,
    logLevel: 'silent',
    fixedExtension: false,
    define: { __SVC_VERSION__: JSON.stringify(version) },
  });
  return (await import(pathToFileURL(join(outDir, 'app.js')).href)).createApp;
}

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(req.url === '/api/show' ? 200 : 404, { 'content-type': 'application/json' });
    res.end(req.url === '/api/show' ? '{"parameters":"num_ctx 32768"}' : '{}');
  });
});
await new Promise((done) => server.listen(0, '127.0.0.1', done));
const url = `http://127.0.0.1:${server.address().port}/v1`;

const createApp = await loadApp();
const base = mkdtempSync(join(tmpdir(), 'svc-bench-resolve-'));
const ws = join(base, 'ws');
mkdirSync(ws);
writeFileSync(
  join(ws, 'svc.toml'),
  `[providers.fake]\ntype = "openai-compat"\nbase_url = "${url}"\n[models]\nlarge = "fake/m1"\n`,
);
const home = join(base, 'home');
const app = await createApp({
  workspace: ws,
  dataDir: join(base, 'data'),
  env: {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
  },
});

const counts = { statSync: 0, existsSync: 0, readFileSync: 0, store: 0 };
for (const name of ['statSync', 'existsSync', 'readFileSync']) {
  const real = fs[name];
  fs[name] = function counted(...args) {
    counts[name]++;
    return real.apply(this, args);
  };
}
syncBuiltinESMExports();
const store = app.providers.store;
const get = store.get.bind(store);
store.get = (id) => {
  counts.store++;
  return get(id);
};

const once = () => app.models.resolve({ selector: 'fake/m1' });
for (let i = 0; i < 2000; i++) await once();
const first = await once();
const before = { ...counts };
const cpu = process.cpuUsage();
for (let i = 0; i < RESOLVES; i++) await once();
const used = process.cpuUsage(cpu);
const per = (name) => ((counts[name] - before[name]) / RESOLVES).toFixed(2);
console.log(
  JSON.stringify({
    root: ROOT,
    resolves: RESOLVES,
    window: first.info.context_window,
    window_source: first.window_source,
    per_resolution: {
      statSync: per('statSync'),
      existsSync: per('existsSync'),
      readFileSync: per('readFileSync'),
      store_reads: per('store'),
      cpu_us: ((used.user + used.system) / RESOLVES).toFixed(2),
    },
  }),
);
await app.close?.();
server.close();
