// What each in-flight compat request holds, by where it comes from (issue 17 item 4, p-inflight):
// the objects of a heap snapshot that a later one of the same process adds (V8's ids are stable
// within a process), grouped by the function that made them: closures by function and bundle
// line, contexts by the closures (or generators) over them, generators by their function,
// promises and their reactions by their first retainer, maps of their own and property arrays by
// the objects using them (constructor and first keys). Counts per request of the round.
// `node bench/profile/inflight-retainers.mjs <idle.heapsnapshot> <inflight.heapsnapshot> [requests|0] [top]`
// (the two snapshots `inflight-heap.mjs` leaves with BENCH_SNAPSHOT_DIR). Then every new object by
// type and constructor, bytes a request. Ids of a snapshot are V8's own: an object moved by a GC
// between the snapshots can read as new, so the counts by constructor of ./heap-diff.mjs are the
// ones to compare builds with.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const [idleFile, busyFile, requestsArg, topArg] = process.argv.slice(2);
let requests = Number(requestsArg ?? 0);
const top = Number(topArg ?? 15);

function load(file) {
  const s = JSON.parse(readFileSync(file, 'utf8'));
  const m = s.snapshot.meta;
  const NF = m.node_fields.length;
  const EF = m.edge_fields.length;
  const count = s.nodes.length / NF;
  const first = new Uint32Array(count + 1);
  for (let i = 0, e = 0; i < count; i++) {
    first[i] = e;
    e += s.nodes[i * NF + 4] * EF;
  }
  first[count] = s.edges.length;
  const loc = new Map();
  for (let i = 0; i < s.locations.length; i += 4) loc.set(s.locations[i] / NF, s.locations[i + 2] + 1);
  return { ...s, NF, EF, count, first, loc, nodeTypes: m.node_types[0], edgeTypes: m.edge_types[0] };
}

const idle = load(idleFile);
const idleIds = new Set();
for (let i = 0; i < idle.count; i++) idleIds.add(idle.nodes[i * idle.NF + 2]);
const s = load(busyFile);
const { nodes, edges, strings, NF, EF, first, nodeTypes, edgeTypes } = s;
const type = (n) => nodeTypes[nodes[n * NF]];
const name = (n) => strings[nodes[n * NF + 1]];
const size = (n) => nodes[n * NF + 3];
const fresh = (n) => !idleIds.has(nodes[n * NF + 2]);
function* out(n) {
  for (let e = first[n]; e < first[n + 1]; e += EF) {
    const t = edgeTypes[edges[e]];
    const label = t === 'element' || t === 'hidden' ? edges[e + 1] : strings[edges[e + 1]];
    yield { t, label, to: edges[e + 2] / NF };
  }
}
const edge = (n, label) => {
  for (const e of out(n)) if (e.label === label) return e.to;
  return -1;
};
// Retainers, of new nodes only.
const retainers = new Map();
for (let n = 0; n < s.count; n++) {
  for (const e of out(n)) {
    if (e.t === 'weak' || !fresh(e.to)) continue;
    const list = retainers.get(e.to) ?? [];
    list.push({ from: n, t: e.t, label: e.label });
    retainers.set(e.to, list);
  }
}
const fileOf = (fn) => {
  const shared = edge(fn, 'shared');
  const script = shared < 0 ? -1 : edge(shared, 'script_or_debug_info');
  return script < 0 ? '?' : basename(name(script)).replace(/-[\w-]{8}\.js$/, '');
};
const fnLabel = (fn) => `${name(fn) || '(anon)'} ${fileOf(fn)}:${s.loc.get(fn) ?? '?'}`;
const keysOf = (n) =>
  [...out(n)]
    .filter((e) => e.t === 'property' && e.label !== '__proto__')
    .map((e) => e.label)
    .slice(0, 6)
    .join(',');

// Requests: as given, else the new `IncomingMessage`s (the requests svc has begun to read).
if (!requests) {
  for (let n = 0; n < s.count; n++)
    if (fresh(n) && type(n) === 'object' && name(n) === 'IncomingMessage') requests++;
  console.log(`requests (new IncomingMessages): ${requests}`);
}
const groups = new Map();
const add = (kind, label, n) => {
  const key = `${kind}\t${label}`;
  const g = groups.get(key) ?? { kind, label, count: 0, size: 0 };
  g.count++;
  g.size += size(n);
  groups.set(key, g);
};
for (let n = 0; n < s.count; n++) {
  if (!fresh(n)) continue;
  const t = type(n);
  const nm = name(n);
  const rs = retainers.get(n) ?? [];
  if (t === 'closure') add('closure', fnLabel(n), n);
  else if (nm === 'system / Context') {
    const owner = rs.find((r) => r.label === 'context' && type(r.from) === 'closure');
    const gen = rs.find((r) => r.label === 'context' && name(r.from) === 'Generator');
    const prev = rs.find((r) => r.label === 'previous');
    add(
      'context',
      owner
        ? fnLabel(owner.from)
        : gen
          ? `generator ${fnLabel(edge(gen.from, 'function'))}`
          : prev
            ? 'outer of another context'
            : `? ${rs.map((r) => `${name(r.from)}.${r.label}`).slice(0, 2)}`,
      n,
    );
  } else if (t === 'object' && nm === 'Generator') add('generator', fnLabel(edge(n, 'function')), n);
  else if (t === 'object' && nm === 'Promise') {
    const r = rs.find((x) => x.t !== 'weak');
    add('promise', r ? `${type(r.from)}:${name(r.from) || fnLabelMaybe(r.from)}.${r.label}` : '(none)', n);
  } else if (nm === 'system / PromiseReaction') {
    const handler = edge(n, 'fulfill_handler');
    add('reaction', handler >= 0 && type(handler) === 'closure' ? fnLabel(handler) : name(handler), n);
  } else if (t === 'object shape' && nm === 'system / Map') {
    const user = rs.find((r) => r.label === 'map');
    add(
      'own map',
      user ? `${name(user.from)} {${keysOf(user.from)}}` : `(${rs[0] ? name(rs[0].from) : 'none'})`,
      n,
    );
  } else if (t === 'array' || nm === 'Object' || nm === 'Array') {
    const r = rs.find((x) => x.t !== 'weak');
    const from = r ? r.from : -1;
    const owner = from < 0 ? '' : name(from) === 'Generator' ? ` ${fnLabel(edge(from, 'function'))}` : '';
    const what = nm === 'Object' ? `Object {${keysOf(n)}}` : `${t}:${nm}`;
    add('array/object', r ? `${what} in ${name(from)}.${r.label}${owner}` : `${what} (none)`, n);
  } else if (nm === 'system / PropertyArray') {
    const user = rs.find((r) => r.label === 'properties');
    add('property array', user ? `${name(user.from)} {${keysOf(user.from)}}` : '?', n);
  }
}
function fnLabelMaybe(n) {
  return type(n) === 'closure' ? fnLabel(n) : '';
}

const kinds = [
  'closure',
  'context',
  'generator',
  'promise',
  'reaction',
  'own map',
  'property array',
  'array/object',
];
for (const kind of kinds) {
  const rows = [...groups.values()].filter((g) => g.kind === kind).sort((a, b) => b.count - a.count);
  const total = rows.reduce((a, g) => a + g.count, 0);
  const bytes = rows.reduce((a, g) => a + g.size, 0);
  console.log(
    `\n${kind}: ${(total / requests).toFixed(2)} a request, ${(bytes / requests).toFixed(0)} B a request`,
  );
  for (const g of rows.slice(0, top)) {
    console.log(`${(g.count / requests).toFixed(2).padStart(7)} ${String(g.size).padStart(8)}  ${g.label}`);
  }
}
let all = 0;
for (let n = 0; n < s.count; n++) if (fresh(n)) all += size(n);
console.log(`\nall new objects: ${(all / requests).toFixed(0)} B a request`);
const byName = new Map();
for (let n = 0; n < s.count; n++) {
  if (!fresh(n)) continue;
  const t = type(n);
  const key = `${t}:${['string', 'concatenated string', 'sliced string', 'code', 'number'].includes(t) ? '' : name(n).slice(0, 50)}`;
  const g = byName.get(key) ?? { count: 0, size: 0 };
  g.count++;
  g.size += size(n);
  byName.set(key, g);
}
for (const [key, g] of [...byName].sort((a, b) => b[1].size - a[1].size).slice(0, top)) {
  console.log(
    `${(g.count / requests).toFixed(2).padStart(7)} ${(g.size / requests).toFixed(0).padStart(6)} B  ${key}`,
  );
}
