/**
 * A statement's rows built by svc's client, not by pg's `Result` (issue 18, item 6;
 * src/store/postgres/row-shapes.ts): the same rows as pg's own (values, parsers, NULLs, key order,
 * a column named twice), the columns' type parsers looked up once per statement text, pg's
 * `addFields` and `parseRow` not run for svc's statements, and a statement whose columns change
 * (a table altered) answered with its new columns. Counted with spies, no timing.
 */
import { createRequire } from 'node:module';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { postgresForFile } from '../helpers/postgres';

const cluster = postgresForFile();
const Result = createRequire(import.meta.url)('pg/lib/result.js') as {
  prototype: { addFields(fields: unknown[]): void; parseRow(row: unknown[]): unknown };
};

const WIDE = `SELECT id, n, big, ratio, flag, at, doc, tags, note, id AS again, 'x' AS id
  FROM shapes WHERE id = ANY($1::text[]) ORDER BY n`;

async function setUp(): Promise<{ url: string; db: SqlClient }> {
  const url = await cluster.cluster().createDatabase();
  const db = await createPostgresClient({
    url,
    pool_size: 2,
    statement_timeout_ms: 30_000,
    connect_timeout_ms: 5_000,
  });
  await db.run(`CREATE TABLE shapes (id text PRIMARY KEY, n integer NOT NULL, big bigint, ratio numeric,
    flag boolean, at timestamptz, doc jsonb, tags text[], note varchar(20))`);
  await db.run(`INSERT INTO shapes VALUES
    ('a', 1, 9007199254740991, 1.5, true, '2026-11-30T12:00:00Z', '{"k":[1,2]}', '{x,y}', 'hello'),
    ('b', 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`);
  return { url, db };
}

/** The rows pg's own `Result` builds for `text`, through a bare Client with svc's BIGINT/NUMERIC parsing. */
async function pgRows(url: string, text: string, params: unknown[]): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  client.setTypeParser(20, Number);
  client.setTypeParser(1700, Number);
  await client.connect();
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end();
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe.skipIf(!cluster.available)('PostgreSQL client: rows built per statement shape', () => {
  it('STORE-PG-200: the same rows as pg builds, parsers looked up once per statement text, no pg Result rows', async () => {
    const { url, db } = await setUp();
    try {
      const expected = await pgRows(url, WIDE, [['a', 'b']]);
      const addFields = vi.spyOn(Result.prototype, 'addFields');
      const parseRow = vi.spyOn(Result.prototype, 'parseRow');
      const lookups = vi.spyOn(pg.types, 'getTypeParser');
      for (let i = 0; i < 4; i++) {
        const rows = await db.query(WIDE, [['a', 'b']]);
        expect(rows).toEqual(expected);
        // Same keys in the same order (a column named twice keeps its first place, its last value).
        expect(rows.map((row) => Object.keys(row))).toEqual(expected.map((row) => Object.keys(row)));
        expect(rows[0].id).toBe('x');
        expect(rows[0].big).toBe(9007199254740991);
        expect(rows[0].doc).toEqual({ k: [1, 2] });
        expect(rows[1].ratio).toBeNull();
      }
      // Inside a transaction (its own connection) too.
      await db.transaction(async (tx) => {
        expect(await tx.query(WIDE, [['a', 'b']])).toEqual(expected);
      });
      expect(addFields).not.toHaveBeenCalled();
      expect(parseRow).not.toHaveBeenCalled();
      // 11 columns, BIGINT and NUMERIC parsed by svc's own function: 9 lookups in pg-types, once.
      expect(lookups.mock.calls.length).toBeLessThanOrEqual(11);
      expect(lookups.mock.calls.length).toBeGreaterThan(0);
    } finally {
      await db.close();
    }
  });

  it('STORE-PG-201: a statement whose columns change answers its new columns; a column named __proto__ goes through pg', async () => {
    const { url, db } = await setUp();
    try {
      const addFields = vi.spyOn(Result.prototype, 'addFields');
      const star = 'SELECT * FROM shapes WHERE id = $1';
      const before = await db.one(star, ['a']);
      expect(Object.keys(before ?? {})).not.toContain('extra');
      await db.run('ALTER TABLE shapes ADD COLUMN extra integer DEFAULT 7');
      const after = await db.one(star, ['a']);
      const addedByPg = addFields.mock.calls.length;
      expect(after).toEqual(await pgRows(url, star, ['a']).then((rows) => rows[0]));
      addFields.mockClear();
      expect(addedByPg).toBe(0);
      expect(after?.extra).toBe(7);
      await db.run('ALTER TABLE shapes ALTER COLUMN extra TYPE text');
      expect((await db.one(star, ['a']))?.extra).toBe('7');
      expect(addFields).not.toHaveBeenCalled();
      // pg's own path for a name an object literal cannot hold as an own key.
      const odd = await db.one<Record<string, unknown>>('SELECT 1 AS "__proto__", 2 AS two');
      expect(addFields).toHaveBeenCalledTimes(1);
      expect(Object.keys(odd ?? {})).toEqual(['__proto__', 'two']);
      expect(odd).toEqual(await pgRows(url, 'SELECT 1 AS "__proto__", 2 AS two', []).then((rows) => rows[0]));
      expect(odd?.two).toBe(2);
    } finally {
      await db.close();
    }
  });
});
