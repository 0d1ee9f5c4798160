/**
 * Statements a compat request need not make (issue 17 item 3, brief p-reads): the codebase
 * summary row answered from memory while no other connection committed and this store wrote
 * nothing (`PRAGMA data_version`), a second connection's write seen at the next read; the
 * adaptive compaction threshold asked with the layer off reads no session row.
 * @module
 */
import type { Statement } from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createCodebaseCacheStore } from '../../src/observe/codebase-cache-store';
import { type Db, openDb } from '../../src/store/db';
import { makeTestApp } from '../helpers/make-test-app';
import { tmpWorkspace } from '../helpers/tmp-workspace';

afterEach(() => {
  vi.restoreAllMocks();
});

/** The statements run from now on whose text includes `table`, counted. */
function statementsOn(table: string): { n: number } {
  const probe = openDb({ dataDir: tmpWorkspace() }) as Db;
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Statement;
  const out = { n: 0 };
  for (const method of ['get', 'all', 'run'] as const) {
    const original = proto[method] as (...args: unknown[]) => unknown;
    vi.spyOn(proto, method).mockImplementation(function (this: Statement, ...args: unknown[]) {
      if (this.source.includes(table)) out.n++;
      return original.apply(this, args);
    } as never);
  }
  return out;
}

const entry = (files: number, at: number) => ({
  summary: JSON.stringify({ files }),
  computed_at: at,
  compute_ms: 1,
});

describe('reads answered from memory', () => {
  it('ENGINE-READS-1 the codebase summary row is read once while unchanged; a second connection its write is seen', async () => {
    const dataDir = tmpWorkspace();
    const mine = openDb({ dataDir });
    const store = createCodebaseCacheStore(() => mine);
    const other = createCodebaseCacheStore(() => openDb({ dataDir })); // another svc process
    await other.put('/ws', entry(1, 10));
    const reads = statementsOn('FROM codebase_context_cache');
    expect((await store.get('/ws'))?.summary).toBe(JSON.stringify({ files: 1 }));
    expect(await store.get('/ws')).toEqual(await store.get('/ws'));
    expect(reads.n).toBe(1); // main: one per get (3)
    expect(await store.get('/other')).toBeUndefined();
    expect(await store.get('/other')).toBeUndefined();
    expect(reads.n).toBe(2);

    await other.put('/ws', entry(2, 20));
    expect(await store.get('/ws')).toMatchObject({ summary: JSON.stringify({ files: 2 }), computed_at: 20 });
    await other.put('/other', entry(3, 30));
    expect((await store.get('/other'))?.computations).toBe(1);
  });

  it('ENGINE-READS-2 this process its own write of the summary row is seen at the next read', async () => {
    const mine = openDb({ dataDir: tmpWorkspace() });
    const store = createCodebaseCacheStore(() => mine);
    expect(await store.get('/ws')).toBeUndefined();
    await store.put('/ws', entry(4, 40));
    expect(await store.get('/ws')).toMatchObject({ computed_at: 40, computations: 1 });
    await store.put('/ws', entry(5, 50));
    const row = await store.get('/ws');
    expect(row).toMatchObject({ computed_at: 50, computations: 2 });
    // A caller changing its copy does not change what the next read answers.
    if (row) row.computed_at = 0;
    expect((await store.get('/ws'))?.computed_at).toBe(50);
  });

  it('ENGINE-READS-3 the compaction threshold with the adaptive layer off reads no session row', async () => {
    const app = await makeTestApp();
    const session = await app.sessions.create();
    const reads = statementsOn('FROM sessions');
    expect(await app.adaptive?.compactionThreshold(session.id)).toBeUndefined();
    expect(reads.n).toBe(0); // main: 1
  });
});
