/**
 * Durable runs on DBOS (issue 19, item 6): three built `svc service start http` nodes with
 * `[engine] kind = "dbos"` on one throwaway PostgreSQL and one shared workspace. A run of 5
 * scripted steps is sent to node A and queued (the node the queue gives it to runs it); that node is
 * SIGKILLed while step 3's bash command runs; a live node takes the run over (`run_adopted`) and
 * finishes steps 4–5. Checked: the model is asked for each
 * of steps 1–3 exactly once (the resumed run is not asked again for what it answered), the bash
 * command is not run twice (its outcome is reported unknown), the transcript and the ledger are
 * complete with no duplicate, and the session's SSE stream read from a surviving node (live, then replayed
 * with Last-Event-ID) has every event once.
 * (Before the run queue the run ran on A, the node it was sent to.)
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeProvider, fakeProvider, reply } from '../helpers/fake-provider';
import { postgresForFile } from '../helpers/postgres';
import { type SvcCluster, startCluster, TOKEN, until } from './cluster-harness';

const pg = postgresForFile({ durable: true });

/** The session's SSE events on `url` (from `lastEventId` when given), as they come. */
function follow(url: string, sessionId: string, lastEventId?: string) {
  const received: { type: string; id: string; data: any }[] = [];
  const source = new EventSource(`${url}/v1/sessions/${sessionId}/events`, {
    fetch: (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${TOKEN}`);
      if (lastEventId) headers.set('last-event-id', lastEventId);
      return fetch(input, { ...init, headers });
    },
  });
  for (const type of ['message.created', 'message.completed', 'run.started', 'run.finished', 'tool.finished'])
    source.addEventListener(type, (event) =>
      received.push({ type, id: event.lastEventId, data: JSON.parse(event.data) }),
    );
  return { received, close: () => source.close() };
}

describe.skipIf(!pg.available)('durable runs: three DBOS nodes on one PostgreSQL', () => {
  let provider: FakeProvider;
  let cluster: SvcCluster;
  beforeAll(async () => {
    provider = await fakeProvider([], { allowExtra: true });
    cluster = await startCluster(pg.cluster(), provider, {
      nodes: 3,
      config: {
        engine: { kind: 'dbos' },
        store: { node_heartbeat_ms: 300, node_stale_ms: 1_000 },
        permissions: { allowed_tools: ['write', 'bash'] },
      },
    });
  }, 240_000);
  afterAll(async () => {
    await cluster?.stop();
    await provider?.close();
  }, 120_000); // stopping several nodes on a loaded box outlasts the 30 s default

  it('DURABLE-1: a node SIGKILLed mid-run: another node adopts the run and finishes steps 4-5; nothing is asked or run twice', async () => {
    const [a, b, c] = cluster.nodes;
    const id = (await a.post('/v1/sessions', { title: 'durable' })).body.session.id as string;
    // The run is queued on A and runs on whichever node the queue gives it to: the SSE stream is
    // read on a node that is not killed (C, or B when the run is on C).
    const streams = new Map([c, b].map((n) => [n, follow(n.url, id)]));
    provider.push(
      reply().toolCall('write', { path: 'step1.txt', content: 'one\n' }),
      reply().toolCall('write', { path: 'step2.txt', content: 'two\n' }),
      reply().toolCall('bash', { command: 'echo ran >> bash.log && sleep 60' }),
      reply().toolCall('write', { path: 'step4.txt', content: 'four\n' }),
      reply().text('All five steps done.'),
    );
    const sent = await a.post(`/v1/sessions/${id}/messages`, { prompt: 'do the five steps' });
    expect(sent.status).toBe(202);
    const runId = sent.body.run_id as string;
    const log = join(cluster.workspace, 'bash.log');
    await until(
      async () => (existsSync(log) ? true : undefined),
      'step 3’s bash command to start on A',
      60_000,
    );
    const running = (await a.get(`/v1/agent-runs/${runId}`)).run;
    const victim = cluster.nodes.find((n) => n.server.child.pid === running.pid);
    expect(victim, JSON.stringify(running)).toBeDefined();
    const reader = victim === c ? b : c;
    for (const [n, stream] of streams) if (n !== reader) stream.close();
    const live = streams.get(reader)!;
    if (process.env.DURABLE_DEBUG) console.log(new Date().toISOString(), 'killing', victim!.name);
    await victim!.kill('SIGKILL');
    if (process.env.DURABLE_DEBUG) console.log(new Date().toISOString(), 'killed', victim!.name);

    const run = await until(
      async () => {
        if (process.env.DURABLE_DEBUG)
          await fetch(`${reader.url}/healthz`).then(
            async (x) => {
              console.log('health', x.status);
              const t0 = Date.now();
              await fetch(`${reader.url}/v1/agent-runs/${runId}`, {
                headers: { authorization: `Bearer ${TOKEN}` },
              }).then(
                async (y) => console.log('run', y.status, (await y.text()).slice(0, 200)),
                (e) => console.log('run failed', Date.now() - t0, e.cause),
              );
            },
            (e) => console.log('health failed', reader.url, e.cause),
          );
        const r = (await reader.get(`/v1/agent-runs/${runId}`)).run;
        if (process.env.DURABLE_DEBUG) console.log(new Date().toISOString(), r.status, r.runner, r.steps);
        return r.status !== 'running' ? r : undefined;
      },
      'the run to be finished by a live node',
      90_000,
    );
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'completed', steps: 5 });
    // The bash command ran once: its outcome was reported unknown, not run again.
    expect(readFileSync(log, 'utf8')).toBe('ran\n');
    for (const [file, text] of [
      ['step1.txt', 'one\n'],
      ['step2.txt', 'two\n'],
      ['step4.txt', 'four\n'],
    ])
      expect(readFileSync(join(cluster.workspace, file), 'utf8')).toBe(text);

    // The model: five requests, one per step; the fourth carries the unknown outcome.
    const bodies = provider.requests.map((r) => JSON.stringify(r.body));
    const ofRun = bodies.filter((b) => b.includes('do the five steps'));
    expect(ofRun).toHaveLength(5);
    expect(ofRun[3]).toContain('outcome unknown');
    expect(ofRun.slice(0, 3).some((b) => b.includes('outcome unknown'))).toBe(false);

    // The ledger: adopted once, from A to a live node, after step 2 or 3.
    const events = (await reader.get(`/v1/agent-runs/${runId}/events?limit=500`)).events as any[];
    const adopted = events.filter((e) => e.type === 'run_adopted');
    expect(adopted).toHaveLength(1);
    expect(adopted[0].payload.to_node).not.toBe(adopted[0].payload.from_node);
    expect(adopted[0].payload.step).toBeGreaterThanOrEqual(2);
    const unknown = events.filter(
      (e) => e.type === 'tool.outcome_unknown' || e.type === 'phase' || e.type === 'run_adopted',
    );
    expect(
      events.filter((e) => e.type === 'tool.outcome_unknown'),
      JSON.stringify(unknown),
    ).toHaveLength(1);
    expect(events.filter((e) => e.type === 'run.finished')).toHaveLength(1);
    const seqs = events.map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);

    // The transcript: the prompt once, each tool call once with one result.
    const messages = (await reader.get(`/v1/sessions/${id}/messages`)).messages as any[];
    expect(messages.filter((m) => m.role === 'user')).toHaveLength(1);
    const calls = messages.flatMap((m) => m.parts.filter((p: any) => p.type === 'tool-call'));
    const results = messages.flatMap((m) => m.parts.filter((p: any) => p.type === 'tool-result'));
    expect(calls.map((p: any) => p.tool)).toEqual(['write', 'write', 'bash', 'write']);
    expect(new Set(calls.map((p: any) => p.tool_call_id)).size).toBe(4);
    expect(results.map((p: any) => p.tool_call_id).sort()).toEqual(
      calls.map((p: any) => p.tool_call_id).sort(),
    );
    expect(JSON.stringify(messages.at(-1))).toContain('All five steps done.');

    // SSE on node C: every event once, live and replayed with Last-Event-ID.
    await until(
      async () => (live.received.some((e) => e.type === 'run.finished') ? true : undefined),
      'run.finished on the reader',
    );
    live.close();
    const ids = live.received.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(live.received.filter((e) => e.type === 'run.finished')).toHaveLength(1);
    const first = live.received[0]!;
    const replay = follow(reader.url, id, first.id);
    try {
      await until(
        async () => (replay.received.some((e) => e.type === 'run.finished') ? true : undefined),
        'the replay to reach run.finished',
      );
      expect(replay.received.map((e) => e.id)).toEqual(ids.slice(1));
    } finally {
      replay.close();
    }
  }, 240_000);
});
