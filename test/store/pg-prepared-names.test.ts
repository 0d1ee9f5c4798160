/**
 * A statement text sent again goes as a named prepared statement (issue 18, item 6, p-pgprep;
 * src/store/postgres/prepared-names.ts): each connection parses it once, then sends Bind and
 * Execute only, and the server keeps its plan (a generic plan once PostgreSQL's `auto` picks it,
 * as it does for a step's statements that `unnest` arrays). Bounded: a text seen once stays
 * unnamed, and past the bound a new text evicts the least recently used (p-pgprep2). A kept
 * statement whose result columns changed (another node's migration) is closed and parsed again
 * under a new name, the pool's statement sent once more. Counted: Parse messages (a spy on pg's connection), plans and calls
 * (pg_stat_statements), the connection's `pg_prepared_statements`.
 */
import { createRequire } from 'node:module';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { preparedNames } from '../../src/store/postgres/prepared-names';
import { agentApp, echoTool } from '../helpers/agent-harness';
import { reply } from '../helpers/fake-provider';
import { driverStatements, migratedDatabase, postgresForFile } from '../helpers/postgres';

/** A step end's part of a statement: its message updates, or its session usage when it has no message to patch (p-pgnopatch). */
const STEP_END_PART = /UPDATE messages|prompt_tokens = prompt_tokens \+/;

const cluster = postgresForFile({ statements: true });
const Connection = createRequire(import.meta.url)('pg/lib/connection.js') as {
  prototype: { parse(message: { text: string; name?: string }): void };
};

/** A write shaped as a step's end: a CTE over an array parameter (`unnest`), rows answered. */
const STEP_LIKE = `WITH i AS (SELECT id, n FROM unnest($1::text[], $2::int[]) AS i(id, n)),
  u AS (UPDATE items SET n = items.n + i.n FROM i WHERE items.id = i.id RETURNING items.id, items.n)
  SELECT id, n FROM u ORDER BY id`;

async function setUp(poolSize = 1): Promise<{ url: string; db: SqlClient }> {
  const url = await cluster.cluster().createDatabase();
  const db = await createPostgresClient({
    url,
    pool_size: poolSize,
    statement_timeout_ms: 30_000,
    connect_timeout_ms: 5_000,
  });
  await db.run('CREATE TABLE items (id text PRIMARY KEY, n integer NOT NULL)');
  await db.run("INSERT INTO items SELECT 'i' || g, 0 FROM generate_series(1, 50) AS g");
  return { url, db };
}

async function admin(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

describe.skipIf(!cluster.available)('named prepared statements on PostgreSQL', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-330: a statement text sent again, on the pool or in a transaction, is parsed once a connection', async () => {
    const { db } = await setUp();
    closers.push(() => db.close());
    const parse = vi.spyOn(Connection.prototype, 'parse');
    const calls = 10;
    for (let n = 0; n < calls; n++) {
      const rows = await db.query<{ id: string; n: number }>(STEP_LIKE, [
        ['i1', 'i2'],
        [1, 2],
      ]);
      expect(rows).toEqual([
        { id: 'i1', n: n + 1 },
        { id: 'i2', n: 2 * (n + 1) },
      ]);
      await db.transaction(async (tx) => {
        expect(await tx.one('SELECT n FROM items WHERE id = $1', ['i3'])).toEqual({ n: 0 });
      });
    }
    const parsed = (text: string) => parse.mock.calls.filter(([message]) => message.text === text);
    // The first send unnamed, the second parsed under its name, the rest Bind and Execute alone
    // (c3f2aba: a Parse for each of the ten).
    expect(parsed(STEP_LIKE)).toHaveLength(2);
    expect(parsed(STEP_LIKE)[0][0].name ?? '').toBe('');
    expect(parsed(STEP_LIKE)[1][0].name).toMatch(/^svc_p\d+$/);
    expect(parsed('SELECT n FROM items WHERE id = $1')).toHaveLength(2);
  });

  it('STORE-PG-331: a step-shaped write over arrays is planned a few times a connection, not on every call', async () => {
    const { url, db } = await setUp();
    // A connection opened after the setting below counts its plans: the set-up's pool ends first.
    await db.close();
    const stats = await admin(url);
    closers.push(() => stats.end());
    await stats.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const database = new URL(url).pathname.slice(1);
    await stats.query(`ALTER DATABASE ${database} SET pg_stat_statements.track_planning = on`);
    const fresh = await createPostgresClient({
      url,
      pool_size: 1,
      statement_timeout_ms: 30_000,
      connect_timeout_ms: 5_000,
    });
    closers.push(() => fresh.close());
    await stats.query('SELECT pg_stat_statements_reset()');
    const calls = 20;
    for (let n = 0; n < calls; n++)
      await fresh.query(STEP_LIKE, [
        ['i1', 'i2', 'i3'],
        [1, 1, 1],
      ]);
    const { rows } = await stats.query<{ calls: string; plans: string }>(
      `SELECT calls, plans FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND query LIKE 'WITH i AS (SELECT id, n FROM unnest%'`,
    );
    expect(rows).toHaveLength(1);
    expect(Number(rows[0].calls)).toBe(calls);
    // Unnamed once, five custom plans, then the generic one kept (c3f2aba: one plan a call).
    expect(Number(rows[0].plans)).toBeLessThanOrEqual(8);
  });

  it('STORE-PG-332: a kept statement whose columns changed under it answers the new columns on the pool, and in a transaction', async () => {
    const { url, db } = await setUp();
    closers.push(() => db.close());
    const other = await admin(url);
    closers.push(() => other.end());
    const text = 'SELECT * FROM items WHERE id = $1';
    expect(await db.one(text, ['i1'])).toEqual({ id: 'i1', n: 0 });
    expect(await db.one(text, ['i1'])).toEqual({ id: 'i1', n: 0 }); // now named and kept
    const kept = async () =>
      (
        await db.query<{ name: string }>('SELECT name FROM pg_prepared_statements WHERE statement = $1', [
          text,
        ])
      ).map((row) => row.name);
    const [name] = await kept();
    expect(name).toMatch(/^svc_p\d+$/);
    // Another node's migration: the kept plan's result columns change.
    await other.query('ALTER TABLE items ADD COLUMN extra integer DEFAULT 7');
    expect(await db.one(text, ['i1'])).toEqual({ id: 'i1', n: 0, extra: 7 });
    expect(await db.one(text, ['i2'])).toEqual({ id: 'i2', n: 0, extra: 7 });
    // The retired statement closed on the connection, the text kept under a new name.
    const now = await kept();
    expect(now).toHaveLength(1);
    expect(now[0]).not.toBe(name);
    await other.query('ALTER TABLE items DROP COLUMN extra');
    // A transaction's statement: its transaction replayed (p-pgprep2, pg-prepared-lru.test.ts).
    expect(await db.transaction((tx) => tx.one(text, ['i1']))).toEqual({ id: 'i1', n: 0 });
    expect(await db.transaction((tx) => tx.one(text, ['i1']))).toEqual({ id: 'i1', n: 0 });
  });

  it('STORE-PG-334: an agent run`s step statements are parsed a few times a connection, not at every step', async () => {
    const sql = await migratedDatabase(cluster.cluster()); // 4 connections
    const steps = 12;
    const { app } = await agentApp(
      [
        ...Array.from({ length: steps }, (_, n) =>
          reply()
            .toolCall('echo', { text: `hi ${n}` })
            .usage(100, 20),
        ),
        reply().text('done').usage(130, 10),
      ],
      { extraTools: [echoTool], postgres: sql },
    );
    const driver = driverStatements();
    const parse = vi.spyOn(Connection.prototype, 'parse');
    try {
      const session = await app.sessions.create({ title: 'prepared' });
      const { run_id } = await app.agent.send({ sessionId: session.id, prompt: 'go' });
      expect((await app.agent.wait(run_id)).status).toBe('completed');
      await app.bus.flush();
      const sent = (match: (text: string) => boolean) => driver.sent.filter(match).length;
      const parsed = (match: (text: string) => boolean) =>
        parse.mock.calls.filter(([message]) => match(message.text)).length;
      // The step's statements: its messages' INSERTs (the assistant's with its `tool.started` and
      // the model call riding, p-pgride), its end.
      const kinds = {
        message: (text: string) =>
          /^WITH s AS \(UPDATE sessions/.test(text) && /INSERT INTO messages/.test(text),
        riding: (text: string) => /INSERT INTO messages/.test(text) && /INSERT INTO model_calls/.test(text),
        end: (text: string) => STEP_END_PART.test(text) && /UPDATE agent_runs/.test(text),
      };
      for (const [kind, match] of Object.entries(kinds)) {
        expect(sent(match), kind).toBeGreaterThanOrEqual(steps);
        // Once unnamed, then once on each connection that sends it (c3f2aba: at every send).
        expect(parsed(match), kind).toBeLessThanOrEqual(1 + 4 * new Set(driver.sent.filter(match)).size);
        expect(parsed(match), kind).toBeLessThan(sent(match) / 2);
      }
    } finally {
      driver.restore();
      await app.close();
      await sql.close();
    }
  });

  it('STORE-PG-333: a text seen once is not named, and past the bound a new text evicts the least recently used', () => {
    const names = preparedNames(2);
    expect(names.nameOf('a')).toBeUndefined();
    const a = names.nameOf('a');
    expect(a).toMatch(/^svc_p\d+$/);
    expect(names.nameOf('a')).toBe(a);
    for (let n = 0; n < 5; n++) expect(names.nameOf(`once ${n}`)).toBeUndefined();
    names.nameOf('b');
    const b = names.nameOf('b');
    expect(b).toBeDefined();
    expect(b).not.toBe(a);
    names.nameOf('c');
    const c = names.nameOf('c'); // two named: the bound; a, used first, evicted (p-pgprep2)
    expect(c).toMatch(/^svc_p\d+$/);
    expect(names.isKept(a as string)).toBe(false);
    expect(names.isKept(b as string)).toBe(true);
    names.retire(b as string);
    expect(names.nameOf('b')).toBeUndefined(); // seen again from the start
    const again = names.nameOf('b');
    expect(again).toBeDefined();
    expect(again).not.toBe(b);
  });
});
