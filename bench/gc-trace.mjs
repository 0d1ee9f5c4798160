// V8's own account of a service's GCs, read from its `--trace-gc` lines on stdout (one line a GC,
// printed by V8 as it ends: no extra GC, no signal, nothing svc does differently): how many
// scavenges and full GCs (Mark-Compact) ran, their main-thread time (pauses and incremental marking
// steps; concurrent marking on V8's helper threads is not in it), and the JS heap used right after
// the last full GC,
// i.e. the live heap as V8 last measured it. The memory benches read it after each round beside
// RSS, so RSS growth can be told apart from live-heap growth without a heap snapshot (a snapshot
// mallocs ≈ 100 MB that glibc keeps: RSS after one is no longer the service's own) or a forced GC
// (which resizes the heap the next rounds run in).

/** `--trace-gc`'s line: `[pid:0x…]  1234 ms: Mark-Compact 45.2 (70.1) -> 25.3 (71.0) MB, …` (Node 22+: `MB, pooled: 0 MB, …`). */
const LINE =
  /\d+ ms: (Scavenge|Mark-Compact|Mark-Compact \(reduce\)|Minor Mark-Compact)\S* ([\d.]+) \(([\d.]+)\) -> ([\d.]+) \(([\d.]+)\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ [\d.]+ ms(?:\s+\(\+ ([\d.]+) ms in \d+ steps)?/;

/**
 * A counter fed with the service's stdout lines (`onLine` of ./service-process.mjs). `take()` gives
 * the counts since the last `take()` and the heap after the last full GC so far (MB, undefined
 * before the first).
 */
export function gcTrace() {
  let scavenges = 0;
  let fullGcs = 0;
  let mainThreadMs = 0;
  let fullGcMs = 0;
  let liveAfterFullGc;
  let committedAfterFullGc;
  return {
    onLine(line) {
      const match = LINE.exec(line);
      if (!match) return false;
      // The pause, and a full GC's incremental marking steps before it (both on the main thread).
      const ms = Number(match[6]) + Number(match[7] ?? 0);
      mainThreadMs += ms;
      if (match[1].startsWith('Mark-Compact')) {
        fullGcs++;
        fullGcMs += ms;
        liveAfterFullGc = Number(match[4]);
        committedAfterFullGc = Number(match[5]);
      } else {
        scavenges++;
      }
      return true;
    },
    take() {
      const out = { scavenges, fullGcs, mainThreadMs, fullGcMs, liveAfterFullGc, committedAfterFullGc };
      scavenges = 0;
      fullGcs = 0;
      mainThreadMs = 0;
      fullGcMs = 0;
      return out;
    },
  };
}
