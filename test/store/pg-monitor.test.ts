/**
 * The store monitor (issue 18: a node that loses the database answers 503 with the reason and
 * recovers by itself), on a real PostgreSQL reached through a TCP proxy the test can cut:
 * ok while the database answers; not ok, with a reason naming host and port, once it cannot be
 * reached; ok again, by itself, when it returns.
 */
import { describe, expect, it } from 'vitest';
import { createStoreMonitor } from '../../src/store/postgres/monitor';
import { postgresForFile } from '../helpers/postgres';
import { proxiedDatabase, until } from '../helpers/tcp-proxy';

const pg = postgresForFile();

describe.skipIf(!pg.available)('PostgreSQL store monitor', () => {
  it('STORE-PG-19: the monitor reports the store lost with the reason, and recovered by itself', async () => {
    const cluster = pg.cluster();
    const { sql, tunnel } = await proxiedDatabase(cluster);
    const changes: boolean[] = [];
    const monitor = createStoreMonitor(sql, { intervalMs: 50, onChange: (s) => changes.push(s.ok) });
    try {
      await until(() => monitor.status().schema_version !== undefined, 'the first probe');
      expect(monitor.status()).toMatchObject({ ok: true, schema_version: expect.any(Number) });
      await tunnel.down();
      await until(() => !monitor.status().ok, 'the store to be reported lost');
      expect(monitor.status().reason).toMatch(new RegExp(`127\\.0\\.0\\.1:${tunnel.port()}`));
      expect(monitor.status().reason).not.toMatch(/\n\s+at /);
      await tunnel.up();
      await until(() => monitor.status().ok, 'the store to be reported back');
      expect(changes).toEqual([false, true]);
      // Statements work again on the same pool.
      expect(await sql.one<{ one: number }>('SELECT 1 AS one')).toEqual({ one: 1 });
    } finally {
      monitor.stop();
      await tunnel.down();
      await sql.close();
    }
  });
});
