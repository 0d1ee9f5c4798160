/**
 * A new compat session's `updated_at` after its start (issue 18 item 6, p-pgstart3): on SQLite the
 * prompt's append sets it to the prompt message's time; on PostgreSQL the session's held INSERT
 * and the prompt ride in one statement (p-pgstart2), and the INSERT takes the prompt's time: the
 * row reads the same on both.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pgDriver from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { reply } from '../helpers/fake-provider';
import type { TestClock } from '../helpers/make-test-app';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';
import { type CompatServer, compatServer } from './compat-helpers';

const pg = postgresForFile();

/** A clock one ms later at each read: every write of the start gets its own time. */
function tickingClock(start = Date.UTC(2026, 10, 22, 12, 0, 0)): TestClock {
  let now = start;
  return {
    now: () => ++now,
    advance: (ms) => {
      now += ms;
    },
    set: (ms) => {
      now = ms;
    },
  };
}

/**
 * Every COMMIT the driver is asked to send goes out `ms` later (a loaded box's late COMMIT, made
 * sure): a first start's model request leaves before its transaction is visible to another
 * connection. Returns the undo.
 */
function lateCommits(ms: number): () => void {
  const prototype = pgDriver.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = prototype.query;
  prototype.query = function query(this: unknown, config: unknown, ...rest: unknown[]) {
    const text = typeof config === 'string' ? config : (config as { text?: string }).text;
    if (text !== 'COMMIT') return original.call(this, config, ...rest);
    const send = () => original.call(this, config, ...rest);
    if (typeof rest.at(-1) === 'function') {
      setTimeout(send, ms);
      return undefined;
    }
    return sleep(ms).then(send);
  };
  return () => {
    prototype.query = original;
  };
}

/** The model's answer to the start, held until `release()` (its role chunk: nothing of it reaches svc). */
function heldAnswer() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { script: [reply().pauseAt(0, released).text('one')], release };
}

/**
 * The session's row and its prompt message once the start is done: read while the model's answer
 * is held (nothing after the start has written the session yet), then the answer released.
 * The model request is not the start's end: a first request's start on PostgreSQL is a
 * transaction (the start-up's recovery reads in it, not the lone statement) whose run sends the
 * model request while the COMMIT is on its way, so the read waits for the row to be visible (under
 * load the list came back empty after the provider saw the request; p-flake2).
 */
async function startTimes<T>(
  server: CompatServer,
  release: () => void,
  stored?: (sessionId: string) => Promise<T>,
) {
  const { app, post, provider } = server;
  const answering = post('/v1/chat/completions', {
    model: 'fake/m1',
    messages: [{ role: 'user', content: 'hello' }],
  });
  for (let i = 0; i < 200 && provider.requests.length === 0; i++) await sleep(25);
  expect(provider.requests).toHaveLength(1);
  const session = await vi.waitFor(
    async () => {
      const [listed] = await app.sessions.list({ limit: 1 });
      if (!listed) throw new Error('the start has not committed yet');
      return listed;
    },
    { timeout: 10_000, interval: 20 },
  );
  const [prompt] = await app.sessions.messages(session.id);
  expect(prompt?.role).toBe('user');
  const row = await stored?.(session.id);
  release();
  const answer = await answering;
  expect(answer.status).toBe(200);
  await answer.json();
  return { session, prompt: prompt!, row };
}

describe('a new compat session’s updated_at after its start', () => {
  it('STORE-PG-311 (SQLite): the session’s updated_at is its prompt message’s created_at, later than its own created_at', async () => {
    const held = heldAnswer();
    const server = await compatServer(held.script, { clock: tickingClock() });
    const { session, prompt } = await startTimes(server, held.release);
    expect(session.updated_at).toBeGreaterThan(session.created_at);
    expect(session.updated_at).toBe(prompt.created_at);
  });

  /** STORE-PG-311's PostgreSQL run; `lateCommitMs`: every COMMIT sent that much later (`lateCommits`). */
  const onPostgres = async (lateCommitMs?: number) => {
    const sql = await migratedDatabase(pg.cluster());
    const held = heldAnswer();
    const server = await compatServer(held.script, {
      postgres: sql,
      clock: tickingClock(),
    });
    const { app } = server;
    const restore = lateCommitMs === undefined ? () => {} : lateCommits(lateCommitMs);
    try {
      // The row as stored, not a copy held in memory.
      const { session, prompt, row } = await startTimes(server, held.release, async (id) => {
        const [stored] = await sql.query<{ created_at: string; updated_at: string }>(
          'SELECT created_at, updated_at FROM sessions WHERE id = $1',
          [id],
        );
        return { created_at: Number(stored!.created_at), updated_at: Number(stored!.updated_at) };
      });
      expect(session.updated_at).toBeGreaterThan(session.created_at);
      expect(session.updated_at).toBe(prompt.created_at);
      expect(row).toEqual({ created_at: session.created_at, updated_at: prompt.created_at });
    } finally {
      restore();
      await app.close();
      await sql.close();
    }
  };

  it.skipIf(!pg.available)(
    'STORE-PG-311: on PostgreSQL the start’s one statement gives the session the same updated_at: its prompt message’s created_at',
    () => onPostgres(),
  );

  it.skipIf(!pg.available)(
    'STORE-PG-860: the same with every COMMIT reaching the server 300 ms late (a loaded box): the start is read once committed, not at its model request (p-flake2)',
    () => onPostgres(300),
  );
});
