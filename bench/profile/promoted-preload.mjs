// What a scavenge promotes, by where it was allocated (issue 17 item 4, p-promote): a preload
// (`--import`) that runs V8's sampling heap profiler keeping the samples of objects a full GC
// collected and dropping those a scavenge collected, so a sample still in the profile at the end
// is an object no scavenge found dead. Reading a profile forces a full GC ("sampling profiler"), so
// it is read once, at the end; the GCs in between are marked in allocation order instead: after
// each GC (its `gc` performance entry) the preload allocates a 16 KB array from `markGc`, which the
// profiler samples (p ≈ 1 - e^-8) and which is kept alive, so its sample's ordinal marks the GC.
// An object allocated between two GCs whose second was scavenge k and whose next GC is scavenge
// k+1: present at the end means it survived k (else k dropped it) and was not collected by k+1,
// i.e. k+1 promoted it (V8 promotes what survives a second scavenge). Intervals next to a full GC
// are left out (a full GC keeps the samples of what it collects). The entry arrives a little after
// its GC, so a few objects count in the interval before. Counting runs between two SIGUSR2
// (./promoted.mjs sends them around its rounds); the second writes `<out>` (JSON: the scavenges
// counted, sampled bytes promoted by allocating frame, by first svc frame, by stack). Options on
// the module's URL: `out` (required), `bytes` (sampling interval, default 2048), `major=0` (drop
// what full GCs collect too: what is counted is then what was promoted and is still alive at the
// end, i.e. kept past the rounds).
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { constants, PerformanceObserver } from 'node:perf_hooks';

const options = new URL(import.meta.url).searchParams;
const out = options.get('out');
const interval = Number(options.get('bytes') ?? 2048);
const session = new Session();
session.connect();
session.post('HeapProfiler.startSampling', {
  samplingInterval: interval,
  includeObjectsCollectedByMajorGC: options.get('major') !== '0',
  includeObjectsCollectedByMinorGC: false,
});

let counting = false;
const markers = []; // kept alive: their samples mark the GCs
const kinds = []; // 'minor' | 'major', one per marker
function markGc(kind) {
  markers.push(new Array(2048).fill(0));
  kinds.push(kind);
}

new PerformanceObserver((list) => {
  if (!counting) return;
  for (const entry of list.getEntries()) {
    markGc(entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR ? 'minor' : 'major');
  }
}).observe({ entryTypes: ['gc'] });

const frameName = (f) => `${f.functionName || '(anon)'} ${f.url.replace(/^.*\//, '')}:${f.lineNumber + 1}`;

function report() {
  let profile;
  session.post('HeapProfiler.getSamplingProfile', (error, result) => {
    if (!error) profile = result.profile;
  });
  const parents = new Map();
  const nodes = new Map();
  const walk = (node, parent) => {
    nodes.set(node.id, node);
    parents.set(node.id, parent);
    for (const child of node.children) walk(child, node);
  };
  walk(profile.head, undefined);
  const stackOf = (s) => {
    const frames = [];
    for (
      let node = nodes.get(s.nodeId);
      node && node.callFrame.functionName !== '(root)';
      node = parents.get(node.id)
    ) {
      frames.push(node.callFrame);
    }
    return frames;
  };
  const samples = profile.samples.sort((a, b) => a.ordinal - b.ordinal);
  const marks = samples.filter((s) => stackOf(s)[0]?.functionName === 'markGc').map((s) => s.ordinal);
  const byLeaf = new Map();
  const bySvc = new Map();
  const byStack = new Map();
  const add = (map, key, size) => {
    const entry = map.get(key) ?? { samples: 0, bytes: 0 };
    entry.samples++;
    entry.bytes += size;
    map.set(key, entry);
  };
  let promotedSamples = 0;
  let promotedBytes = 0;
  let scavenges = 0;
  // Interval i: (marks[i-1], marks[i]], ended by GC i; counted when GC i and GC i+1 are scavenges.
  const counted = new Set();
  for (let i = 1; i + 1 < marks.length && i + 1 < kinds.length; i++) {
    if (kinds[i] === 'minor' && kinds[i + 1] === 'minor') counted.add(i);
  }
  scavenges = counted.size;
  let m = 0;
  for (const s of samples) {
    while (m < marks.length && s.ordinal > marks[m]) m++;
    if (!counted.has(m) || s.ordinal === marks[m]) continue;
    const frames = stackOf(s);
    if (frames[0]?.functionName === 'markGc') continue;
    promotedSamples++;
    // A sample stands for about `interval` bytes (an object larger than it, for itself).
    const size = Math.max(s.size, interval);
    promotedBytes += size;
    add(byLeaf, frames.length ? frameName(frames[0]) : '?', size);
    const svc = frames.find((f) => f.url.includes('/dist/'));
    add(bySvc, svc ? frameName(svc) : '(no svc frame)', size);
    add(byStack, frames.slice(0, 8).map(frameName).join(' < '), size);
  }
  const table = (map) =>
    [...map]
      .sort((a, b) => b[1].bytes - a[1].bytes)
      .slice(0, 80)
      .map(([key, v]) => ({ key, ...v }));
  return {
    interval,
    gcs: kinds.length,
    marksFound: marks.length,
    fullGcs: kinds.filter((k) => k === 'major').length,
    scavenges,
    promotedSamples,
    promotedBytes,
    byLeaf: table(byLeaf),
    bySvc: table(bySvc),
    byStack: table(byStack),
  };
}

process.on('SIGUSR2', () => {
  if (!counting) {
    counting = true;
    markGc('start');
    return;
  }
  counting = false;
  writeFileSync(out, JSON.stringify(report(), null, 1));
});
