/**
 * A2A and deployments served from PostgreSQL (issue 18): two svc HTTP servers, each on its own
 * PostgreSQL database, delegate to each other. Pins: the delegated task is tracked in `a2a_tasks`
 * and the fetched card in `a2a_cards` of the caller's database, the served task in
 * `a2a_served_tasks` of the callee's; a tracked task is checked again and deleted; deploy_agent
 * lists from `deployments`; neither App opens svc.db.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/app';
import type { SqlClient } from '../../src/store/postgres/client';
import { startHttpServer } from '../../src/surfaces/http/server';
import { invokeTool } from '../../src/tools/core/call-tool';
import { fakeProvider, reply, type ScriptEntry } from '../helpers/fake-provider';
import { makeTestApp } from '../helpers/make-test-app';
import { migratedDatabase, postgresForFile } from '../helpers/postgres';

const pg = postgresForFile();

interface Peer {
  app: App;
  sql: SqlClient;
  url: string;
  token: string;
  config: Record<string, unknown>;
}

async function peer(name: string, script: ScriptEntry[]): Promise<Peer> {
  const sql = await migratedDatabase(pg.cluster());
  const provider = await fakeProvider(script);
  const token = `token-${name}-0123456789`;
  const config: Record<string, unknown> = {
    providers: { fake: { type: 'openai-compat', base_url: provider.url } },
    models: { large: 'fake/m1' },
    services: { http: { token } },
    a2a: { enabled: true, name: `svc-${name}` },
  };
  const app = await makeTestApp({ config, ready: false, postgres: sql });
  const server = await startHttpServer({
    config: app.config,
    flags: { host: '127.0.0.1', port: 0 },
    createApp: async () => app,
  });
  return { app, sql, url: server.url, token, config };
}

function knows(from: Peer, name: string, to: Peer) {
  const config = {
    ...from.config,
    a2a: { ...(from.config.a2a as object), remotes: { [name]: { url: to.url, token: to.token } } },
  };
  writeFileSync(join(from.app.workspace, 'svc.toml'), stringify(config));
  from.app.reloadConfig();
}

const call = (app: App, name: string, input: unknown) =>
  invokeTool(app, name, input, { surface: 'cli' }) as Promise<any>;

describe.skipIf(!pg.available)('A2A between two svc servers on PostgreSQL', () => {
  it('STORE-PG-a2a: delegation by name and by card URL, tracked, checked and deleted on PostgreSQL; no svc.db', async () => {
    const a = await peer('a', [reply().text('hi B, A here')]);
    const b = await peer('b', [reply().text('pong from B')]);
    try {
      knows(a, 'b', b);
      knows(b, 'a', a);
      const byName = await call(a.app, 'a2a_delegate', { agent_name: 'b', message: 'ping from A' });
      expect(byName, JSON.stringify(byName)).toMatchObject({
        state: 'completed',
        done: true,
        text: 'pong from B',
        agent: { name: 'svc-b', rpc_url: `${b.url}/a2a` },
        target: { kind: 'name', value: 'b' },
      });
      const tracked = await a.sql.query<{ id: string; state: string }>('SELECT id, state FROM a2a_tasks');
      expect(tracked).toEqual([{ id: byName.task_id, state: 'completed' }]);
      expect(await a.sql.query('SELECT name, source FROM a2a_cards')).toEqual([
        { name: 'svc-b', source: 'remote:b' },
      ]);
      const served = await b.sql.query<{ task_id: string; session_id: string }>(
        'SELECT task_id, session_id FROM a2a_served_tasks',
      );
      expect(served).toHaveLength(1);
      expect(served[0].task_id).toBe(byName.remote_task_id);
      expect(await b.app.sessions.get(served[0].session_id)).toBeDefined();

      const byUrl = await call(b.app, 'a2a_delegate', {
        card_url: `${a.url}/.well-known/agent-card.json`,
        message: 'hello A',
      });
      expect(byUrl, JSON.stringify(byUrl)).toMatchObject({
        state: 'completed',
        text: 'hi B, A here',
        target: { kind: 'card_url' },
      });

      expect(await a.app.remote.list()).toMatchObject([{ task_id: byName.task_id }]);
      expect(await call(a.app, 'a2a_delegate', { task_id: byName.task_id })).toMatchObject({
        task_id: byName.task_id,
        state: 'completed',
        text: 'pong from B',
      });
      expect(await call(a.app, 'delete_a2a_task', { task_id: byName.task_id })).toEqual({
        task_id: byName.task_id,
        deleted: true,
        cancelled: false,
        state: 'completed',
      });
      expect(await a.sql.query('SELECT id FROM a2a_tasks')).toEqual([]);
      await expect(call(a.app, 'a2a_delegate', { task_id: byName.task_id })).rejects.toThrow(
        /no tracked A2A task/,
      );

      expect(await call(a.app, 'deploy_agent', { action: 'list' })).toEqual({ deployments: [] });
      await expect(call(a.app, 'deploy_agent', { action: 'status', name: 'ghost' })).rejects.toThrow(
        /no deployed agent "ghost"/,
      );

      await a.app.close();
      await b.app.close();
      expect(existsSync(join(a.app.dataDir, 'svc.db'))).toBe(false);
      expect(existsSync(join(b.app.dataDir, 'svc.db'))).toBe(false);
    } finally {
      await a.sql.close();
      await b.sql.close();
    }
  }, 60_000);
});
