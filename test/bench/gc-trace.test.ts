/**
 * bench/gc-trace.mjs reads V8's `--trace-gc` lines of a service for the memory and compat benches
 * (the heap after each round's last full GC, full GCs and scavenges per round). Its pattern is
 * checked against the lines this Node prints, so a format change shows here, not as a bench row
 * that silently reads `n/a`.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

interface GcCounts {
  scavenges: number;
  fullGcs: number;
  mainThreadMs: number;
  fullGcMs: number;
  liveAfterFullGc: number | undefined;
}
interface GcTrace {
  onLine(line: string): boolean;
  take(): GcCounts;
}

const loadGcTrace = async (): Promise<() => GcTrace> => {
  const url = pathToFileURL(resolve(import.meta.dirname, '../../bench/gc-trace.mjs')).href;
  return (await import(url)).gcTrace;
};

describe('bench/gc-trace.mjs', () => {
  it("COMPAT-PERF-151: counts this Node's scavenges and full GCs and reads the heap after the last full GC", async () => {
    // ≈ 8 MB kept alive, garbage made around it, then two full GCs.
    const script = [
      'const keep = Array.from({ length: 80_000 }, (_, i) => ({ i, s: `kept ${i}` }));',
      'for (let r = 0; r < 30; r++) Array.from({ length: 50_000 }, (_, i) => ({ i, s: `garbage ${i}` }));',
      'gc(); gc();',
      'console.log(`svc: listening on http://127.0.0.1:1 ${keep.length}`);',
    ].join('\n');
    const out = spawnSync(process.execPath, ['--trace-gc', '--expose-gc', '-e', script], {
      encoding: 'utf8',
    });
    expect(out.status).toBe(0);
    const trace = (await loadGcTrace())();
    const lines = out.stdout.split('\n');
    const matched = lines.filter((line) => trace.onLine(line));
    expect(lines.some((line) => line.startsWith('svc: listening on'))).toBe(true);
    const counts = trace.take();
    expect(matched.length).toBe(counts.scavenges + counts.fullGcs);
    expect(counts.fullGcs).toBeGreaterThanOrEqual(2);
    expect(counts.scavenges).toBeGreaterThan(0);
    // 80,000 small objects and their strings: several MB live, far below what was allocated.
    expect(counts.liveAfterFullGc).toBeGreaterThan(3);
    expect(counts.liveAfterFullGc).toBeLessThan(100);
    expect(counts.mainThreadMs).toBeGreaterThan(0);
    expect(counts.fullGcMs).toBeGreaterThan(0);
    expect(counts.fullGcMs).toBeLessThanOrEqual(counts.mainThreadMs);
    // take() starts the next count; the last full GC's heap stays.
    expect(trace.take()).toMatchObject({ scavenges: 0, fullGcs: 0, liveAfterFullGc: counts.liveAfterFullGc });
  });

  it('COMPAT-PERF-152: lines that are not a GC are not counted', async () => {
    const trace = (await loadGcTrace())();
    expect(trace.onLine('svc: listening on http://127.0.0.1:4000')).toBe(false);
    expect(trace.onLine('Mark-Compact in a log message')).toBe(false);
    expect(
      trace.onLine(
        '[1:0x1]  519 ms: Mark-Compact 94.2 (119.0) -> 73.4 (107.7) MB, 11.65 / 0.00 ms  (+ 42.4 ms in 67 steps since start of marking, biggest step 10.4 ms)',
      ),
    ).toBe(true);
    expect(trace.take()).toMatchObject({ scavenges: 0, fullGcs: 1, liveAfterFullGc: 73.4 });
  });
});
