import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProviderDeps } from './context';
import { clearWindowCache, contextWindowFor, windowCachePath } from './context-window';
import type { ProviderEntry } from './provider-entries';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function setUp() {
  const dir = mkdtempSync(join(tmpdir(), 'svc-window-'));
  dirs.push(dir);
  let asked = 0;
  const deps = {
    dataDir: join(dir, 'data'),
    env: { HOME: dir, XDG_CACHE_HOME: join(dir, 'cache') },
    clock: { now: () => Date.now() },
    config: () => ({ options: { local_probe: { learn_window: true, window_timeout_ms: 200 } } }),
    fetch: (async () => {
      asked++;
      throw new Error('no server');
    }) as unknown as typeof fetch,
    log: { info() {}, warn() {}, error() {}, debug() {} },
  } as unknown as ProviderDeps;
  const entry = {
    id: 'local',
    type: 'openai-compat',
    base_url: 'http://127.0.0.1:9/v1',
    models: [],
  } as unknown as ProviderEntry;
  const path = windowCachePath(deps.dataDir);
  const write = (window: number, mtime: number) => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(
      path,
      JSON.stringify({
        'local http://127.0.0.1:9/v1 m1': { context_window: window, source: 'server', at: Date.now() },
      }),
    );
    utimesSync(path, mtime, mtime);
  };
  return { deps, entry, write, asked: () => asked };
}

describe('context window cache', () => {
  it("COMPAT-PERF-1: a turn reads the cache file again only when it changed, and sees another process's write within a second", async () => {
    const { deps, entry, write, asked } = setUp();
    const now = Date.now() / 1000;
    write(8192, now - 100);
    expect((await contextWindowFor(deps, entry, 'm1')).context_window).toBe(8192);
    // Another process rewrites the file: not looked at again within the recheck interval…
    write(4096, now - 50);
    expect((await contextWindowFor(deps, entry, 'm1')).context_window).toBe(8192);
    // …and seen once it has passed.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await contextWindowFor(deps, entry, 'm1')).context_window).toBe(4096);
    expect(asked()).toBe(0);
    // This process's clear is seen at once: the next turn asks the server.
    clearWindowCache(deps.dataDir, deps.env);
    expect((await contextWindowFor(deps, entry, 'm1')).source).toBe('unknown');
    expect(asked()).toBeGreaterThan(0);
  });

  it('ENGINE-EDGE-10: requests that arrive together for a model not yet known share one probe of the server', async () => {
    const alone = setUp();
    expect((await contextWindowFor(alone.deps, alone.entry, 'm1')).source).toBe('unknown');
    const once = alone.asked();
    expect(once).toBeGreaterThan(0);
    const burst = setUp();
    const answers = await Promise.all([1, 2, 3].map(() => contextWindowFor(burst.deps, burst.entry, 'm1')));
    expect(answers.map((a) => a.source)).toEqual(['unknown', 'unknown', 'unknown']);
    expect(burst.asked()).toBe(once);
    // Another model is its own probe.
    await contextWindowFor(burst.deps, burst.entry, 'm2');
    expect(burst.asked()).toBe(2 * once);
  });
});
