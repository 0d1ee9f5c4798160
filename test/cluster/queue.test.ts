/**
 * The durable engine's run queue (issue 19 items 3 and 6; docs/engine.md "The run queue"): three
 * built `svc service start http` nodes with `[engine] kind = "dbos"`, `max_runs = 4`, on one
 * throwaway PostgreSQL; ten workspaces on the volume every node sees.
 *
 * - DURABLE-2: 50 runs (5 per workspace, each in its own session, so no session queue keeps two
 *   runs of one workspace apart) submitted round-robin to the three nodes. Each run's one bash
 *   step appends `start <run> <ns>` and, 0.3 s later, `end <run> <ns>` to `runs.log` in the
 *   directory it runs in. Checked: all 50 complete; no two runs of one workspace are running at
 *   once (the ledger's started_at, when a node dequeued and claimed it, to finished_at); never
 *   more than 4 running at once across the cluster, and more than one (workspaces ran in
 *   parallel); each workspace's log holds exactly its own five runs (a run runs in its session's
 *   workspace, whichever node the queue gave it to); the ledger says each run was queued
 *   (`run.enqueued`, then `run.started`). Without the partition (partitionConcurrency and the
 *   partition key removed in src/engine/dbos-queue.ts) the per-workspace assertion fails.
 * - DURABLE-3: a queued run starts a sub-agent (`agent` tool) in the same workspace while it holds
 *   the workspace's slot: the sub-agent runs inside its parent's workflow, not on the queue, so it
 *   finishes and the parent completes (no deadlock on the slot the parent holds).
 * - DURABLE-4: the compat surface (`POST /v1/chat/completions`, streaming and not) answers in full
 *   on the node it was asked, whichever node the queue gave its run to (the deltas and the run's end
 *   reach it through the PostgreSQL event log).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresClient } from '../../src/store/postgres/client';
import { type FakeProvider, fakeProvider, type RecordedRequest, reply } from '../helpers/fake-provider';
import { postgresForFile } from '../helpers/postgres';
import { type SvcCluster, startCluster, TOKEN, until } from './cluster-harness';

const pg = postgresForFile({ durable: true });

const WORKSPACES = 10;
const RUNS_PER_WORKSPACE = 5;
const MAX_RUNS = 4;

/** The scripted model: each request is answered from what the conversation holds, in any order. */
function answer(request: RecordedRequest) {
  const messages = (request.body?.messages ?? []) as { role: string; content: unknown }[];
  const users = JSON.stringify(messages.filter((m) => m.role === 'user'));
  const answered = messages.some((m) => m.role === 'tool');
  const tag = /queue-run (r\d+)/.exec(users)?.[1];
  if (tag) {
    if (answered) return reply().text(`${tag} done`);
    return reply().toolCall('bash', {
      command: `echo "start ${tag} $(date +%s%N)" >> runs.log; sleep 0.3; echo "end ${tag} $(date +%s%N)" >> runs.log`,
    });
  }
  const compat = /compat-q (c\d+)/.exec(users)?.[1];
  if (compat) return reply().text(`compat answer ${compat}`);
  if (users.includes('sub-agent task')) {
    if (answered) return reply().text('child done');
    return reply().toolCall('bash', { command: 'echo child >> child.log' });
  }
  if (users.includes('queue-parent')) {
    if (answered) return reply().text('parent done');
    return reply().toolCall('agent', { prompt: 'sub-agent task: append to child.log', agent: 'general' });
  }
  return reply().text('unscripted');
}

/** Lines `start|end <run> <ns>` of a log, as intervals per run. */
function intervals(log: string): Map<string, { start: bigint; end: bigint }> {
  const runs = new Map<string, { start: bigint; end: bigint }>();
  for (const line of log.trim().split('\n')) {
    const [kind, run, ns] = line.split(' ');
    const entry = runs.get(run!) ?? { start: -1n, end: -1n };
    entry[kind as 'start' | 'end'] = BigInt(ns!);
    runs.set(run!, entry);
  }
  return runs;
}

/** The most intervals open at once. */
function maxOverlap(all: { start: bigint; end: bigint }[]): number {
  const edges = all.flatMap((r) => [
    { at: r.start, delta: 1 },
    { at: r.end, delta: -1 },
  ]);
  // An end and a start at the same instant: the end first.
  edges.sort((x, y) => (x.at === y.at ? x.delta - y.delta : x.at < y.at ? -1 : 1));
  let open = 0;
  let most = 0;
  for (const edge of edges) {
    open += edge.delta;
    most = Math.max(most, open);
  }
  return most;
}

describe.skipIf(!pg.available)('the run queue: three DBOS nodes, ten workspaces', () => {
  let provider: FakeProvider;
  let cluster: SvcCluster;
  let workspaces: string[];
  /** Sessions are made on the nodes (their own workspace), then moved to one of the ten. */
  async function sessionIn(node: number, workspace: string, title: string): Promise<string> {
    const id = (await cluster.nodes[node]!.post('/v1/sessions', { title })).body.session.id as string;
    const sql = await createPostgresClient({
      url: cluster.storeUrl,
      pool_size: 1,
      statement_timeout_ms: 10_000,
      connect_timeout_ms: 5_000,
    });
    try {
      await sql.run('UPDATE sessions SET workspace = $1 WHERE id = $2', [workspace, id]);
    } finally {
      await sql.close();
    }
    return id;
  }

  beforeAll(async () => {
    provider = await fakeProvider(
      Array.from({ length: 400 }, () => answer),
      { allowExtra: true },
    );
    cluster = await startCluster(pg.cluster(), provider, {
      nodes: 3,
      config: {
        engine: { kind: 'dbos', max_runs: MAX_RUNS, queue_poll_ms: 100 },
        permissions: { allowed_tools: ['bash', 'agent'] },
      },
    });
    workspaces = Array.from({ length: WORKSPACES }, (_, i) => {
      const dir = join(cluster.workspace, 'workspaces', `w${i}`);
      mkdirSync(dir, { recursive: true });
      return dir;
    });
  }, 240_000);
  afterAll(async () => {
    await cluster?.stop();
    await provider?.close();
  }, 120_000); // stopping several nodes on a loaded box outlasts the 30 s default

  it('DURABLE-2: 50 runs over 10 workspaces on 3 nodes: all complete, never two at once in a workspace, never more than max_runs in the cluster', async () => {
    const jobs = Array.from({ length: WORKSPACES * RUNS_PER_WORKSPACE }, (_, i) => ({
      tag: `r${i}`,
      // Grouped by workspace: first-come order alone would run a workspace's runs together.
      workspace: workspaces[Math.floor(i / RUNS_PER_WORKSPACE)]!,
      node: i % 3,
    }));
    const sessions = await Promise.all(jobs.map((job) => sessionIn(job.node, job.workspace, job.tag)));
    const started = Date.now();
    const runIds = await Promise.all(
      jobs.map(async (job, i) => {
        const sent = await cluster.nodes[job.node]!.post(`/v1/sessions/${sessions[i]}/messages`, {
          prompt: `queue-run ${job.tag}`,
        });
        expect(sent.status, JSON.stringify(sent.body)).toBe(202);
        // Queued, not started where it was sent: the node the queue gives it to starts it.
        expect(sent.body.status).toBe('queued');
        return sent.body.run_id as string;
      }),
    );
    const runs = await until(
      async () => {
        const all = await Promise.all(
          runIds.map(async (id, i) => (await cluster.nodes[i % 3]!.get(`/v1/agent-runs/${id}`)).run),
        );
        return all.every((r) => r.status !== 'queued' && r.status !== 'running') ? all : undefined;
      },
      'the 50 runs to end',
      200_000,
    );
    if (process.env.DURABLE_DEBUG) console.log('50 runs in', Date.now() - started, 'ms');
    expect(
      runs.filter((r) => r.status !== 'completed').map((r) => [r.id, r.status, r.error]),
      'runs that did not complete',
    ).toEqual([]);

    // A run is running from its claim (started_at, when a node dequeued it) to its end
    // (finished_at): in one workspace never two at once. (The bash steps alone would not show it:
    // the workspace lease already serializes changes; without the queue two runs of a workspace
    // run at once, one waiting for the lease, and this fails.)
    const span = (r: { started_at: number; finished_at: number }) => ({
      start: BigInt(r.started_at),
      end: BigInt(r.finished_at),
    });
    for (const [w, dir] of workspaces.entries()) {
      const own = runs.filter((_, i) => jobs[i]!.workspace === dir).map(span);
      expect(maxOverlap(own), `runs of workspace w${w} running at once`).toBe(1);
      // Each workspace's log: exactly its own five runs (each ran in its session's workspace,
      // on whichever node), never two bash steps at once.
      const logged = intervals(readFileSync(join(dir, 'runs.log'), 'utf8'));
      const expected = jobs.filter((job) => job.workspace === dir).map((job) => job.tag);
      expect([...logged.keys()].sort(), `workspace w${w}`).toEqual(expected.sort());
      for (const [tag, step] of logged) expect(step.start > 0n && step.end >= step.start, tag).toBe(true);
      expect(maxOverlap([...logged.values()]), `bash steps of workspace w${w} at once`).toBe(1);
    }
    const most = maxOverlap(runs.map(span));
    expect(most, 'runs running at once across the cluster').toBeLessThanOrEqual(MAX_RUNS);
    expect(most, 'workspaces ran in parallel').toBeGreaterThan(1);

    // The ledger: queued, then (on whichever node) started; the nodes shared the work.
    const sample = await Promise.all(
      runIds
        .slice(0, 6)
        .map(async (id) => (await cluster.nodes[0]!.get(`/v1/agent-runs/${id}/events`)).events),
    );
    for (const events of sample as { type: string }[][]) {
      const types = events.map((e) => e.type);
      expect(types.indexOf('run.enqueued'), types.join(',')).toBeGreaterThan(-1);
      expect(types.indexOf('run.enqueued')).toBeLessThan(types.indexOf('run.started'));
    }
    expect(new Set(runs.map((r) => r.pid)).size, 'nodes that ran runs').toBeGreaterThan(1);
  }, 300_000);

  it('DURABLE-3: a queued run starts a sub-agent in its workspace: the child runs in its parent’s workflow and both finish (no deadlock on the slot)', async () => {
    const dir = workspaces[0]!;
    const id = await sessionIn(1, dir, 'parent');
    const sent = await cluster.nodes[1]!.post(`/v1/sessions/${id}/messages`, { prompt: 'queue-parent' });
    expect(sent.status).toBe(202);
    const runId = sent.body.run_id as string;
    const run = await until(
      async () => {
        const r = (await cluster.nodes[2]!.get(`/v1/agent-runs/${runId}`)).run;
        return r.status !== 'queued' && r.status !== 'running' ? r : undefined;
      },
      'the parent run to end',
      90_000,
    );
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'completed' });
    const children = (await cluster.nodes[0]!.get(`/v1/agent-runs/${runId}`)).children as any[];
    expect(children.map((c) => [c.status, c.origin])).toEqual([['completed', 'subagent']]);
    // The child was never queued: it ran in its parent's workflow, in the parent's workspace.
    const childEvents = (await cluster.nodes[0]!.get(`/v1/agent-runs/${children[0].id}/events`))
      .events as any[];
    expect(childEvents.map((e) => e.type)).not.toContain('run.enqueued');
    expect(readFileSync(join(dir, 'child.log'), 'utf8')).toBe('child\n');
  }, 150_000);

  it('DURABLE-4: compat chat completions, streamed or not, answer in full on the asked node wherever their run ran', async () => {
    const asked = Array.from({ length: 9 }, (_, i) => ({ tag: `c${i}`, node: i % 3, stream: i % 2 === 0 }));
    const answers = await Promise.all(
      asked.map(async ({ tag, node, stream }) => {
        const client = new OpenAI({
          baseURL: `${cluster.nodes[node]!.url}/v1`,
          apiKey: TOKEN,
          maxRetries: 0,
        });
        const request = {
          model: 'fake/m1',
          messages: [{ role: 'user' as const, content: `compat-q ${tag}` }],
        };
        if (!stream) {
          const { data, response } = await client.chat.completions.create(request).withResponse();
          return { text: data.choices[0]?.message.content, runId: response.headers.get('x-svc-run-id') };
        }
        const { data, response } = await client.chat.completions
          .create({ ...request, stream: true })
          .withResponse();
        let text = '';
        for await (const chunk of data) text += chunk.choices[0]?.delta?.content ?? '';
        return { text, runId: response.headers.get('x-svc-run-id') };
      }),
    );
    expect(answers.map((a) => a.text)).toEqual(asked.map(({ tag }) => `compat answer ${tag}`));
    // Some ran on another node than the one asked (the queue gives a run to any node).
    const ranOn = await Promise.all(
      answers.map(async (a) => (await cluster.nodes[0]!.get(`/v1/agent-runs/${a.runId}`)).run.pid as number),
    );
    const elsewhere = ranOn.filter((pid, i) => pid !== cluster.nodes[asked[i]!.node]!.server.child.pid);
    if (process.env.DURABLE_DEBUG) console.log('compat runs run elsewhere:', elsewhere.length, 'of 9');
    expect(elsewhere.length).toBeGreaterThan(0);
  }, 150_000);
});
