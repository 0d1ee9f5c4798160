/**
 * V8 heap tuning for svc's long-lived processes (the HTTP service, the TUI), issue 17.
 *
 * Under a burst (200 concurrent compat requests) the live JS heap stays ≈ 25 MB, but V8 lets the
 * old generation grow to up to 4x what survived the last full GC before it collects again, and it
 * keeps the pages it grew until the process has been idle a while: RSS rose 165 → 260 MB over
 * five rounds. Capping the growth factor at 1.5x (`--heap-growing-percent=50`) made V8 collect
 * earlier; on the shared 2-core box the peak fell to ≈ 170 MB at no measurable CPU cost. The
 * service now passes 30 (1.3x): at 1.5x its old generation still grew ≈ 1–2 MB in rounds where
 * no full GC fell (about one round in four), so RSS climbed 2–4 MB between rounds 3 and 5 of the
 * memory bench with the live heap flat; at 1.3x it reaches its plateau by round 3 (≈ 5 MB lower
 * after 20 rounds) for ≈ 1.5 more full GCs per 1,000 requests (docs/performance-log.md, p-memgrowth).
 *
 * The flag is read at every full GC, so setting it once the process runs takes effect (Node
 * documents flags changed after start-up as unsupported in general; this one is a plain number V8
 * reads when it sizes the next limit). Flags fixed at heap set-up, such as the young generation
 * size (`--max-semi-space-size`), would need a second process (set here they change nothing: V8's
 * heap limit and the young generation's cap stay as they were); an operator can pass them through
 * NODE_OPTIONS (docs/performance.md). The service keeps Node 20's 16 MB semi-spaces: 32 MB gave it a
 * third fewer scavenges and no lower CPU for ≈ 35 MB more RSS, 8 MB twice the scavenges (p-gcyoung). The TUI passes 20 (`defaultPercent`): it waits for a human
 * most of the time, so a few more major GCs in a burst cost nothing one notices, and its peak after
 * a 200-message session fell ≈ 8 MB. SVC_HEAP_GROWING_PERCENT overrides the value, 0 leaves V8's
 * default.
 * @module
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { releaseFreedMalloc } from './malloc-trim';

/** This process's V8 major version: 11 on Node 20, 12 on Node 22, 13 on Node 24. */
const V8_MAJOR = Number(process.versions.v8.split('.')[0]);

const DEFAULT_GROWING_PERCENT = 30;

/**
 * A heap setting from the environment: `fallback` when unset or empty, undefined (leave V8's
 * default) for 0 or anything that is no positive integer.
 */
export function settingFromEnv(raw: string | undefined, fallback: number): number | undefined {
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  return Number.isInteger(value) && value > 0 ? value : undefined;
}

export function tuneHeapForLongRunning(
  env: NodeJS.ProcessEnv = process.env,
  defaultPercent = DEFAULT_GROWING_PERCENT,
  setFlags: (flags: string) => void = setFlagsFromString,
): void {
  const percent = settingFromEnv(env.SVC_HEAP_GROWING_PERCENT, defaultPercent);
  if (percent === undefined) return;
  setFlags(`--heap-growing-percent=${percent}`);
}

/**
 * The TUI's young generation kept at the size V8 starts it with (two 1 MB semi-spaces) instead of
 * growing to two 16 MB ones (issue 17, item 4). V8 doubles the semi-spaces whenever more than
 * their size survived since the last growth, which module loading does in the first second, and
 * it shrinks them back only in a GC after seconds of little allocation; after a 200-message
 * session the 32 MB young generation was a fifth of the TUI's RSS. The maximum
 * (`--max-semi-space-size`) is fixed when the heap is set up, before any JS runs, but the growth
 * factor is read at every growth, so `--semi-space-growth-factor=1` set first thing holds it:
 * ≈ 20 MB less RSS after the session for ≈ 10% more CPU to start and ≈ 5% more over a session
 * (more, smaller scavenges; docs/performance.md). Only for the TUI, which waits for a human;
 * `svc run` and the service keep V8's default. SVC_SEMI_SPACE_GROWTH_FACTOR overrides the factor,
 * 0 leaves V8's default.
 */
export function holdYoungGeneration(
  env: NodeJS.ProcessEnv = process.env,
  setFlags: (flags: string) => void = setFlagsFromString,
): void {
  const factor = settingFromEnv(env.SVC_SEMI_SPACE_GROWTH_FACTOR, 1);
  if (factor === undefined) return;
  setFlags(`--semi-space-growth-factor=${factor}`);
}

/** Whether the operator passed a Node flag matching `flag`, on the command line or in NODE_OPTIONS. */
function operatorPassed(flag: RegExp, env: NodeJS.ProcessEnv, execArgv: readonly string[]): boolean {
  return flag.test(`${execArgv.join(' ')} ${env.NODE_OPTIONS ?? ''}`);
}

/** An operator's own Maglev flag (NODE_OPTIONS or the command line): then svc sets none. */
const OWN_MAGLEV_FLAG = /--(no[-_])?maglev\b(?![-_])/;

/** V8 12 and later (Node 22, 24) have `--maglev-destroy-on-background`; V8 11 (Node 20) rejects it. */
const HAS_MAGLEV_DESTROY_FLAG = V8_MAJOR >= 12;

/**
 * How the service runs V8's Maglev, its mid-tier optimizing compiler (issue 17, items 3–4). On by
 * default in Node 24 (Node 22.x ships it off, Node 20's V8 has none), Maglev optimizes a function
 * after 400 calls on V8's worker threads, in zones malloc'ed there; a compat request's path is a
 * few hundred functions called about once a request, so the first 1,000 requests compile most of
 * them, and by default V8 also destroys each finished job (its zone) on a worker thread, where the
 * thread's malloc arena keeps what it freed: the service's peak RSS under 200 requests at once
 * went 143–153 MB without Maglev to 166–200 with it. Destroyed on the main thread instead
 * (`--no-maglev-destroy-on-background`), the zones go back to the arena the next job's are taken
 * from: peak 152–162, and Maglev's CPU kept (Node 24, alternating pairs, docs/performance.md): a
 * compat request 3.06–3.95 ms against 3.10–4.31 without Maglev, p50 added latency at 200 at once
 * 180–278 against 236–307. So by default svc keeps Maglev and sets that flag (V8 reads it as each
 * job finishes, so setting it once the process runs takes effect for every job after). Returns
 * what it set: `maglev-on-main` (that flag), `off` (`--no-maglev`, SVC_MAGLEV=0: the least memory,
 * the most CPU while warming up) or `none` (SVC_MAGLEV=1 keeps V8's own behaviour; an operator's
 * own `--maglev` or `--no-maglev` in NODE_OPTIONS or on the command line; Node 20, which has no
 * Maglev).
 */
export function tuneMaglev(
  env: NodeJS.ProcessEnv = process.env,
  execArgv: readonly string[] = process.execArgv,
  setFlags: (flags: string) => void = setFlagsFromString,
  hasDestroyFlag: boolean = HAS_MAGLEV_DESTROY_FLAG,
): 'maglev-on-main' | 'off' | 'none' {
  if (env.SVC_MAGLEV === '1') return 'none';
  if (operatorPassed(OWN_MAGLEV_FLAG, env, execArgv)) return 'none';
  if (env.SVC_MAGLEV === '0') {
    setFlags('--no-maglev');
    return 'off';
  }
  if (!hasDestroyFlag) return 'none';
  setFlags('--no-maglev-destroy-on-background');
  return 'maglev-on-main';
}

/** The service's largest semi-space, MB: Node 20's default cap (p-gcyoung measured 8, 16, 32 there). */
const SERVICE_SEMI_SPACE_MB = 16;
/** V8's own semi-space growth factor, put back when the young generation is below the cap again. */
const V8_GROWTH_FACTOR = 2;
/** An operator's own young-generation flags (NODE_OPTIONS or the command line): then svc sets none. */
const OWN_YOUNG_FLAGS = /--(max[-_]semi[-_]space[-_]size|semi[-_]space[-_]growth[-_]factor)\b/;

export interface YoungGenerationCap {
  /** What the GC observer runs after each collection (exported for the tests). */
  check(): void;
  /** The observer off and V8's growth factor back. */
  stop(): void;
}

/**
 * The service's young generation held at two 16 MB semi-spaces on every Node line (issue 17,
 * item 3's peak RSS ≤ 200 MB). Node 24's V8 sizes the semi-spaces from the heap limit: on a box
 * with 24 GiB it lets each grow to 64 MB (Node 20 and 22: 16), and under 200 concurrent compat
 * requests the service's peak RSS was 227–241 MB against 136–144 on Node 20 and 22. The maximum
 * is fixed before any JS runs (`--max-semi-space-size` set here changes nothing), but the growth
 * factor is read at every growth. So growth stops (factor 1) once one more growth would take a
 * semi-space past the cap, and is V8's 2 again once it fits (V8 shrinks the young generation
 * after a quiet spell), checked at the call and after each GC. Checking before the step rather
 * than at the cap leaves room for the GC observer's lag: it hears of a GC a turn later, and by
 * then V8 may have grown the space once more.
 *
 * What is compared is a semi-space's capacity (the new space's used plus available bytes), not
 * its committed size: V8 commits the second semi-space only for a scavenge and uncommits it after
 * some, so the committed size halves and doubles with no growth at all, and a check on it let the
 * growth go again at every halving.
 *
 * Not held by this: Node 24's V8 (`--separate-gc-phases`, on there) runs no scavenge while a full
 * GC marks and hands the young generation pages beyond its capacity meanwhile; they go back at
 * the next scavenge. The more the marking is slowed (a loaded box), the more it takes: 5–8 MB
 * in a test on a box with 3 busy cores; the likeliest source of the 32 MB a CI run once saw.
 *
 * The observer runs once a GC (≈ 15–50 a thousand compat requests). An operator's own
 * `--max-semi-space-size` or `--semi-space-growth-factor` (NODE_OPTIONS) wins: then nothing is
 * set. SVC_MAX_SEMI_SPACE_MB overrides the cap, 0 leaves V8's default.
 */
export function capYoungGeneration(
  env: NodeJS.ProcessEnv = process.env,
  execArgv: readonly string[] = process.execArgv,
  setFlags: (flags: string) => void = setFlagsFromString,
  semiSpaceBytes: () => number = semiSpaceCapacity,
): YoungGenerationCap | undefined {
  if (operatorPassed(OWN_YOUNG_FLAGS, env, execArgv)) return undefined;
  const capMb = settingFromEnv(env.SVC_MAX_SEMI_SPACE_MB, SERVICE_SEMI_SPACE_MB);
  if (capMb === undefined) return undefined;
  const capBytes = capMb * 1024 * 1024;
  let holding = false;
  const hold = (on: boolean) => {
    if (on === holding) return;
    holding = on;
    setFlags(`--semi-space-growth-factor=${on ? 1 : V8_GROWTH_FACTOR}`);
  };
  const check = () => hold(V8_GROWTH_FACTOR * semiSpaceBytes() > capBytes);
  // Now too: start-up may have grown it next to the cap already.
  check();
  const observer = new PerformanceObserver(check);
  observer.observe({ entryTypes: ['gc'] });
  return {
    check,
    stop() {
      observer.disconnect();
      hold(false);
    },
  };
}

/** A semi-space's capacity: what the new space holds and can still take before a scavenge. */
export function semiSpaceCapacity(): number {
  for (const space of getHeapSpaceStatistics())
    if (space.space_name === 'new_space') return space.space_used_size + space.space_available_size;
  return 0;
}

/**
 * React's development build (the TUI loads it: nothing sets NODE_ENV) records a
 * `performance.measure` with details for every component render, for its DevTools tracks, and
 * Node keeps every entry until it is cleared: ≈ 3,400 entries per 100 prompts of a TUI session. svc reads no
 * user timing entries, so they are dropped every `everyMs`. Returns the stop function.
 */
export function dropUserTimingEntries(everyMs = 30_000): () => void {
  const timer = setInterval(() => performance.clearMeasures(), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** The stop function of `trimWhenIdle`, with `now()`: trim at once, the work has just ended. */
export interface IdleTrim {
  (): void;
  /**
   * One full GC now (the TUI calls it when a run has ended and the screen waits for the human).
   * The quiet check still trims once the process has been quiet for `everyMs`: only then does V8
   * shrink the young generation (it does when little was allocated over the last seconds).
   */
  now(): void;
}

/**
 * Once a long-lived process goes quiet after work (less than 2% of one core used over
 * `everyMs`), one full GC hands the pages the burst grew back to the OS. V8's own memory reducer
 * does the same only sometimes: after 1,000 compat requests the service stayed at 166–239 MB after
 * a minute idle in some runs and went to 117 MB in others; with this it is ≈ 120 MB 10–20 s after
 * the load. One GC per quiet period (≈ 50–150 ms of CPU), none while busy.
 *
 * The quiet trim is a memory-reducing GC (`memoryReducingGc`): a plain full GC frees the dead
 * objects but keeps the pages they were scattered over (after the load the service's old
 * generation stayed at ≈ 39 MB for ≈ 27 MB live), and on Node 22 and 24 it keeps the pages it
 * freed too. `now()` (the TUI after each run) stays a plain full GC: the human is looking at the
 * screen then.
 *
 * `onQuiet` runs just before that trim: the service has SQLite hand back its page cache there.
 * After it, glibc's `malloc_trim` hands back the pages malloc's arenas hold free
 * (`releaseFreedMalloc`).
 *
 * `gc` comes from a context of its own (`--expose-gc` is on only while that context is made), so
 * no code of the process sees a global `gc`. Returns the stop function; a no-op when V8 refuses.
 */
export function trimWhenIdle(everyMs = 10_000, onQuiet?: () => void): IdleTrim {
  const gc = isolatedGc();
  if (!gc) return Object.assign(() => {}, { now: () => {} });
  let last = process.cpuUsage();
  let busySinceTrim = true;
  const collect = (reduce: boolean) => {
    if (reduce) memoryReducingGc(gc);
    else gc();
    // The collection's own CPU is not work.
    last = process.cpuUsage();
  };
  const timer = setInterval(() => {
    const now = process.cpuUsage(last);
    last = process.cpuUsage();
    if ((now.user + now.system) / 1000 > everyMs * 0.02) {
      busySinceTrim = true;
      return;
    }
    if (!busySinceTrim) return;
    busySinceTrim = false;
    try {
      onQuiet?.();
    } catch {
      // What the process releases when quiet is best effort.
    }
    collect(true);
    // What that GC freed of malloc's memory (buffers' backing stores, V8's compiler zones) goes
    // back too: glibc keeps it in its arenas otherwise (./malloc-trim.ts).
    releaseFreedMalloc();
  }, everyMs);
  timer.unref();
  return Object.assign(() => clearInterval(timer), { now: () => collect(false) });
}

/** What V8's `gc` extension takes (`--expose-gc`); V8 12 (Node 22) and later read `flavor`. */
export interface GcOptions {
  type: 'major' | 'minor';
  execution: 'sync' | 'async';
  flavor?: 'regular' | 'last-resort';
}

/** A `gc` function: no argument is a full GC now. */
export type Gc = (options?: GcOptions) => void;

/** V8 12 and later (Node 22, 24): `gc` takes `flavor`, and a full GC's freed pages are pooled. */
const POOLS_FREED_PAGES = V8_MAJOR >= 12;

/**
 * One full GC that moves the live objects of the old generation together and hands the freed
 * pages back to the OS: what V8's own memory-reducing GCs do, which a plain `gc()` does not.
 *
 * On V8 12 and later (Node 22, 24) a full GC keeps the pages it frees committed in a pool for the
 * next allocations; only a memory-reducing GC empties the pool. A plain or compacting `gc()` there
 * left the service's RSS where it was: on Node 24 the quiet trim pooled 14 MB that V8's memory
 * reducer had handed back seconds before (RSS 131 → 144 MB), and a 100 MB heap of garbage stayed
 * in RSS after it. `flavor: 'last-resort'` is V8's "collect all available garbage": memory-reducing
 * full GCs (they compact) until one frees nothing more, the pool emptied.
 *
 * Before V8 12 (Node 20) `gc` knows no flavor, and V8's unmapper hands freed pages back on its
 * own; `--compact-on-every-full-gc`, read by each GC, is on for this one only. Exported for its
 * test.
 */
export function memoryReducingGc(gc: Gc): void {
  if (POOLS_FREED_PAGES) {
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    return;
  }
  setFlagsFromString('--compact-on-every-full-gc');
  try {
    gc();
  } finally {
    setFlagsFromString('--no-compact-on-every-full-gc');
  }
}

/** A `gc` function from a context of its own (exported for the tests). */
export function isolatedGc(): Gc | undefined {
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (options) => (options ? gc(options) : gc()) : undefined;
  } catch {
    return undefined;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}
