// Preload (`node --import`) for a svc process: at every SIGUSR2 it appends one JSON line to
// $MEMPROBE_FILE with where the process's memory is, read from inside: `process.memoryUsage()`,
// V8's heap statistics and heap spaces (size, used, physical), malloc'd memory V8 counts, the
// active handles and requests, and /proc/self/smaps summed by kind (glibc's main arena `[heap]`,
// other anonymous mappings (V8's pages, thread arenas), file mappings). The line has the figures
// twice: `before` as the process stood, `after` a full GC (MEMPROBE_GC=0: no GC, `after` omitted),
// so "RSS grew" can be split into live heap, garbage V8 kept, and native memory.
// MEMPROBE_SNAPSHOTS=3,5 writes a heap snapshot (after that GC) at those signals (1-based) to
// $MEMPROBE_DIR (default: the file's directory): diff them with bench/profile/heap-diff.mjs.
// The GC comes from a context of its own (as src/util/heap.ts does): svc's code sees no `gc`.
// Used by bench/memory-rounds.mjs.
import { appendFileSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

const FILE = process.env.MEMPROBE_FILE;
const GC = process.env.MEMPROBE_GC !== '0';
const SNAPSHOTS = new Set((process.env.MEMPROBE_SNAPSHOTS ?? '').split(',').filter(Boolean).map(Number));
const DIR = process.env.MEMPROBE_DIR ?? (FILE ? dirname(FILE) : '.');

function isolatedGc() {
  v8.setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc');
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
  }
}
const gc = GC ? isolatedGc() : undefined;

/** KB of Rss in /proc/self/smaps by kind of mapping. */
function smaps() {
  const out = { brkHeap: 0, anon: 0, file: 0, stack: 0, anonMappings: 0 };
  let kind = 'anon';
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (head) {
      const name = head[2];
      if (name === '[heap]') kind = 'brkHeap';
      else if (name.startsWith('[stack')) kind = 'stack';
      else if (name === '' || name.startsWith('[anon')) kind = 'anon';
      else if (name.startsWith('[')) kind = 'stack';
      else kind = 'file';
      if (kind === 'anon') out.anonMappings++;
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) out[kind] += Number(rss[1]);
  }
  return out;
}

function figures() {
  const usage = process.memoryUsage();
  const heap = v8.getHeapStatistics();
  const spaces = {};
  for (const s of v8.getHeapSpaceStatistics()) {
    spaces[s.space_name] = {
      size: s.space_size,
      used: s.space_used_size,
      physical: s.physical_space_size,
    };
  }
  return {
    rss: usage.rss,
    heapTotal: usage.heapTotal,
    heapUsed: usage.heapUsed,
    external: usage.external,
    arrayBuffers: usage.arrayBuffers,
    totalPhysical: heap.total_physical_size,
    mallocedMemory: heap.malloced_memory,
    peakMallocedMemory: heap.peak_malloced_memory,
    heapLimit: heap.heap_size_limit,
    nativeContexts: heap.number_of_native_contexts,
    detachedContexts: heap.number_of_detached_contexts,
    handles: process._getActiveHandles().length,
    requests: process._getActiveRequests().length,
    smaps: smaps(),
    spaces,
  };
}

let signals = 0;
process.on('SIGUSR2', () => {
  signals++;
  const line = { n: signals, before: figures() };
  if (gc) {
    gc();
    line.after = figures();
  }
  if (SNAPSHOTS.has(signals)) {
    line.snapshot = v8.writeHeapSnapshot(join(DIR, `memprobe-${process.pid}-${signals}.heapsnapshot`));
  }
  if (FILE) appendFileSync(FILE, `${JSON.stringify(line)}\n`);
});
