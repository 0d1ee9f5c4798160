/**
 * A node that loses its PostgreSQL store (issue 18): `/healthz` answers 503 with the reason and
 * every protected route answers 503 naming it, at once; when the database returns the node serves
 * again by itself. The database is reached through a TCP proxy the test takes down and brings back.
 */
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/surfaces/http/index';
import { makeTestApp } from '../helpers/make-test-app';
import { postgresForFile } from '../helpers/postgres';
import { proxiedDatabase, until } from '../helpers/tcp-proxy';

const pg = postgresForFile();

describe.skipIf(!pg.available)('a node that loses its PostgreSQL store', () => {
  it('STORE-PG-40: /healthz and protected routes answer 503 with the reason, and the node recovers by itself', async () => {
    const cluster = pg.cluster();
    const { sql, tunnel } = await proxiedDatabase(cluster);
    try {
      const app = await makeTestApp({ postgres: sql });
      const http = createHttpApp(app, { allowNoAuth: true });
      const health = async () => {
        const response = await http.request('/healthz');
        return { status: response.status, body: (await response.json()) as any };
      };
      await until(async () => (await health()).body.store.schema_version !== undefined, 'the first probe');
      expect(await health()).toMatchObject({
        status: 200,
        body: { ok: true, ready: true, store: { kind: 'postgres', ok: true } },
      });
      expect((await http.request('/v1/models')).status).toBe(200);

      await tunnel.down();
      await until(async () => (await health()).status === 503, 'the node to report the store lost');
      const down = await health();
      expect(down.body).toMatchObject({ ready: false, store: { kind: 'postgres', ok: false } });
      expect(down.body.reason).toMatch(
        /PostgreSQL store is unreachable: cannot reach PostgreSQL at 127\.0\.0\.1/,
      );
      expect(down.body.reason).not.toContain(' at async ');
      const refused = await http.request('/v1/models');
      expect(refused.status).toBe(503);
      expect(JSON.stringify(await refused.json())).toMatch(/PostgreSQL store is unreachable/);

      await tunnel.up();
      await until(async () => (await health()).status === 200, 'the node to serve again');
      expect((await http.request('/v1/models')).status).toBe(200);
    } finally {
      await tunnel.down();
      await sql.close();
    }
  });
});
