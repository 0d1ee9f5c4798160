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
 * tell is not asked on every turn). `svc update-providers` clears the cache, and so does deleting
 * the file. A failed probe never fails the turn.
 * @module
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
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

export function clearWindowCache(dataDir: string): void {
  rmSync(windowCachePath(dataDir), { force: true });
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
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(rows, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, path);
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
  const known = entry.models.find((m) => m.id === model);
  const configured = entry.config?.models?.find((m) => m.id === model)?.context_window;
  if (configured) return { context_window: configured, source: 'config', cached: false };
  const catalog = known?.context_window
    ? { context_window: known.context_window, source: 'catalog', cached: false }
    : { source: 'unknown', cached: false };
  const probe = deps.config().options.local_probe;
  if (!probesWindow(entry) || !probe.learn_window) return catalog;
  const path = windowCachePath(deps.dataDir);
  const key = `${entry.id} ${entry.base_url} ${model}`;
  const now = deps.clock.now();
  const row = readCache(path)[key];
  if (row && now - row.at < (row.context_window ? LEARNED_TTL_MS : UNKNOWN_TTL_MS) && now >= row.at) {
    return row.context_window
      ? { context_window: row.context_window, source: row.source ?? 'server', cached: true }
      : { ...catalog, cached: true };
  }
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
  if (options.signal?.aborted) return catalog;
  try {
    const rows = readCache(path);
    rows[key] = { context_window: learned?.context_window ?? null, source: learned?.source ?? null, at: now };
    writeCache(path, rows);
  } catch (error) {
    deps.log.warn('context window cache not written', { path, error: (error as Error).message });
  }
  deps.log.info('context window probed', {
    provider: entry.id,
    model,
    context_window: learned?.context_window ?? null,
    source: learned?.source ?? null,
  });
  return learned ? { ...learned, cached: false } : catalog;
}
