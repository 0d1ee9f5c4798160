/**
 * Named prepared statements made robust (issue 18, items 4 and 6, p-pgprep2;
 * src/store/postgres/prepared-names.ts, stale-replay.ts). Pinned here, on a real PostgreSQL:
 * - a transaction whose statement meets a stale plan (another node's migration changed a `*`
 *   result) succeeds: its statements are replayed, the body is not re-run, its writes stand once;
 * - a replay whose earlier statement answers differently fails as before and leaves nothing;
 * - a statement sent alone (`SqlClient.alone`) that meets a stale plan is sent once more;
 * - the names are bounded by use: past the bound the least recently used text is evicted and its
 *   statement closed on the connection (`pg_prepared_statements`), a text used again is prepared
 *   again, and the connection never holds more than the bound;
 * - after a stale plan no statement named before it stays on the connection.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { SqlClient } from '../../src/store/postgres/client';
import { MAX_NAMED, preparedNames } from '../../src/store/postgres/prepared-names';
import { openClient } from '../helpers/pg-bus-node';
import { postgresForFile } from '../helpers/postgres';

const cluster = postgresForFile();
const STAR = 'SELECT * FROM items WHERE id = $1';

async function setUp(): Promise<{ url: string; db: SqlClient }> {
  const url = await cluster.cluster().createDatabase();
  // One connection: what it holds is what `pg_prepared_statements` shows to its own statements.
  const db = await openClient(url, 1);
  await db.run('CREATE TABLE items (id text PRIMARY KEY, n integer NOT NULL)');
  await db.run("INSERT INTO items SELECT 'i' || g, 0 FROM generate_series(1, 5) AS g");
  return { url, db };
}

async function admin(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

/** The names the pool's one connection holds, by statement text. */
async function held(db: SqlClient): Promise<Map<string, string>> {
  const rows = await db.query<{ name: string; statement: string }>(
    "SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'svc_p%'",
  );
  return new Map(rows.map((row) => [row.statement, row.name]));
}

describe.skipIf(!cluster.available)('named prepared statements, bounded and replayed, on PostgreSQL', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('STORE-PG-370: a transaction whose statement meets a stale plan succeeds, its body run once and its writes in once', async () => {
    const { url, db } = await setUp();
    closers.push(() => db.close());
    const other = await admin(url);
    closers.push(() => other.end());
    const bump = 'UPDATE items SET n = n + 1 WHERE id = $1 RETURNING n';
    for (let n = 0; n < 2; n++) await db.one(STAR, ['i1']); // named and kept on the connection
    const before = (await held(db)).get(STAR);
    expect(before).toMatch(/^svc_p\d+$/);
    // Another node's migration: the kept plan's result columns change.
    await other.query('ALTER TABLE items ADD COLUMN extra integer DEFAULT 7');
    let bodies = 0;
    const answer = await db.transaction(async (tx) => {
      bodies++;
      const bumped = await tx.one<{ n: number }>(bump, ['i2']);
      const row = await tx.one(STAR, ['i1']);
      return { bumped, row };
    });
    expect(answer).toEqual({ bumped: { n: 1 }, row: { id: 'i1', n: 0, extra: 7 } });
    expect(bodies).toBe(1);
    // The bump went in once (replayed after the ROLLBACK, not twice).
    expect(await db.one(STAR, ['i2'])).toEqual({ id: 'i2', n: 1, extra: 7 });
    // No statement named before the migration is left on the connection.
    expect([...(await held(db)).values()]).not.toContain(before);
    // A nested savepoint's statements replay too.
    for (let n = 0; n < 2; n++) await db.one(STAR, ['i1']);
    await other.query('ALTER TABLE items DROP COLUMN extra');
    const nested = await db.transaction(async (tx) => {
      await tx.run(bump, ['i3']);
      return await db.transaction(async (inner) => await inner.one(STAR, ['i3']));
    });
    expect(nested).toEqual({ id: 'i3', n: 1 });
  });

  it('STORE-PG-371: a replay whose earlier statement answers differently fails as before and leaves nothing written', async () => {
    const { url, db } = await setUp();
    closers.push(() => db.close());
    const other = await admin(url);
    closers.push(() => other.end());
    for (let n = 0; n < 2; n++) await db.one(STAR, ['i1']);
    await other.query('ALTER TABLE items ADD COLUMN extra integer DEFAULT 7');
    // Its answer differs at every send: the replayed transaction is not the one the body saw.
    const stamped = 'UPDATE items SET n = n + 1 WHERE id = $1 RETURNING clock_timestamp()::text AS at';
    await expect(
      db.transaction(async (tx) => {
        await tx.one(stamped, ['i2']);
        return await tx.one(STAR, ['i1']);
      }),
    ).rejects.toThrow(/cached plan must not change result type/);
    // A body that catches the failure cannot commit what the server replayed.
    for (let n = 0; n < 2; n++) await db.one(STAR, ['i1']);
    await other.query('ALTER TABLE items DROP COLUMN extra');
    await expect(
      db.transaction(async (tx) => {
        await tx.one(stamped, ['i2']);
        await tx.one(STAR, ['i1']).catch(() => undefined);
        await tx.run(stamped, ['i3']);
      }),
    ).rejects.toThrow(/cached plan must not change result type/);
    expect(await db.query('SELECT id, n FROM items WHERE n <> 0')).toEqual([]);
  });

  it('STORE-PG-372: a statement sent alone that meets a stale plan is sent once more', async () => {
    const { url, db } = await setUp();
    closers.push(() => db.close());
    const other = await admin(url);
    closers.push(() => other.end());
    const alone = db.alone as NonNullable<SqlClient['alone']>;
    for (let n = 0; n < 2; n++) await db.transaction(() => alone.one(STAR, ['i1']));
    expect((await held(db)).get(STAR)).toMatch(/^svc_p\d+$/);
    await other.query('ALTER TABLE items ADD COLUMN extra integer DEFAULT 7');
    expect(await db.transaction(() => alone.one(STAR, ['i1']))).toEqual({ id: 'i1', n: 0, extra: 7 });
  });

  it('STORE-PG-373: past the bound the least recently used text is closed on the connection, and a text used again is prepared again', async () => {
    const { db } = await setUp();
    closers.push(() => db.close());
    const text = (n: number) => `SELECT $1::int + ${n} AS v`;
    const twice = async (n: number) => {
      for (let k = 0; k < 2; k++) expect(await db.one(text(n), [1])).toEqual({ v: n + 1 });
    };
    const extra = 20;
    for (let n = 0; n < MAX_NAMED + extra; n++) {
      await twice(n);
      if (n === MAX_NAMED - 1) await twice(0); // the first text used again: now among the recent
    }
    const kept = await held(db);
    expect(kept.size).toBeLessThanOrEqual(MAX_NAMED);
    // The newest texts are named (d8325a2: past the bound new texts went unnamed) …
    expect(kept.has(text(MAX_NAMED + extra - 1))).toBe(true);
    // … the least recently used were closed on the server, the first one, used again, was not.
    expect(kept.has(text(1))).toBe(false);
    expect(kept.has(text(extra))).toBe(false);
    expect(kept.has(text(0))).toBe(true);
    // An evicted text used again is prepared again under a new name.
    await twice(1);
    const again = await held(db);
    expect(again.get(text(1))).toMatch(/^svc_p\d+$/);
    expect(again.size).toBeLessThanOrEqual(MAX_NAMED);
  });

  it('STORE-PG-374: names are evicted least recently used first, and a stale plan retires every name', () => {
    const names = preparedNames(2);
    const name = (text: string) => names.nameOf(text) ?? names.nameOf(text);
    const a = name('a');
    const b = name('b');
    expect(names.nameOf('a')).toBe(a); // a used after b: b is the least recently used now
    const c = name('c');
    expect(c).toMatch(/^svc_p\d+$/);
    expect(names.isKept(a as string)).toBe(true);
    expect(names.isKept(b as string)).toBe(false);
    expect(names.nameOf('b')).toBeUndefined(); // evicted: seen again from the start
    names.retire(a as string);
    expect(names.isKept(a as string)).toBe(false);
    expect(names.isKept(c as string)).toBe(false);
    // A second failure of the same change retires nothing named since.
    const fresh = name('c');
    names.retire(a as string);
    expect(names.isKept(fresh as string)).toBe(true);
  });
});
