/**
 * The context window of a model on an OpenAI-compatible server (Ollama, LM Studio, llama.cpp,
 * vLLM, a corporate gateway), learned from the server the first time a turn needs it and cached
 * per provider, base URL and model in `<data dir>/cache/context-windows.json`:
 * - a window set in `[providers.<id>.models]` always wins, and no probe is made;
 * - else the server is asked (server-models.ts, bounded by `options.local_probe.window_timeout_ms`);
 * - else the catalog's window, if it has one;
 * - else unknown (then `options.tool_exposure = "auto"` defers, see src/agent/tool-exposure.ts).
 *
 * A learned window is kept for a day, an unknown one for ten minutes (so a server that does not
 * tell is not asked on every turn). The same rows are kept in the user cache dir
 * (`~/.cache/svc/context-windows.json`), shared by every data dir: a `svc run` in a new workspace
 * does not ask the server again (issue 17: the probe's four requests came before every first
 * model request). `svc update-providers` clears both, and so does deleting both files. A failed
 * probe never fails the turn.
 * @module
 */
import { readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { userCacheDir } from '../config/load';
import { makeDirs } from '../util/make-dirs';
import type { ProviderDeps } from './context';
import type { ProviderEntry } from './provider-entries';
import { learnContextWindow } from './server-models';

export const LEARNED_TTL_MS = 24 * 60 * 60 * 1000;
export const UNKNOWN_TTL_MS = 10 * 60 * 1000;

interface CacheRow {
  context_window: number | null;
  source: string | null;
  at: number;
}

export interface WindowAnswer {
  context_window?: number;
  /** `config`, `catalog`, the endpoint that told it, or `unknown`. */
  source: string;
  cached: boolean;
}

export function windowCachePath(dataDir: string): string {
  return join(dataDir, 'cache', 'context-windows.json');
}

/** The cache shared by every data dir (the user cache dir), or undefined without one. */
export function sharedWindowCachePath(env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (sharedPaths.has(env)) return sharedPaths.get(env);
  const dir = userCacheDir(env);
  const path = dir ? join(dir, 'context-windows.json') : undefined;
  sharedPaths.set(env, path);
  return path;
}
const sharedPaths = new WeakMap<object, string | undefined>();

export function clearWindowCache(dataDir: string, env?: Readonly<Record<string, string | undefined>>): void {
  rmSync(windowCachePath(dataDir), { force: true });
  reads.delete(windowCachePath(dataDir));
  const shared = env ? sharedWindowCachePath(env) : undefined;
  if (shared) rmSync(shared, { force: true });
  if (shared) reads.delete(shared);
}

/**
 * The cache files as last read, per path: every turn of every run looked its model up here (twice
 * for a compat request, issue 17), so a file is read again only when its modification time
 * changed, and its time is looked at again only after RECHECK_MS (another process's write is seen
 * within that; this process's own writes and clears at once).
 */
const reads = new Map<string, { rows: Record<string, CacheRow>; mtimeMs: number; checked: number }>();
const RECHECK_MS = 1000;

function readCacheOnce(path: string): Record<string, CacheRow> {
  const now = performance.now();
  const memo = reads.get(path);
  if (memo && now - memo.checked < RECHECK_MS) return memo.rows;
  let mtimeMs = -1;
  try {
    mtimeMs = statSync(path).mtimeMs;
  } catch {
    // missing: no rows
  }
  if (memo && memo.mtimeMs === mtimeMs) {
    memo.checked = now;
    return memo.rows;
  }
  const rows = mtimeMs < 0 ? {} : readCache(path);
  reads.set(path, { rows, mtimeMs, checked: now });
  return rows;
}

function readCache(path: string): Record<string, CacheRow> {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, CacheRow>) : {};
  } catch {
    return {};
  }
}

function writeCache(path: string, rows: Record<string, CacheRow>): void {
  makeDirs(dirname(path));
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(rows, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, path);
  reads.delete(path);
}

function isRow(row: unknown): row is CacheRow {
  if (typeof row !== 'object' || row === null) return false;
  const r = row as Record<string, unknown>;
  return (
    typeof r.at === 'number' &&
    (r.context_window === null || (typeof r.context_window === 'number' && r.context_window > 0)) &&
    (r.source === null || r.source === undefined || typeof r.source === 'string')
  );
}

/** Whether the server behind this entry is worth asking (OpenAI-compatible HTTP servers only). */
export function probesWindow(entry: ProviderEntry): boolean {
  return entry.type === 'openai-compat' && typeof entry.base_url === 'string' && entry.base_url.length > 0;
}

/**
 * The window a turn on `entry`/`model` should plan for. Never throws: a cache it cannot read or
 * write, or a server that does not answer, leave the catalog's answer (or none).
 */
export async function contextWindowFor(
  deps: ProviderDeps,
  entry: ProviderEntry,
  model: string,
  options: { apiKey?: string; signal?: AbortSignal } = {},
): Promise<WindowAnswer> {
  const found = windowLookup(deps, entry, model, options);
  return 'answer' in found ? found.answer : found;
}

/**
 * What a window answer was read from, for one who keeps the answer (../providers/service.ts): it
 * holds while `windowHolds` says so, which reads the cache files exactly as a new look-up would
 * (their rows as last read, each file's time looked at once a second at most).
 */
export type WindowStamp =
  | { kind: 'fixed' }
  | {
      kind: 'cache';
      path: string;
      local: Record<string, CacheRow>;
      key: string;
      shared?: { path: string; rows: Record<string, CacheRow> };
    };

/**
 * The answer with its stamp when it came from config, the catalog or a cache row (a probe's answer
 * has none: the next look-up reads the row it wrote); a probe under way when it must ask.
 */
export function windowLookup(
  deps: ProviderDeps,
  entry: ProviderEntry,
  model: string,
  options: { apiKey?: string; signal?: AbortSignal } = {},
): { answer: WindowAnswer; stamp: WindowStamp } | Promise<WindowAnswer> {
  const configured = entry.config?.models?.find((m) => m.id === model)?.context_window;
  if (configured)
    return { answer: { context_window: configured, source: 'config', cached: false }, stamp: FIXED };
  const catalog = catalogAnswer(entry, model);
  const probe = deps.config().options.local_probe;
  if (!probesWindow(entry) || !probe.learn_window) return { answer: catalog, stamp: FIXED };
  const path = windowCachePath(deps.dataDir);
  const shared = sharedWindowCachePath(deps.env);
  const key = `${entry.id} ${entry.base_url} ${model}`;
  const now = deps.clock.now();
  const fresh = (row: CacheRow | undefined): row is CacheRow => freshAt(row, now);
  const local = readCacheOnce(path);
  let row: CacheRow | undefined = local[key];
  let sharedRows: { path: string; rows: Record<string, CacheRow> } | undefined;
  if (!fresh(row) && shared) {
    sharedRows = { path: shared, rows: readCacheOnce(shared) };
    row = sharedRows.rows[key];
  }
  if (fresh(row)) {
    const stamp: WindowStamp = { kind: 'cache', path, local, key, shared: sharedRows };
    return {
      answer: row.context_window
        ? { context_window: row.context_window, source: row.source ?? 'server', cached: true }
        : { ...catalog, cached: true },
      stamp,
    };
  }
  // Requests that arrive together for a model not yet known share one probe and one cache write
  // (a burst after start-up made each of them ask the server and rewrite the file, issue 17).
  const flight = `${path}\u0000${key}`;
  let pending = probing.get(flight);
  if (!pending) {
    pending = probeAndStore(deps, entry, model, options, { path, shared, key, now, catalog }).finally(() =>
      probing.delete(flight),
    );
    probing.set(flight, pending);
  }
  return pending;
}

const FIXED: WindowStamp = { kind: 'fixed' };

/** What the catalog says of the model's window (a probe that learns nothing answers it). */
function catalogAnswer(entry: ProviderEntry, model: string): WindowAnswer {
  const known = entry.models.find((m) => m.id === model);
  return known?.context_window
    ? { context_window: known.context_window, source: 'catalog', cached: false }
    : { source: 'unknown', cached: false };
}

/**
 * A serving process's start-up look-up (../app/warm.ts), so its first request reads the cache:
 * when the window of `entry`/`model` is to be learned and is not cached, the server is asked now
 * and only a known answer is stored; an unknown one (a server down at start, or one that does not
 * tell) is not, and the first request asks as it would have. Answers whether a window is now
 * cached. Never throws.
 */
export async function learnWindowAhead(
  deps: ProviderDeps,
  entry: ProviderEntry,
  model: string,
  options: { apiKey?: string; signal?: AbortSignal } = {},
): Promise<boolean> {
  const probe = deps.config().options.local_probe;
  if (!probesWindow(entry) || !probe.learn_window) return false;
  if (entry.config?.models?.find((m) => m.id === model)?.context_window) return false;
  const path = windowCachePath(deps.dataDir);
  const shared = sharedWindowCachePath(deps.env);
  const key = `${entry.id} ${entry.base_url} ${model}`;
  const now = deps.clock.now();
  if (freshAt(readCacheOnce(path)[key], now) || (shared && freshAt(readCacheOnce(shared)[key], now)))
    return true;
  // In flight as a request's look-up is: a request that comes while it is under way (the service
  // ready before it answered) shares it rather than asking the server again.
  const catalog = catalogAnswer(entry, model);
  const flight = `${path}\u0000${key}`;
  let pending = probing.get(flight);
  if (!pending) {
    pending = probeAndStore(deps, entry, model, options, {
      path,
      shared,
      key,
      now,
      catalog,
      knownOnly: true,
    }).finally(() => probing.delete(flight));
    probing.set(flight, pending);
  }
  const answer = await pending;
  return answer.context_window !== undefined && answer.source !== catalog.source;
}

/**
 * Whether an answer read under `stamp` is still the one a look-up would give now: config and
 * catalog answers hold for their entry (rebuilt on a config reload or catalog refresh); a cache
 * answer while each file read has the same rows (a write or clear here, or another process's
 * write seen by the once-a-second time check, is new rows) and its row is within its age.
 */
export function windowHolds(deps: ProviderDeps, stamp: WindowStamp): boolean {
  if (stamp.kind === 'fixed') return true;
  const now = deps.clock.now();
  if (readCacheOnce(stamp.path) !== stamp.local) return false;
  const localFresh = freshAt(stamp.local[stamp.key], now);
  if (!stamp.shared) return localFresh;
  if (localFresh || readCacheOnce(stamp.shared.path) !== stamp.shared.rows) return false;
  return freshAt(stamp.shared.rows[stamp.key], now);
}

/** A row within its age: a day for a learned window, ten minutes for an unknown one. */
function freshAt(row: CacheRow | undefined, now: number): row is CacheRow {
  return isRow(row) && now - row.at < (row.context_window ? LEARNED_TTL_MS : UNKNOWN_TTL_MS) && now >= row.at;
}

/** The probes under way, per cache file and row key. */
const probing = new Map<string, Promise<WindowAnswer>>();

/** Resolves once every window question under way now has answered (or failed) and been stored. */
export async function windowQuestionsSettled(): Promise<void> {
  await Promise.allSettled([...probing.values()]);
}

async function probeAndStore(
  deps: ProviderDeps,
  entry: ProviderEntry,
  model: string,
  options: { apiKey?: string; signal?: AbortSignal },
  at: {
    path: string;
    shared: string | undefined;
    key: string;
    now: number;
    catalog: WindowAnswer;
    /** Store only a learned window (the start-up look-up). */
    knownOnly?: boolean;
  },
): Promise<WindowAnswer> {
  const { path, shared, key, now, catalog } = at;
  const probe = deps.config().options.local_probe;
  const learned = await learnContextWindow(
    {
      fetch: deps.fetch,
      base_url: entry.base_url!,
      timeoutMs: probe.window_timeout_ms,
      signal: options.signal,
      headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : undefined,
    },
    model,
  ).catch(() => undefined);
  if (options.signal?.aborted || (at.knownOnly && !learned)) return catalog;
  const learnedRow = {
    context_window: learned?.context_window ?? null,
    source: learned?.source ?? null,
    at: now,
  };
  for (const file of shared ? [path, shared] : [path]) {
    try {
      const rows = readCache(file);
      rows[key] = learnedRow;
      writeCache(file, rows);
    } catch (error) {
      deps.log.warn('context window cache not written', { path: file, error: (error as Error).message });
    }
  }
  deps.log.info('context window probed', {
    provider: entry.id,
    model,
    context_window: learned?.context_window ?? null,
    source: learned?.source ?? null,
  });
  return learned ? { ...learned, cached: false } : catalog;
}
