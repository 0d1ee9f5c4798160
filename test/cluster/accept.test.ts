/**
 * Issue 18 checked from outside (docs/cluster.md, "Checked from outside"): two built
 * `svc service start http` nodes on one throwaway PostgreSQL, driven with the real `openai` client,
 * for the gaps that check found:
 * - a compat request sent to node B for a session busy on node A waits in the session's queue;
 *   node A's drain starts it when its own run ends, and B must still answer it;
 * - the database lost while a node's run waits on the model: the run's end cannot be written, and
 *   the node must stay up (503 while the database is gone) and serve again once it is back.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeProvider, fakeProvider, reply } from '../helpers/fake-provider';
import { postgresForFile } from '../helpers/postgres';
import { auth, type SvcCluster, startCluster, TOKEN, until } from './cluster-harness';

// Durable commits: the database is stopped and started again mid-suite (CLUSTER-21).
const pg = postgresForFile({ durable: true });

describe.skipIf(!pg.available)('cluster: checked from outside', () => {
  let provider: FakeProvider;
  let cluster: SvcCluster;
  beforeAll(async () => {
    provider = await fakeProvider([], { allowExtra: true });
    cluster = await startCluster(pg.cluster(), provider, { nodes: 2 });
  }, 240_000);
  afterAll(async () => {
    await cluster?.stop();
    await provider?.close();
  }, 120_000);

  it('CLUSTER-20: a compat request on node B for a session busy on node A is answered when A runs it', async () => {
    const [a, b] = cluster.nodes;
    const id = (await a.post('/v1/sessions', { title: 'busy on A' })).body.session.id as string;
    provider.push(reply().text('first, slowly').slow(1500), reply().text('second, via B'));
    const first = a.post(`/v1/sessions/${id}/messages`, { prompt: 'first', wait: true });
    await until(
      async () =>
        provider.requests.some((r) => JSON.stringify(r.body).includes('first')) ? true : undefined,
      'the first run to reach the model',
    );
    const client = new OpenAI({ baseURL: `${b.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
    // Queued on B behind A's run; A's drain starts it when its run ends. Before the fix B waited
    // for its own process to settle the run, which never came: bounded here.
    const second = await client.chat.completions.create(
      { model: 'fake/m1', messages: [{ role: 'user', content: 'second' }] },
      { headers: { 'X-Svc-Session-Id': id }, signal: AbortSignal.timeout(20_000) },
    );
    expect(second.choices[0]?.message.content).toBe('second, via B');
    expect((await first).status).toBeLessThan(300);
    const runs = (await b.get('/v1/agent-runs?limit=50')).runs.filter((r: any) => r.session_id === id);
    expect(runs.map((r: any) => r.status)).toEqual(['completed', 'completed']);
  }, 60_000);

  it('CLUSTER-21: the database lost while a run waits on the model: the node stays up, answers 503, serves again when it is back, and records the run end then', async () => {
    const [a] = cluster.nodes;
    const id = (await a.post('/v1/sessions', { title: 'database lost' })).body.session.id as string;
    provider.push(reply().text('answered while the database is gone').slow(1500));
    const pending = a
      .post(`/v1/sessions/${id}/messages`, { prompt: 'in flight', wait: true })
      .catch((e) => e);
    await until(
      async () =>
        provider.requests.some((r) => JSON.stringify(r.body).includes('in flight')) ? true : undefined,
      'the run to reach the model',
    );
    pg.cluster().down();
    try {
      await pending;
      // The node notices the loss at its next use of the store or its health probe: on a loaded
      // machine that can come after the request's own failure, so /healthz is polled (bounded).
      const down = await until(async () => {
        const answer = await fetch(`${a.url}/healthz`);
        return answer.status === 503 ? answer : undefined;
      }, '/healthz to answer 503 with the database down');
      expect(down.status).toBe(503);
      expect(((await down.json()) as any).reason).toMatch(/PostgreSQL store is unreachable/);
      // The model's answer arrives and the run ends while the database is gone.
      await new Promise((resolve) => setTimeout(resolve, 2500));
    } finally {
      pg.cluster().up();
    }
    const health = await until(
      async () => {
        const response = await fetch(`${a.url}/healthz`).catch(() => undefined);
        return response?.status === 200 ? ((await response.json()) as any) : undefined;
      },
      'node A healthy again',
      30_000,
    );
    expect(health.store).toMatchObject({ kind: 'postgres', ok: true });
    expect(a.server.child.exitCode).toBeNull();
    const listed = await fetch(`${a.url}/v1/sessions/${id}`, { headers: auth });
    expect(listed.status).toBe(200);
    // The run's end, lost with the database, is written once it is back (not left `running`,
    // which kept the session busy on every node while node A lived).
    const ended = await until(
      async () => {
        const runs = (await a.get('/v1/agent-runs?limit=50')).runs.filter((r: any) => r.session_id === id);
        return runs.length === 1 && runs[0].status !== 'running' ? runs[0] : undefined;
      },
      "the lost run's end to be written",
      30_000,
    );
    expect(['failed', 'completed']).toContain(ended.status);
    // And the session takes its next prompt, on the other node too.
    const b = cluster.nodes[1]!;
    await until(
      async () =>
        (await fetch(`${b.url}/healthz`).catch(() => undefined))?.status === 200 ? true : undefined,
      'node B healthy again',
      30_000,
    );
    provider.push(reply().text('after the outage'));
    const after = await cluster.nodes[1]!.post(`/v1/sessions/${id}/messages`, {
      prompt: 'after',
      wait: true,
    });
    expect(after.status).toBeLessThan(300);
    const runs = (await a.get('/v1/agent-runs?limit=50')).runs.filter((r: any) => r.session_id === id);
    expect(runs.map((r: any) => r.status)).toContain('completed');
  }, 90_000);
});
