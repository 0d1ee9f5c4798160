// Session search (issue 22 item 3): `sessions.search` over the FTS5 index with 100,000 messages
// (1,000 sessions × 100: user prompts, assistant answers, tool calls and tool outputs drawn from a
// Zipf-distributed vocabulary), written through the session store (so the triggers index them).
// Reported: the write rate with the index, the database size, the median time of each query
// shape (common and rare words, several words, a prefix, the role/tool/session/date filters, a
// hostile query) over N warm runs, and the median over all of them.
// Target (issue 22): the median query under 50 ms.
// The store is bundled from src/ with tsdown's API into node_modules/.cache (dist/ holds only the CLI).
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..');
const RUNS = Number(process.env.BENCH_RUNS ?? 21);
const SESSIONS = Number(process.env.BENCH_SEARCH_SESSIONS ?? 1000);
const PER_SESSION = Number(process.env.BENCH_SEARCH_MESSAGES ?? 100);

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function loadStore(outDir) {
  const { build } = await import('tsdown');
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  await build({
    cwd: ROOT,
    config: false,
    entry: {
      db: join(ROOT, 'src/store/db.ts'),
      sessions: join(ROOT, 'src/sessions/session-store.ts'),
      ids: join(ROOT, 'src/util/ids.ts'),
    },
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
  const load = (name) => import(pathToFileURL(join(outDir, `${name}.js`)).href);
  return { ...(await load('db')), ...(await load('sessions')), ...(await load('ids')) };
}

/** A deterministic pseudo-random source (mulberry32). */
function random(seed) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ren',
  'to',
  'sa',
  'vu',
  'el',
  'dor',
  'pi',
  'qua',
  'zen',
  'bri',
  'ost',
  'ni',
  'che',
];

/** 5,000 words; word i is drawn with weight 1/(i+1) (Zipf). */
function vocabulary(rand) {
  const words = new Set(['test', 'error', 'function', 'config', 'session', 'kraken']);
  while (words.size < 5000) {
    let w = '';
    const n = 2 + Math.floor(rand() * 3);
    for (let i = 0; i < n; i++) w += SYLLABLES[Math.floor(rand() * SYLLABLES.length)];
    words.add(w);
  }
  const list = [...words].filter((w) => w !== 'kraken');
  const cumulative = [];
  let total = 0;
  for (let i = 0; i < list.length; i++) {
    total += 1 / (i + 1);
    cumulative.push(total);
  }
  return (count) => {
    const out = [];
    for (let i = 0; i < count; i++) {
      const x = rand() * total;
      let lo = 0;
      let hi = cumulative.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (cumulative[mid] < x) lo = mid + 1;
        else hi = mid;
      }
      out.push(list[lo]);
    }
    return out.join(' ');
  };
}

export function seed(store, db) {
  const rand = random(22);
  const words = vocabulary(rand);
  const tools = ['bash', 'read', 'grep', 'edit', 'write'];
  const ids = [];
  const start = process.hrtime.bigint();
  db.transaction(() => {
    for (let s = 0; s < SESSIONS; s++) {
      const session = store.create({ title: `session ${s} ${words(3)}` });
      ids.push(session.id);
      for (let m = 0; m < PER_SESSION; m++) {
        const kind = m % 4;
        // One message in 10,000 mentions the rare word.
        const rare = (s * PER_SESSION + m) % 10_000 === 7 ? ' kraken' : '';
        const tool = tools[Math.floor(rand() * tools.length)];
        const parts =
          kind === 0
            ? [{ type: 'text', text: `${words(20 + Math.floor(rand() * 30))}${rare}` }]
            : kind === 1
              ? [
                  { type: 'text', text: `${words(30 + Math.floor(rand() * 60))}${rare}` },
                  { type: 'tool-call', tool_call_id: `c${m}`, tool, input: { arg: words(4) } },
                ]
              : kind === 2
                ? [
                    {
                      type: 'tool-result',
                      tool_call_id: `c${m - 1}`,
                      tool,
                      output: `${words(60 + Math.floor(rand() * 200))}${rare}`,
                    },
                  ]
                : [{ type: 'text', text: `${words(40 + Math.floor(rand() * 80))}${rare}` }];
        store.appendMessage({
          session_id: session.id,
          role: kind === 0 ? 'user' : kind === 2 ? 'tool' : 'assistant',
          parts,
        });
      }
    }
  })();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { ids, seconds };
}

export async function run() {
  const base = mkdtempSync(join(tmpdir(), 'svc-bench-search-'));
  const bundle = join(ROOT, 'node_modules', '.cache', 'svc-bench-session-search');
  const { openDb, createSessionStore, createIds, systemClock } = await loadStore(bundle);
  const db = openDb({ dataDir: join(base, 'data') });
  try {
    const store = createSessionStore({ db: () => db, clock: systemClock, ids: createIds(), workspace: base });
    const { ids, seconds } = seed(store, db);
    const messages = db.prepare('SELECT count(*) AS n FROM messages').get().n;
    const indexed = db.prepare('SELECT count(*) AS n FROM message_search_docs').get().n;
    if (indexed !== messages) throw new Error(`indexed ${indexed} of ${messages} messages`);
    db.pragma('wal_checkpoint(TRUNCATE)');
    const sizeMb = statSync(join(base, 'data', 'svc.db')).size / 1024 / 1024;
    const middle = db
      .prepare('SELECT created_at FROM messages ORDER BY created_at LIMIT 1 OFFSET ?')
      .get(Math.floor(messages / 2)).created_at;
    const queries = [
      { name: 'common word ("test")', query: 'test' },
      { name: 'rare word ("kraken")', query: 'kraken' },
      { name: 'two words', query: 'error config' },
      { name: 'prefix ("ses")', query: 'ses' },
      { name: 'role filter (tool)', query: 'function', options: { role: 'tool' } },
      { name: 'tool filter (bash)', query: 'function', options: { tool: 'bash' } },
      { name: 'session filter', query: 'test', options: { session_id: ids[ids.length >> 1] } },
      { name: 'date filter (newer half)', query: 'config', options: { since: middle } },
      { name: 'hostile ("NEAR(" -x *)', query: '"NEAR( -error * config' },
    ];
    const rows = [
      { name: 'messages (sessions × per session)', value: `${messages} (${SESSIONS} × ${PER_SESSION})` },
      { name: 'writes with the index (messages/s)', value: Math.round(messages / seconds).toString() },
      { name: 'database size (MB)', value: sizeMb.toFixed(1) },
      {
        name: 'machine',
        value: `${process.platform} ${process.arch}, ${cpus().length} × ${cpus()[0]?.model.trim()}, node ${process.version}, load ${loadavg()[0].toFixed(1)}`,
      },
    ];
    const medians = [];
    for (const q of queries) {
      const samples = [];
      let found = 0;
      for (let i = 0; i < RUNS + 2; i++) {
        const start = process.hrtime.bigint();
        found = store.search(q.query, { limit: 20, ...q.options }).length;
        if (i >= 2) samples.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
      const ms = median(samples);
      medians.push(ms);
      rows.push({ name: `${q.name}: sessions / median ms`, value: `${found} / ${ms.toFixed(2)}` });
    }
    const overall = median(medians);
    rows.push({
      name: 'median query (ms)',
      value: overall.toFixed(2),
      target: '< 50',
      pass: overall < 50,
    });
    rows.push({ name: 'slowest query shape (ms)', value: Math.max(...medians).toFixed(2) });
    return rows;
  } finally {
    db.close();
    rmSync(base, { recursive: true, force: true });
  }
}
