/**
 * A svc cluster for one test file (issue 18): a throwaway PostgreSQL (test/helpers/postgres.ts),
 * one database, and N built `svc service start http|autopilot` processes on their own ports and
 * data dirs, sharing one workspace directory (the shared volume) and one fake model on loopback.
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import type { FakeProvider } from '../helpers/fake-provider';
import type { PostgresCluster } from '../helpers/postgres';
import { tmpWorkspace } from '../helpers/tmp-workspace';
import { type SpawnedServer, spawnServer } from '../http/spawn-server';

export const TOKEN = 'cluster-token-123';
export const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

export interface ClusterNode {
  name: string;
  url: string;
  server: SpawnedServer;
  get(path: string): Promise<any>;
  post(path: string, body?: unknown): Promise<{ status: number; body: any }>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface SvcCluster {
  workspace: string;
  storeUrl: string;
  nodes: ClusterNode[];
  start(name: string, kind?: 'http' | 'autopilot'): Promise<ClusterNode>;
  stop(): Promise<void>;
}

export async function startCluster(
  pg: PostgresCluster,
  provider: FakeProvider,
  options: { nodes?: number; kind?: 'http' | 'autopilot'; config?: Record<string, unknown> } = {},
): Promise<SvcCluster> {
  const workspace = tmpWorkspace();
  const storeUrl = await pg.createDatabase('svc_cluster');
  writeFileSync(
    join(workspace, 'svc.toml'),
    stringify({
      providers: { fake: { type: 'openai-compat', base_url: provider.url } },
      models: { large: 'fake/m1', small: 'fake/m1' },
      services: { http: { token: TOKEN }, autopilot: { tick_seconds: 1 } },
      ...options.config,
    }),
  );
  const nodes: ClusterNode[] = [];
  const start = async (name: string, kind = options.kind ?? 'http') => {
    const dataDir = join(workspace, '.nodes', name);
    mkdirSync(dataDir, { recursive: true });
    const server = spawnServer(['service', 'start', kind, '--port', '0'], {
      cwd: workspace,
      env: { SVC_STORE_URL: storeUrl, SVC_DATA_DIR: dataDir },
      timeoutMs: 180_000,
    });
    const url = await server.ready;
    const node: ClusterNode = {
      name,
      url,
      server,
      async get(path) {
        const response = await getRetryingDrops(`${url}${path}`);
        const text = await response.text();
        if (!response.ok) throw new Error(`${name} GET ${path}: ${response.status} ${text}`);
        return JSON.parse(text);
      },
      async post(path, body) {
        const response = await fetch(`${url}${path}`, {
          method: 'POST',
          headers: auth,
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await response.text();
        return { status: response.status, body: text ? JSON.parse(text) : undefined };
      },
      async kill(signal = 'SIGTERM') {
        server.child.kill(signal);
        return server.exit;
      },
    };
    nodes.push(node);
    return node;
  };
  const count = options.nodes ?? 3;
  // One node first: it migrates the new database; the others find it migrated.
  await start('a');
  await Promise.all(['b', 'c', 'd', 'e'].slice(0, count - 1).map((n) => start(n)));
  return {
    workspace,
    storeUrl,
    nodes,
    start,
    async stop() {
      await Promise.all(
        nodes.map(async (n) => {
          if (n.server.child.exitCode !== null || n.server.child.signalCode !== null) return;
          // A node that has not exited 30 s after SIGTERM (a loaded box) is killed: the file's
          // afterAll must end, and the clean stop is DURABLE-40/41's subject, not this one's.
          const kill = setTimeout(() => n.server.child.kill('SIGKILL'), 30_000);
          await n.kill('SIGTERM');
          clearTimeout(kill);
        }),
      );
    },
  };
}

/**
 * A GET to a node, tried again (up to three times) when the connection fails before any answer: a
 * loaded box can reset a kept-alive socket the node is closing. An HTTP answer, whatever its
 * status, is returned as is; GETs are safe to repeat.
 */
async function getRetryingDrops(url: string): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetch(url, { headers: auth });
    } catch (error) {
      if (attempt >= 3) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

export async function until<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
