/**
 * Cluster mode end to end (issue 18, item 5): three built `svc service start http` nodes on one
 * throwaway PostgreSQL database and one shared workspace, checked with the real `openai` and
 * `eventsource` clients:
 * - a session created on node A is listed and read on B and prompted on B; C's compat surface
 *   answers through the `openai` client and its run is in the ledger every node reads;
 * - three autopilot nodes fire each due schedule exactly once;
 * - two runs changing the shared workspace from two nodes are serialized by the workspace lease;
 * - an SSE client cut from node A reconnects to node B with Last-Event-ID and receives exactly
 *   the events it missed, each once;
 * - a node killed with SIGKILL in the middle of a request: the others keep serving;
 * - the database restarted with `pg_ctl restart -m immediate`: the nodes answer 503 while it is
 *   down, recover by themselves, and no stored message is lost.
 */
import { EventSource } from 'eventsource';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeProvider, fakeProvider, reply } from '../helpers/fake-provider';
import { postgresForFile } from '../helpers/postgres';
import { maskVolatile } from '../helpers/surfaces';
import { auth, type SvcCluster, startCluster, TOKEN, until } from './cluster-harness';

// Durable commits: the database is crashed and restarted mid-suite (CLUSTER-6).
const pg = postgresForFile({ durable: true });

describe.skipIf(!pg.available)('cluster: three nodes on one PostgreSQL', () => {
  let provider: FakeProvider;
  let cluster: SvcCluster;
  beforeAll(async () => {
    provider = await fakeProvider([], { allowExtra: true });
    cluster = await startCluster(pg.cluster(), provider, {
      nodes: 3,
      kind: 'autopilot',
      config: { permissions: { allowed_tools: ['write'] } },
    });
  }, 240_000);
  afterAll(async () => {
    await cluster?.stop();
    await provider?.close();
  }, 120_000); // stopping several nodes on a loaded box outlasts the 30 s default

  const answer = (text: string) => provider.push(reply().text(text));

  it('CLUSTER-1: a session created on node A is listed, read and prompted on node B; node C serves the openai client', async () => {
    const [a, b, c] = cluster.nodes;
    const created = await a.post('/v1/sessions', { title: 'made on A' });
    expect(created.status).toBe(201);
    const id = created.body.session.id as string;
    const listed = await b.get('/v1/sessions');
    expect(listed.sessions.map((s: any) => s.id)).toContain(id);
    expect((await b.get(`/v1/sessions/${id}`)).session).toMatchObject({ id, title: 'made on A' });

    answer('Hello from the model, via B.');
    const sent = await b.post(`/v1/sessions/${id}/messages`, { prompt: 'Say hello.' });
    expect(sent.status).toBe(202);
    const runId = sent.body.run_id as string;
    const run = await until(async () => {
      const r = await c.get(`/v1/agent-runs/${runId}`);
      return r.run.status === 'completed' ? r : undefined;
    }, 'the run to complete, read on C');
    expect(run.result_text).toBe('Hello from the model, via B.');
    const messages = await a.get(`/v1/sessions/${id}/messages`);
    expect(messages.messages.map((m: any) => m.role)).toEqual(['user', 'assistant']);

    answer('Compat answer from C.');
    const client = new OpenAI({ baseURL: `${c.url}/v1`, apiKey: TOKEN, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'fake/m1',
      messages: [{ role: 'user', content: 'Hi C' }],
    });
    expect(completion.choices[0]?.message.content).toBe('Compat answer from C.');
    const runs = await a.get('/v1/agent-runs?limit=50');
    expect(runs.runs.filter((r: any) => r.origin === 'openai_compat')).toHaveLength(1);

    // Parity readouts answer the same JSON on every node (volatile fields masked).
    for (const path of ['/v1/agent-runs?limit=50', '/v1/stats', `/v1/sessions/${id}/messages`]) {
      const [fromA, fromB, fromC] = await Promise.all([a, b, c].map((node) => node.get(path)));
      expect(maskVolatile(fromB), path).toEqual(maskVolatile(fromA));
      expect(maskVolatile(fromC), path).toEqual(maskVolatile(fromA));
    }
  });

  it('CLUSTER-2: an SSE client cut from node A reconnects to node B with Last-Event-ID: each missed event once', async () => {
    const [a, b] = cluster.nodes;
    const id = (await a.post('/v1/sessions', { title: 'sse' })).body.session.id as string;
    const targets = [a.url, b.url];
    const requests: { node: string; lastEventId: string | null }[] = [];
    let connection = 0;
    let cut: (() => void) | undefined;
    const received: { type: string; id: string }[] = [];
    const source = new EventSource(`${a.url}/v1/sessions/${id}/events`, {
      fetch: async (input, init) => {
        const base = targets[Math.min(connection++, targets.length - 1)];
        const url = String(input).replace(a.url, base);
        const headers = new Headers(init?.headers);
        requests.push({ node: base, lastEventId: headers.get('last-event-id') });
        headers.set('authorization', `Bearer ${TOKEN}`);
        const controller = new AbortController();
        cut = () => controller.abort(new Error('network drop'));
        const signal = init?.signal ? AbortSignal.any([init.signal, controller.signal]) : controller.signal;
        return fetch(url, { ...init, headers, signal });
      },
    });
    let opened = false;
    source.addEventListener('connected', () => {
      opened = true;
    });
    for (const type of [
      'session.updated',
      'message.created',
      'message.updated',
      'run.started',
      'run.finished',
    ]) {
      source.addEventListener(type, (event) => received.push({ type, id: event.lastEventId }));
    }
    try {
      await until(async () => (requests.length === 1 ? true : undefined), 'the first connection');
      // A's stream subscribes before it sends `connected`: from then on the change below reaches it
      // (a fixed pause here was too short on a loaded box).
      await until(async () => (opened ? true : undefined), 'the stream on A to open');
      // A title change is one event; made on C while the client is on A.
      await fetch(`${cluster.nodes[2].url}/v1/sessions/${id}`, {
        method: 'PATCH',
        headers: auth,
        body: JSON.stringify({ title: 'first' }),
      });
      await until(async () => (received.length >= 1 ? true : undefined), 'the first event on A');
      cut?.();
      // While the client is away: two more changes, on C.
      for (const title of ['second', 'third'])
        await fetch(`${cluster.nodes[2].url}/v1/sessions/${id}`, {
          method: 'PATCH',
          headers: auth,
          body: JSON.stringify({ title }),
        });
      await until(async () => (received.length >= 3 ? true : undefined), 'the missed events from B');
      expect(requests.length).toBeGreaterThanOrEqual(2);
      expect(requests[1]).toEqual({ node: b.url, lastEventId: received[0]?.id });
      const ids = received.map((r) => r.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.map(Number)).toEqual([...ids.map(Number)].sort((x, y) => x - y));
    } finally {
      source.close();
    }
  });

  it('CLUSTER-3: three autopilot nodes fire each due schedule exactly once', async () => {
    const [a, b, c] = cluster.nodes;
    const names = ['once-a', 'once-b', 'once-c'];
    for (const name of names) answer(`fired ${name}`);
    const created = [];
    for (const [i, name] of names.entries()) {
      const response = await [a, b, c][i]!.post('/v1/schedules', {
        name,
        prompt: `Scheduled prompt ${name}.`,
        at: '+2s',
      });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      created.push(response.body.schedule.id as string);
    }
    for (const id of created) {
      const done = await until(
        async () => {
          const body = await c.get(`/v1/schedules/${id}`);
          return body.schedule?.last_status === 'completed' ? body : undefined;
        },
        `schedule ${id} to complete`,
        30_000,
      );
      expect(done.schedule).toMatchObject({ status: 'completed', run_count: 1 });
      expect(done.runs).toHaveLength(1);
    }
    // Give a double firing time to show, then count what reached the model.
    await new Promise((r) => setTimeout(r, 1500));
    for (const name of names) {
      const sent = provider.requests.filter((r) =>
        JSON.stringify(r.body).includes(`Scheduled prompt ${name}.`),
      );
      expect(sent, name).toHaveLength(1);
    }
  });

  it('CLUSTER-4: two runs changing the shared workspace from two nodes are serialized by the lease', async () => {
    const [a, b] = cluster.nodes;
    const first = (await a.post('/v1/sessions', { title: 'writer on A' })).body.session.id as string;
    const second = (await b.post('/v1/sessions', { title: 'writer on B' })).body.session.id as string;
    // Each run first writes its own new file (so each write passes its own checks at once and
    // only the lease orders them), then answers slowly: whichever writes first holds the
    // workspace while its answer streams, and the other waits for the lease before its write.
    // The model answers by what it is asked (the runs' requests interleave in any order).
    const step = (request: { body: any }) => {
      const who = JSON.stringify(request.body).includes('writer one') ? 'one' : 'two';
      const answered = (request.body.messages as any[]).some((m) => m.role === 'tool');
      return answered
        ? reply().text(`writer ${who} done, slowly`).slow(300)
        : reply().toolCall('write', { path: `cluster-lease-${who}.txt`, content: `${who}\n` });
    };
    provider.push(step, step, step, step);
    const [ra, rb] = await Promise.all([
      a.post(`/v1/sessions/${first}/messages`, { prompt: 'write it (writer one)', wait: true }),
      b.post(`/v1/sessions/${second}/messages`, { prompt: 'write it (writer two)', wait: true }),
    ]);
    expect(ra.status, JSON.stringify(ra.body)).toBeLessThan(300);
    expect(rb.status, JSON.stringify(rb.body)).toBeLessThan(300);
    const runs = await Promise.all(
      [ra.body.run_id, rb.body.run_id].map(async (id: string) => (await a.get(`/v1/agent-runs/${id}`)).run),
    );
    for (const run of runs) expect(run.status).toBe('completed');
    // The tool results of each run, with their times: the later writer's write comes after the
    // earlier writer's run finished.
    const writes = await Promise.all(
      runs.map(async (run: any) => {
        const events = (await a.get(`/v1/agent-runs/${run.id}/events?limit=200`)).events as any[];
        const tool = events.find((e) => e.type === 'tool.finished');
        expect(tool?.payload?.is_error, JSON.stringify(tool)).toBe(false);
        return { run, at: tool?.created_at };
      }),
    );
    writes.sort((x, y) => x.at - y.at);
    expect(writes[0]!.at).toBeDefined();
    expect(writes[1]!.at).toBeGreaterThanOrEqual(writes[0]!.run.finished_at);
  });

  it('CLUSTER-5: a node killed with SIGKILL mid-request; the others keep serving', async () => {
    const [, b, c] = cluster.nodes;
    const extra = await cluster.start('victim');
    const id = (await extra.post('/v1/sessions', { title: 'victim' })).body.session.id as string;
    provider.push(reply().text('never finished').slow(2000));
    const pending = extra
      .post(`/v1/sessions/${id}/messages`, { prompt: 'slow one', wait: true })
      .catch((e) => e);
    await until(
      async () =>
        provider.requests.some((r) => JSON.stringify(r.body).includes('slow one')) ? true : undefined,
      'the slow request to reach the model',
    );
    await extra.kill('SIGKILL');
    await pending;
    expect((await b.get(`/v1/sessions/${id}`)).session.id).toBe(id);
    // The live nodes look for runs whose node is gone on every heartbeat: the victim's run is
    // interrupted without any node restarting, and the session is free again.
    const interrupted = await until(async () => {
      const runs = (await b.get('/v1/agent-runs?limit=50')).runs as any[];
      const run = runs.find((r) => r.session_id === id);
      return run?.status === 'interrupted' ? run : undefined;
    }, "the killed node's run to be interrupted by a live node");
    expect(interrupted.reason).toMatch(/exited before the run finished/);
    answer('still serving');
    const sent = await c.post(`/v1/sessions/${(await c.post('/v1/sessions', {})).body.session.id}/messages`, {
      prompt: 'are you there',
      wait: true,
    });
    expect(sent.status).toBeLessThan(300);
  });

  it('CLUSTER-6: the database restarted (pg_ctl restart -m immediate): 503 while down, recovery by itself, no stored message lost', async () => {
    const [a, b] = cluster.nodes;
    const id = (await a.post('/v1/sessions', { title: 'before restart' })).body.session.id as string;
    answer('stored before the restart');
    const sentKeep = await a.post(`/v1/sessions/${id}/messages`, { prompt: 'keep me', wait: true });
    expect(sentKeep.status).toBeLessThan(300);
    pg.cluster().restart();
    const after = await until(
      async () => {
        const response = await fetch(`${b.url}/v1/sessions/${id}/messages`, { headers: auth });
        return response.status === 200 ? ((await response.json()) as any) : undefined;
      },
      'node B to serve again after the restart',
      30_000,
    );
    expect(after.messages.map((m: any) => m.role)).toEqual(['user', 'assistant']);
    expect(JSON.stringify(after.messages)).toContain('stored before the restart');
    const health = await until(async () => {
      const response = await fetch(`${a.url}/healthz`);
      const body = (await response.json()) as any;
      return body.store?.ok ? body : undefined;
    }, 'node A healthy');
    expect(health.store).toMatchObject({ kind: 'postgres', ok: true });
  });
});
