// Two heap snapshots of one process compared by constructor: objects (count and self size) of each
// `type:name` in both, the largest rises first. A constructor whose count rises by about the
// requests served between the snapshots is kept per request (a leak); code, strings and arrays
// that rise once and stop are the JIT and caches settling.
// `node bench/profile/heap-diff.mjs <earlier.heapsnapshot> <later.heapsnapshot> [top] [requests]`
import { readFileSync } from 'node:fs';

const [earlierFile, laterFile, topArg, requestsArg] = process.argv.slice(2);
const top = Number(topArg ?? 25);
const requests = Number(requestsArg ?? 0);

/** Map of `type:name` → { count, size } over the snapshot's nodes. */
export function byConstructor(file) {
  const snapshot = JSON.parse(readFileSync(file, 'utf8'));
  const { node_fields: fields, node_types: types } = snapshot.snapshot.meta;
  const typeNames = types[0];
  const at = {
    type: fields.indexOf('type'),
    name: fields.indexOf('name'),
    size: fields.indexOf('self_size'),
  };
  const { nodes, strings } = snapshot;
  const out = new Map();
  let total = 0;
  for (let i = 0; i < nodes.length; i += fields.length) {
    const type = typeNames[nodes[i + at.type]];
    // Strings and code are keyed by their type alone: their names are their contents.
    const name = ['string', 'concatenated string', 'sliced string', 'code', 'number'].includes(type)
      ? ''
      : strings[nodes[i + at.name]].slice(0, 60);
    const key = `${type}:${name}`;
    const entry = out.get(key) ?? { count: 0, size: 0 };
    entry.count++;
    entry.size += nodes[i + at.size];
    total += nodes[i + at.size];
    out.set(key, entry);
  }
  return { groups: out, total };
}

if (earlierFile && laterFile) {
  const earlier = byConstructor(earlierFile);
  const later = byConstructor(laterFile);
  const keys = new Set([...earlier.groups.keys(), ...later.groups.keys()]);
  const rows = [...keys].map((key) => {
    const a = earlier.groups.get(key) ?? { count: 0, size: 0 };
    const b = later.groups.get(key) ?? { count: 0, size: 0 };
    return { key, count: b.count - a.count, size: b.size - a.size, countAfter: b.count };
  });
  const mb = (n) => (n / 1024 / 1024).toFixed(2);
  console.log(`heap ${mb(earlier.total)} → ${mb(later.total)} MB (${mb(later.total - earlier.total)} MB)`);
  const perRequest = requests ? ' per request' : '';
  console.log(`by self size, largest rises (count, KB${perRequest ? ', count per request' : ''}):`);
  for (const row of rows.sort((x, y) => y.size - x.size).slice(0, top)) {
    const each = requests ? ` ${(row.count / requests).toFixed(3).padStart(8)}` : '';
    console.log(
      `${String(row.count).padStart(8)} ${(row.size / 1024).toFixed(1).padStart(9)}${each}  ${row.key} (${row.countAfter})`,
    );
  }
  console.log('by count, largest rises:');
  for (const row of rows.sort((x, y) => y.count - x.count).slice(0, top)) {
    const each = requests ? ` ${(row.count / requests).toFixed(3).padStart(8)}` : '';
    console.log(
      `${String(row.count).padStart(8)} ${(row.size / 1024).toFixed(1).padStart(9)}${each}  ${row.key} (${row.countAfter})`,
    );
  }
}
