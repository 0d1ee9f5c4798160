/**
 * A statement's Bind message written by svc (issue 18 item 6, p-pgvalue,
 * src/store/postgres/bind-message.ts): pg's own bind is not called (pg-protocol's writer: a
 * `Buffer.byteLength` and a `buffer.write` a parameter) and its `prepareValue` is given no array,
 * and the server reads back exactly the values sent, quotes, backslashes, control characters and
 * surrogates included; a value svc does not write still goes by pg's bind. Counted, never timed.
 */
import { describe, expect, it } from 'vitest';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { bindCountsOf } from '../helpers/pg-bind-counts';
import { postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

const TEXTS = [
  '',
  'NULL',
  'say "hi"',
  'back\\slash \\"',
  JSON.stringify({ text: 'a "quoted" \\ word\nnext', list: [1, 'two'] }),
  'line\nbreak\ttab\r',
  '{a,b}',
  'emoji 😀, é 中文',
  '\u2028',
  `${'long é '.repeat(40)}😀`,
];

async function clientOf(): Promise<SqlClient> {
  return await createPostgresClient({
    url: await pg.cluster().createDatabase(),
    pool_size: 2,
    statement_timeout_ms: 30_000,
    connect_timeout_ms: 5_000,
  });
}

type Row = {
  texts: (string | null)[];
  numbers: string[];
  empty: string[];
  payloads: unknown[];
  one: string;
  n: string;
  b: boolean;
  none: null;
};

describe.skipIf(!pg.available)('PostgreSQL client: a statement’s Bind message', () => {
  it('STORE-PG-902: strings, numbers, bigints, booleans, nulls and `text[]`, `bigint[]` arrays go in svc’s Bind (pg’s bind not called, its `prepareValue` given no array: were one a statement and one an array), twice (the statement named the second time), and the server reads back the very values', async () => {
    const db = await clientOf();
    try {
      const texts = [...TEXTS, null];
      const numbers = [1733300000000, -1, 0, 9007199254740991];
      const payloads = [JSON.stringify({ a: 'x"y\\z', b: [1, null] }), JSON.stringify('line\nbreak')];
      const rows: (Row | undefined)[] = [];
      const counts = await bindCountsOf(async () => {
        for (let i = 0; i < 2; i++)
          rows.push(
            await db.one<Row>(
              `SELECT $1::text[] AS texts, $2::bigint[] AS numbers, $3::text[] AS empty,
                      (SELECT array_agg(p::jsonb ORDER BY o) FROM unnest($4::text[]) WITH ORDINALITY AS u(p, o)) AS payloads,
                      $5::text AS one, $6::bigint::text AS n, $7::boolean AS b, $8::text AS none`,
              [texts, numbers, [], payloads, TEXTS[7], -269740946200075959n, true, null],
            ),
          );
      });
      expect(counts).toEqual({ pgBinds: 0, arrays: 0 });
      for (const row of rows) {
        expect(row?.texts).toEqual(texts);
        expect(row?.numbers.map(Number)).toEqual(numbers);
        expect(row?.empty).toEqual([]);
        expect(row?.payloads).toEqual(payloads.map((p) => JSON.parse(p)));
        expect(row).toMatchObject({ one: TEXTS[7], n: '-269740946200075959', b: true, none: null });
      }
    } finally {
      await db.close();
    }
  });

  it('STORE-PG-903: a Date, an object (jsonb) and an array of Dates still go by pg’s bind, and read back as before', async () => {
    const db = await clientOf();
    try {
      const at = new Date('2026-12-04T10:00:00.123Z');
      let row: { at: Date; doc: unknown; ats: Date[] } | undefined;
      const counts = await bindCountsOf(async () => {
        row = await db.one('SELECT $1::timestamptz AS at, $2::jsonb AS doc, $3::timestamptz[] AS ats', [
          at,
          { a: 'x"y', n: [1, 2] },
          [at, at],
        ]);
      });
      expect(counts.pgBinds).toBe(1);
      expect(row?.at.getTime()).toBe(at.getTime());
      expect(row?.doc).toEqual({ a: 'x"y', n: [1, 2] });
      expect(row?.ats.map((d) => d.getTime())).toEqual([at.getTime(), at.getTime()]);
    } finally {
      await db.close();
    }
  });
});
