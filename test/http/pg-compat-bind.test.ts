/**
 * A lone warm compat request on PostgreSQL (issue 18 item 6, p-pgvalue): its statements' Bind
 * messages (the start's and the finish's ≈ 90 parameters each, 21 arrays in all: the session and
 * run events as `text[]` / `bigint[]` columns) are written by svc (src/store/postgres/bind-message.ts),
 * so pg's own bind is not called and its `prepareValue` is given no array. Counted, never timed.
 */
import { describe, expect, it } from 'vitest';
import { type BindCounts, bindCountsOf } from '../helpers/pg-bind-counts';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';
import { settledCompatRow, warmedJsonCompat } from './compat-helpers';

const pg = postgresForFile();

describe.skipIf(!pg.available)('a lone compat request on PostgreSQL: Bind messages', () => {
  it('STORE-PG-904: a warm request’s statements call pg’s own bind for none (was each) and give its `prepareValue` no array (were 21); the answers whole and every row completed', async () => {
    const sql = await migratedDatabase(pg.cluster());
    try {
      const { app, ask } = await warmedJsonCompat(sql, ['one', 'two']);
      const texts: string[] = [];
      const counts: BindCounts[] = [];
      for (let i = 0; i < 2; i++) {
        counts.push(
          await bindCountsOf(async () => {
            texts.push((await ask()).choices[0]?.message.content ?? '');
            await settledCompatRow(app);
            await app.bus.flush();
          }),
        );
      }
      expect(texts).toEqual(['one', 'two']);
      for (const count of counts) {
        expect(count).toEqual({ pgBinds: 0, arrays: 0 });
      }
      const rows = await sql.query<{ status: string }>(
        'SELECT status FROM openai_compat_requests ORDER BY created_at',
      );
      expect(rows.map((row) => row.status)).toEqual(['completed', 'completed', 'completed']);
      await app.close();
    } finally {
      await sql.close();
    }
  });
});
