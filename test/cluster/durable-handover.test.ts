/**
 * A DBOS node stopped cleanly hands its runs over (issue 19, docs/engine.md): built
 * `svc service start http` nodes with `[engine] kind = "dbos"` on a throwaway PostgreSQL. SIGTERM
 * on the node running a run (the queue gives it to either), with another node alive: the run is not interrupted; the live node
 * adopts it (`run_adopted`) and finishes it, the cut command not run again. A lone node on SIGTERM
 * exits promptly and interrupts its run as before.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeProvider, fakeProvider, reply } from '../helpers/fake-provider';
import { postgresForFile } from '../helpers/postgres';
import { type ClusterNode, type SvcCluster, startCluster, until } from './cluster-harness';

const pg = postgresForFile({ durable: true });

const CONFIG = {
  engine: { kind: 'dbos' },
  store: { node_heartbeat_ms: 300, node_stale_ms: 1_000 },
  permissions: { allowed_tools: ['write', 'bash'] },
};

/** A run whose step 2 runs a long bash command, started on `node`; resolves once the command runs. */
async function startLongRun(node: ClusterNode, provider: FakeProvider, workspace: string, prompt: string) {
  const id = (await node.post('/v1/sessions', { title: prompt })).body.session.id as string;
  const log = join(workspace, `${id}.log`);
  provider.push(
    reply().toolCall('write', { path: `${id}-1.txt`, content: 'one\n' }),
    reply().toolCall('bash', { command: `echo ran >> ${id}.log && sleep 60` }),
    reply().toolCall('write', { path: `${id}-3.txt`, content: 'three\n' }),
    reply().text('All done.'),
  );
  const sent = await node.post(`/v1/sessions/${id}/messages`, { prompt });
  expect(sent.status).toBe(202);
  await until(async () => (existsSync(log) ? true : undefined), 'step 2’s bash command to start', 60_000);
  return { sessionId: id, runId: sent.body.run_id as string, log };
}

describe.skipIf(!pg.available)('durable runs: a node stopped cleanly hands its runs over', () => {
  let provider: FakeProvider;
  let cluster: SvcCluster;
  beforeAll(async () => {
    provider = await fakeProvider([], { allowExtra: true });
    cluster = await startCluster(pg.cluster(), provider, { nodes: 2, config: CONFIG });
  }, 240_000);
  afterAll(async () => {
    await cluster?.stop();
    await provider?.close();
  }, 120_000); // stopping several nodes on a loaded box outlasts the 30 s default

  it('DURABLE-40: SIGTERM on the node running a run: it exits promptly, the other node adopts the run and finishes it', async () => {
    const [a] = cluster.nodes;
    const prompt = 'handover: do the steps';
    const { runId, log } = await startLongRun(a!, provider, cluster.workspace, prompt);
    // The run is queued and runs on whichever node the queue gives it to: that one is stopped.
    const running = (await a!.get(`/v1/agent-runs/${runId}`)).run;
    const holder = cluster.nodes.find((n) => n.server.child.pid === running.pid);
    expect(holder, JSON.stringify(running)).toBeDefined();
    const b = cluster.nodes.find((n) => n !== holder)!;
    const stopping = Date.now();
    await holder!.kill('SIGTERM');
    expect(Date.now() - stopping).toBeLessThan(15_000);

    const run = await until(
      async () => {
        const r = (await b.get(`/v1/agent-runs/${runId}`)).run;
        return r.status !== 'running' ? r : undefined;
      },
      'the run to be finished by node B',
      60_000,
    );
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'completed' });
    // The command cut by the stop ran once.
    expect(readFileSync(log, 'utf8')).toBe('ran\n');
    const events = (await b.get(`/v1/agent-runs/${runId}/events?limit=500`)).events as any[];
    expect(events.filter((e) => e.type === 'run.interrupted')).toHaveLength(0);
    const adopted = events.filter((e) => e.type === 'run_adopted');
    expect(adopted).toHaveLength(1);
    expect(adopted[0].payload.to_node).not.toBe(adopted[0].payload.from_node);
    expect(events.filter((e) => e.type === 'run.finished')).toHaveLength(1);
    // The model was asked once per step: steps 1-2 on A, 3-4 on B.
    const ofRun = provider.requests.map((r) => JSON.stringify(r.body)).filter((b) => b.includes(prompt));
    expect(ofRun).toHaveLength(4);
    const messages = (await b.get(`/v1/sessions/${run.session_id}/messages`)).messages as any[];
    const calls = messages.flatMap((m) => m.parts.filter((p: any) => p.type === 'tool-call'));
    expect(calls.map((p: any) => p.tool)).toEqual(['write', 'bash', 'write']);
    expect(JSON.stringify(messages.at(-1))).toContain('All done.');
  }, 180_000);
});

describe.skipIf(!pg.available)('durable runs: a lone node stopped cleanly', () => {
  let provider: FakeProvider;
  let cluster: SvcCluster;
  beforeAll(async () => {
    provider = await fakeProvider([], { allowExtra: true });
    cluster = await startCluster(pg.cluster(), provider, { nodes: 1, config: CONFIG });
  }, 240_000);
  afterAll(async () => {
    await cluster?.stop();
    await provider?.close();
  }, 120_000); // stopping several nodes on a loaded box outlasts the 30 s default

  it('DURABLE-41: SIGTERM on a lone node: it exits promptly, its run interrupted by the stop', async () => {
    const [a] = cluster.nodes;
    const { runId } = await startLongRun(a!, provider, cluster.workspace, 'lone: do the steps');
    const stopping = Date.now();
    await a!.kill('SIGTERM');
    expect(Date.now() - stopping).toBeLessThan(15_000);
    // A node started after it reads the run as the stop left it.
    const b = await cluster.start('b');
    const run = (await b.get(`/v1/agent-runs/${runId}`)).run;
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'interrupted' });
    expect(run.reason ?? run.error ?? '').toMatch(/shut down/);
    const events = (await b.get(`/v1/agent-runs/${runId}/events?limit=500`)).events as any[];
    expect(events.filter((e) => e.type === 'run_adopted')).toHaveLength(0);
    expect(events.filter((e) => e.type === 'run.finished')).toHaveLength(1);
  }, 180_000);
});
