/**
 * A lone warm compat request on PostgreSQL (issue 18 item 6, p-pgconn): its start's transaction and
 * its finish's statement run on the connection the client keeps between uses
 * (src/store/postgres/kept-connection.ts), with no pg-pool checkout and no `error` listener added
 * to a pg client; each took a checkout before (its connect-timeout and idle timers, pg-pool's
 * listeners). Counted over the request, never timed.
 */
import { describe, expect, it } from 'vitest';
import { poolCountsOf } from '../helpers/pg-pool-counts';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';
import { settledCompatRow, warmedJsonCompat } from './compat-helpers';

const pg = postgresForFile();

describe.skipIf(!pg.available)('a lone compat request on PostgreSQL: the kept connection', () => {
  it('STORE-PG-874: a warm request one at a time takes no pg-pool checkout and adds no `error` listener to a pg client (was 2 and 4: the start’s transaction, the finish’s statement); the answer whole and the row completed', async () => {
    const sql = await migratedDatabase(pg.cluster());
    try {
      const { app, ask } = await warmedJsonCompat(sql, ['one', 'two', 'three']);
      const checkouts: number[] = [];
      const listeners: number[] = [];
      const texts: string[] = [];
      for (let i = 0; i < 3; i++) {
        const counts = await poolCountsOf(async () => {
          texts.push((await ask()).choices[0]?.message.content ?? '');
        });
        checkouts.push(counts.checkouts);
        listeners.push(counts.errorListeners);
        await settledCompatRow(app);
        await app.bus.flush();
      }
      expect(texts).toEqual(['one', 'two', 'three']);
      expect(Math.min(...checkouts)).toBe(0);
      expect(Math.min(...listeners)).toBe(0);
      const rows = await sql.query<{ status: string }>(
        'SELECT status FROM openai_compat_requests ORDER BY created_at',
      );
      expect(rows.map((row) => row.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
      await app.close();
    } finally {
      await sql.close();
    }
  });
});
