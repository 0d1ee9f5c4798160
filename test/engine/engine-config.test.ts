/**
 * `[engine] kind` at start-up (issue 19, docs/engine.md). Pins:
 * - unset, the in-process engine is built (app.engine.kind);
 * - `dbos` with the SQLite store is a config_error naming the problem and `[store] url`;
 * - `dbos` with a PostgreSQL URL passes the engine check (the store is connected next: the URL
 *   here reaches nothing, so the store's error is what start-up says);
 * - an unknown kind is a config error naming the key.
 */
import { describe, expect, it } from 'vitest';
import { runQueueParameters } from '../../src/engine/dbos-queue';
import { SvcError } from '../../src/errors';
import { makeTestApp } from '../helpers/make-test-app';

async function startError(config: Record<string, unknown>): Promise<SvcError> {
  const error = await makeTestApp({ config }).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!SvcError.is(error)) throw new Error(`expected a SvcError, got ${String(error)}`);
  return error;
}

describe('[engine] kind', () => {
  it('ENGINE-7: defaults to the in-process engine', async () => {
    const app = await makeTestApp();
    expect(app.config.engine).toEqual({ kind: 'in-process', unknown_outcome: 'tell_model' });
    expect(app.engine.kind).toBe('in-process');
  });

  it('ENGINE-8: dbos with the SQLite store is a start-up error that says to set [store] url', async () => {
    const error = await startError({ engine: { kind: 'dbos' } });
    expect(error.code).toBe('config_error');
    expect(error.message).toBe(
      '[engine] kind = "dbos" needs the PostgreSQL store, and [store] is the SQLite file: set [store] url to a postgres:// URL (or SVC_STORE_URL), or set [engine] kind = "in-process"',
    );
  });

  it('ENGINE-9: dbos with a PostgreSQL store is accepted: the store is what start-up checks next', async () => {
    // Port 1 answers nothing: the engine passes its check and the store connection is refused.
    const error = await startError({
      engine: { kind: 'dbos' },
      store: { url: 'postgres://svc@127.0.0.1:1/svc', connect_timeout_ms: 100 },
    });
    expect(error.message).toContain('cannot reach PostgreSQL at 127.0.0.1:1');
    expect(error.message).not.toContain('[engine]');
  });

  it('ENGINE-10: an unknown kind is a config error naming engine.kind', async () => {
    const error = await startError({ engine: { kind: 'temporal' } });
    expect(error.code).toBe('config_error');
    expect(error.message).toContain('engine.kind');
  });

  it('ENGINE-13: the run queue limits must be whole numbers in range: a config error naming the key', async () => {
    for (const [engine, key] of [
      [{ kind: 'dbos', max_runs: 0 }, 'max_runs: must be at least 1'],
      [{ kind: 'dbos', max_runs_per_node: 2.5 }, 'engine.max_runs_per_node: expected int'],
      [{ kind: 'dbos', queue_poll_ms: 10 }, 'queue_poll_ms: must be at least 50'],
    ] as const) {
      const error = await startError({ engine });
      expect(error.code, key).toBe('config_error');
      expect(error.message).toContain(key);
    }
  });

  it('ENGINE-16: [engine] unknown_outcome is "tell_model" or "ask": another value is a config error naming the key and both values', async () => {
    const error = await startError({ engine: { kind: 'dbos', unknown_outcome: 'maybe' } });
    expect(error.code).toBe('config_error');
    expect(error.message).toContain('engine.unknown_outcome');
    expect(error.message).toContain('"tell_model"');
    expect(error.message).toContain('"ask"');
  });

  it('ENGINE-14: the run queue: one run per workspace partition; max_runs cluster-wide (none by default); max_runs_per_node (16 by default, never above max_runs)', () => {
    expect(runQueueParameters({})).toEqual({
      partitionConcurrency: 1,
      workerConcurrency: 16,
      minPollingIntervalMs: 1000,
    });
    expect(runQueueParameters({ max_runs: 64, max_runs_per_node: 8, queue_poll_ms: 200 })).toEqual({
      partitionConcurrency: 1,
      globalConcurrency: 64,
      workerConcurrency: 8,
      minPollingIntervalMs: 200,
    });
    expect(runQueueParameters({ max_runs: 4 }).workerConcurrency).toBe(4);
  });
});
