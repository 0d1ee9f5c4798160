/**
 * A node that loses its PostgreSQL store (issue 18): `/healthz` answers 503 with the reason and
 * every protected route answers 503 naming it, at once; when the database returns the node serves
 * again by itself. The database is reached through a TCP proxy the test takes down and brings back.
 */
import { describe, expect, it } from 'vitest';
import { createPostgresClient } from '../../src/store/postgres/client';
import { migratePostgres } from '../../src/store/postgres/migrate';
import { createHttpApp } from '../../src/surfaces/http/index';
import { makeTestApp } from '../helpers/make-test-app';
import { postgresForFile } from '../helpers/postgres';
import { tcpProxy } from '../helpers/tcp-proxy';

const pg = postgresForFile();

async function until(probe: () => Promise<boolean>, what: string) {
  const deadline = Date.now() + 15_000;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(!pg.available)('a node that loses its PostgreSQL store', () => {
  it('STORE-PG-40: /healthz and protected routes answer 503 with the reason, and the node recovers by itself', async () => {
    const cluster = pg.cluster();
    const direct = await cluster.createDatabase();
    const tunnel = await tcpProxy(cluster.port);
    const url = direct.replace(`:${cluster.port}/`, `:${tunnel.port()}/`);
    const sql = await createPostgresClient({
      url,
      pool_size: 2,
      statement_timeout_ms: 5_000,
      connect_timeout_ms: 1_000,
    });
    await migratePostgres(sql);
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
