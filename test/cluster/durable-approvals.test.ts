/**
 * Approvals that survive restarts (issue 19, item 4; docs/engine.md): three built DBOS nodes on
 * one throwaway PostgreSQL. A run on node A asks permission for a bash command; the pending
 * request is a row every node lists and answers (first answer wins, a late one is the usual
 * not_found). DURABLE-20: answered on node B, the run on A goes on: the command runs once and the
 * run completes. DURABLE-21: A is SIGKILLed while the run waits; the request is answered on C
 * (while no node holds the run, or after its adoption); the adopting node resumes the run, whose
 * call waits for the SAME request (it never started: no "outcome unknown"), the command runs once
 * after "allow", and the ledger has one permission.requested and one permission.resolved for it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeProvider, fakeProvider, reply } from '../helpers/fake-provider';
import { postgresForFile } from '../helpers/postgres';
import { type ClusterNode, type SvcCluster, startCluster, until } from './cluster-harness';

const pg = postgresForFile({ durable: true });

/** The first pending permission request of the session, as `node` lists it. */
async function pendingOn(node: ClusterNode, sessionId: string) {
  return await until(async () => {
    const listed = await node.get(`/v1/sessions/${sessionId}/permissions`);
    return listed.permissions[0] as { request_id: string; run_id: string; tool: string } | undefined;
  }, `a pending permission request listed on ${node.name}`);
}

/**
 * The live node that holds (runs) the run, and the other live nodes: with the run queue a run may
 * run on another node than the one it was sent to. The run's row names its process.
 */
async function holderOf(cluster: SvcCluster, runId: string) {
  const live = cluster.nodes.filter(
    (n) => n.server.child.exitCode === null && n.server.child.signalCode === null,
  );
  const run = (await live[0]!.get(`/v1/agent-runs/${runId}`)).run as { pid: number | null };
  const holder = live.find((n) => n.server.child.pid === run.pid);
  if (!holder) throw new Error(`run ${runId} is not held by a live node (pid ${run.pid})`);
  return { holder, others: live.filter((n) => n !== holder) as [ClusterNode, ClusterNode, ...ClusterNode[]] };
}

async function finished(node: ClusterNode, runId: string, timeoutMs = 60_000) {
  return await until(
    async () => {
      const run = (await node.get(`/v1/agent-runs/${runId}`)).run;
      return run.status !== 'running' && run.status !== 'queued' ? run : undefined;
    },
    `run ${runId} to finish`,
    timeoutMs,
  );
}

async function ledgerOf(node: ClusterNode, runId: string) {
  return (await node.get(`/v1/agent-runs/${runId}/events?limit=500`)).events as {
    type: string;
    payload: Record<string, unknown>;
  }[];
}

/**
 * A run adopted after its node went away while it waited for an answer, then allowed: completed,
 * its command run once, one `run_adopted`, no unknown outcome, one `run.finished`, one requested
 * and one resolved for the request, one successful tool result, the model's last answer.
 */
async function approvedAfterAdoption(
  node: ClusterNode,
  expected: { runId: string; sessionId: string; requestId: string; log: string; answer: string },
) {
  const run = await finished(node, expected.runId, 90_000);
  expect(run, JSON.stringify(run)).toMatchObject({ status: 'completed' });
  expect(readFileSync(expected.log, 'utf8')).toBe('ran\n');
  const events = await ledgerOf(node, expected.runId);
  expect(events.filter((e) => e.type === 'run_adopted')).toHaveLength(1);
  expect(events.filter((e) => e.type === 'tool.outcome_unknown')).toHaveLength(0);
  expect(events.filter((e) => e.type === 'run.finished')).toHaveLength(1);
  const of = (type: string) =>
    events.filter((e) => e.type === type && e.payload.request_id === expected.requestId);
  expect(of('permission.requested')).toHaveLength(1);
  const resolved = of('permission.resolved');
  expect(resolved).toHaveLength(1);
  const messages = (await node.get(`/v1/sessions/${expected.sessionId}/messages`)).messages as any[];
  const results = messages.flatMap((m) => m.parts.filter((p: any) => p.type === 'tool-result'));
  expect(results).toHaveLength(1);
  expect(results[0].is_error).toBe(false);
  expect(JSON.stringify(messages.at(-1))).toContain(expected.answer);
  return { events, resolved };
}

/** `nodes` DBOS serving nodes on a fresh database of the file's PostgreSQL, for one describe block. */
function dbosNodes(nodes: number): { readonly provider: FakeProvider; readonly cluster: SvcCluster } {
  const at = {} as { provider: FakeProvider; cluster: SvcCluster };
  beforeAll(async () => {
    at.provider = await fakeProvider([], { allowExtra: true });
    at.cluster = await startCluster(pg.cluster(), at.provider, {
      nodes,
      config: {
        engine: { kind: 'dbos' },
        store: { node_heartbeat_ms: 300, node_stale_ms: 1_000 },
        permissions: { unattended: 'wait', auto_allow_read_only_bash: false },
      },
    });
  }, 240_000);
  afterAll(async () => {
    await at.cluster?.stop();
    await at.provider?.close();
  }, 120_000); // stopping several nodes on a loaded box outlasts the 30 s default
  return at;
}

describe.skipIf(!pg.available)('durable approvals: three DBOS nodes on one PostgreSQL', () => {
  const at = dbosNodes(3);

  it('DURABLE-20: a run on A asks permission; B lists and answers it; the tool runs once and the run completes; a late answer is not_found', async () => {
    const [a] = at.cluster.nodes;
    const id = (await a.post('/v1/sessions', { title: 'approve elsewhere' })).body.session.id as string;
    at.provider.push(
      reply().toolCall('bash', { command: 'echo ran >> approved20.log' }),
      reply().text('Approved and done.'),
    );
    const sent = await a.post(`/v1/sessions/${id}/messages`, { prompt: 'run the approved command' });
    expect(sent.status).toBe(202);
    const runId = sent.body.run_id as string;
    await pendingOn(a, id);
    // B and C: two nodes other than the one running it.
    const { others } = await holderOf(at.cluster, runId);
    const [b, c] = others;

    const request = await pendingOn(b, id);
    expect(request).toMatchObject({ run_id: runId, tool: 'bash' });
    expect((await c.get(`/v1/sessions/${id}/permissions`)).permissions).toHaveLength(1);
    const answered = await b.post(`/v1/sessions/${id}/permissions/${request.request_id}`, {
      decision: 'allow_once',
    });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);

    const run = await finished(c, runId);
    expect(run).toMatchObject({ status: 'completed' });
    expect(readFileSync(join(at.cluster.workspace, 'approved20.log'), 'utf8')).toBe('ran\n');

    // First answer wins: a late one, on any node, is the usual not_found.
    const late = await c.post(`/v1/sessions/${id}/permissions/${request.request_id}`, { decision: 'deny' });
    expect(late.status).toBe(404);
    expect(late.body.error.message).toContain(`no pending permission request "${request.request_id}"`);
    expect((await b.get(`/v1/sessions/${id}/permissions`)).permissions).toHaveLength(0);

    const events = await ledgerOf(c, runId);
    const of = (type: string) =>
      events.filter((e) => e.type === type && e.payload.request_id === request.request_id);
    expect(of('permission.requested')).toHaveLength(1);
    expect(of('permission.resolved')).toHaveLength(1);
    expect(of('permission.resolved')[0]!.payload).toMatchObject({ decision: 'allow_once' });
  }, 120_000);

  it('DURABLE-21: A SIGKILLed while its run waits for an answer; answered on C; the run completes on an adopting node, the same request, the tool ran once', async () => {
    const [first] = at.cluster.nodes;
    const id = (await first.post('/v1/sessions', { title: 'approve after a crash' })).body.session
      .id as string;
    at.provider.push(
      reply().toolCall('bash', { command: 'echo ran >> approved21.log' }),
      reply().text('Done after the crash.'),
    );
    const sent = await first.post(`/v1/sessions/${id}/messages`, {
      prompt: 'run the command after approval',
    });
    expect(sent.status).toBe(202);
    const runId = sent.body.run_id as string;
    const request = await pendingOn(first, id);
    expect(request.run_id).toBe(runId);
    // A: the node running it; B and C: the others.
    const {
      holder: a,
      others: [b, c],
    } = await holderOf(at.cluster, runId);

    await a.kill('SIGKILL');
    // Still listed on the live nodes: the run waits (for adoption, then for the answer).
    expect((await b.get(`/v1/sessions/${id}/permissions`)).permissions.map((p: any) => p.request_id)).toEqual(
      [request.request_id],
    );
    const answered = await c.post(`/v1/sessions/${id}/permissions/${request.request_id}`, {
      decision: 'allow_once',
    });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);

    const { events } = await approvedAfterAdoption(c, {
      runId,
      sessionId: id,
      requestId: request.request_id,
      log: join(at.cluster.workspace, 'approved21.log'),
      answer: 'Done after the crash.',
    });
    expect(existsSync(join(at.cluster.workspace, 'approved21.log'))).toBe(true);
    expect(events.filter((e) => e.type === 'permission.requested')).toHaveLength(1);

    // The model saw the call's real result, not an unknown outcome.
    const bodies = at.provider.requests.map((r) => JSON.stringify(r.body));
    const ofRun = bodies.filter((body) => body.includes('run the command after approval'));
    expect(ofRun).toHaveLength(2);
    expect(ofRun[1]).not.toContain('outcome unknown');
  }, 180_000);

  it('DURABLE-22: the node holding a waiting run dies; the run is adopted and waits again; answered (deny) on another node after the adoption, the resumed run reads the deny and completes', async () => {
    const live = at.cluster.nodes.filter(
      (n) => n.server.child.exitCode === null && n.server.child.signalCode === null,
    );
    const id = (await live[0]!.post('/v1/sessions', { title: 'deny after adoption' })).body.session
      .id as string;
    at.provider.push(
      reply().toolCall('bash', { command: 'echo ran >> denied22.log' }),
      reply().text('Understood, not run.'),
    );
    const sent = await live[0]!.post(`/v1/sessions/${id}/messages`, { prompt: 'try the denied command' });
    const runId = sent.body.run_id as string;
    await pendingOn(live[0]!, id);
    const {
      holder,
      others: [other],
    } = await holderOf(at.cluster, runId);
    const request = await pendingOn(other, id);
    // A third node joins so the dead node's run has a node to go to besides `other`.
    const joined = await at.cluster.start('f');
    await holder.kill('SIGKILL');
    await until(
      async () => ((await ledgerOf(other, runId)).some((e) => e.type === 'run_adopted') ? true : undefined),
      'the run to be adopted',
      60_000,
    );
    const answered = await other.post(`/v1/sessions/${id}/permissions/${request.request_id}`, {
      decision: 'deny',
      message: 'not now',
    });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    const run = await finished(joined, runId, 90_000);
    expect(run, JSON.stringify(run)).toMatchObject({ status: 'completed' });
    expect(existsSync(join(at.cluster.workspace, 'denied22.log'))).toBe(false);
    const events = await ledgerOf(other, runId);
    const of = (type: string) =>
      events.filter((e) => e.type === type && e.payload.request_id === request.request_id);
    expect(of('permission.requested')).toHaveLength(1);
    expect(of('permission.resolved')).toHaveLength(1);
    expect(of('permission.resolved')[0]!.payload).toMatchObject({ decision: 'deny', message: 'not now' });
    expect(events.filter((e) => e.type === 'tool.outcome_unknown')).toHaveLength(0);
    const bodies = at.provider.requests.map((r) => JSON.stringify(r.body));
    const ofRun = bodies.filter((body) => body.includes('try the denied command'));
    expect(ofRun).toHaveLength(2);
    expect(ofRun[1]).toContain('not now');
  }, 180_000);
});

describe.skipIf(!pg.available)('durable approvals across a clean stop: two DBOS nodes', () => {
  const at = dbosNodes(2);

  it('DURABLE-42: A stopped cleanly (SIGTERM) while its run waits for an answer: the run is handed over, waits for the SAME request on the adopting node, answered on another; the tool runs once', async () => {
    const [first] = at.cluster.nodes.filter(
      (n) => n.server.child.exitCode === null && n.server.child.signalCode === null,
    );
    const id = (await first!.post('/v1/sessions', { title: 'approve across a restart' })).body.session
      .id as string;
    at.provider.push(
      reply().toolCall('bash', { command: 'echo ran >> approved42.log' }),
      reply().text('Done after the hand-over.'),
    );
    const sent = await first!.post(`/v1/sessions/${id}/messages`, {
      prompt: 'run the command across a restart',
    });
    expect(sent.status).toBe(202);
    const runId = sent.body.run_id as string;
    const request = await pendingOn(first!, id);
    expect(request.run_id).toBe(runId);
    const {
      holder: a,
      others: [b],
    } = await holderOf(at.cluster, runId);

    await a.kill('SIGTERM');
    // Handed over, not cancelled: the request is still pending on the live node.
    const again = await pendingOn(b, id);
    expect(again.request_id).toBe(request.request_id);
    expect(existsSync(join(at.cluster.workspace, 'approved42.log'))).toBe(false);
    const answered = await b.post(`/v1/sessions/${id}/permissions/${request.request_id}`, {
      decision: 'allow_once',
    });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);

    const { resolved } = await approvedAfterAdoption(b, {
      runId,
      sessionId: id,
      requestId: request.request_id,
      log: join(at.cluster.workspace, 'approved42.log'),
      answer: 'Done after the hand-over.',
    });
    expect(resolved[0]!.payload).toMatchObject({ decision: 'allow_once' });
  }, 150_000);
});
