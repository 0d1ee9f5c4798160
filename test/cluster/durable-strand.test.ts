/**
 * The run queue's last gaps (issue 19, docs/engine.md "The run queue"): three built
 * `svc service start http` nodes with `[engine] kind = "dbos"` on a throwaway PostgreSQL, one
 * shared workspace (so every run below is in one queue partition: one at a time).
 *
 * - DURABLE-6: a node dies between DBOS giving it a queued run and its claim. The state is made
 *   by hand, deterministically: node C is SIGKILLed; while a run holds the workspace's slot, a
 *   second run waits on the queue (ENQUEUED) and is then marked dequeued by C in DBOS's table with
 *   DBOS's own dequeue statement (PENDING, executor C), its svc row still `queued`. Without a fix
 *   it holds the partition's slot for ever: neither it nor any later run of the workspace starts.
 *   Checked: a live node puts it back on the queue (`run.enqueued` again, by that node), it runs
 *   to completion exactly once (its command ran once, one `run.started`, one `run.finished`), and
 *   a run of the workspace sent after it completes too.
 * - DURABLE-7: a session's follow-up prompt sent while its first run still waits on the queue, and
 *   the node both were sent to SIGKILLed before the first run is dequeued. The first run runs on
 *   the node left; that node starts the follow-up when the first run ends (without a fix nobody
 *   does until the session's next send). Checked: the follow-up completes, run once.
 * - DURABLE-8: an adopted run whose workflow a node dequeued and died with before taking the run
 *   over (made by hand as in DURABLE-6: the run `running`, owned by the live node that adopted
 *   it; its workflow PENDING on dead C). Without a fix it is neither adopted again (its owner is
 *   alive) nor put back: it holds the slot for ever. Checked: it is put back and runs once, and
 *   a later run of the workspace completes.
 * - DURABLE-10: DURABLE-8 for a run adopted off the run queue (a root run that was never queued,
 *   say one started before DBOS launched: its adoption resumes its workflow onto DBOS's internal
 *   queue), made by hand the same way and then moved to that queue. Checked: it is put back there
 *   and runs once.
 * - DURABLE-11: a run queued by node E, E SIGKILLed, and its workflow ended without starting it
 *   by a node that was stopping (made by hand: SUCCESS on that node's executor, the run still
 *   `queued`). E, which would have put it back, is gone: without a fix the run waits for the
 *   session's next send. Checked: a live node puts it back, it runs once.
 * - DURABLE-9: the same as DURABLE-6 for a node stopped cleanly (SIGTERM: its heartbeat row is
 *   gone, so nothing says its process died): the run it was given is put back once it was given
 *   more than `node_stale_ms` ago, and runs once.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresClient, type SqlClient } from '../../src/store/postgres/client';
import { type FakeProvider, fakeProvider, type RecordedRequest, reply } from '../helpers/fake-provider';
import { postgresForFile } from '../helpers/postgres';
import { type ClusterNode, type SvcCluster, startCluster, until } from './cluster-harness';

const pg = postgresForFile({ durable: true });

/** The scripted model: each request is answered from what the conversation holds, in any order. */
function answer(request: RecordedRequest) {
  const messages = (request.body?.messages ?? []) as { role: string; content: unknown }[];
  // The session's latest prompt, and whether its tool call was answered since.
  const last = messages.findLastIndex((m) => m.role === 'user');
  const answered = messages.slice(last + 1).some((m) => m.role === 'tool');
  const tag = /strand-run (\w+)/.exec(JSON.stringify(messages[last]?.content ?? ''))?.[1];
  if (!tag) return reply().text('unscripted');
  if (tag.startsWith('hold')) {
    // Holds the workspace's slot for a while.
    if (answered) return reply().text(`${tag} done`);
    return reply().toolCall('bash', { command: `sleep 4; echo ${tag} >> ${tag}.log` });
  }
  if (tag.startsWith('text')) return reply().text(`${tag} done`);
  if (answered) return reply().text(`${tag} done`);
  return reply().toolCall('bash', { command: `echo ${tag} >> ${tag}.log` });
}

/** Requests of the model for the run whose prompt carries `tag`. */
const asked = (provider: FakeProvider, tag: string) =>
  provider.requests.filter((r) => JSON.stringify(r.body?.messages ?? []).includes(`strand-run ${tag}`))
    .length;

describe.skipIf(!pg.available)('the run queue: a node dying with queued work', () => {
  let provider: FakeProvider;
  let cluster: SvcCluster;
  let sql: SqlClient;
  /** The runner id (DBOS executor id) of node C, SIGKILLed in DURABLE-6. */
  let dead: string;
  beforeAll(async () => {
    provider = await fakeProvider(
      Array.from({ length: 200 }, () => answer),
      { allowExtra: true },
    );
    cluster = await startCluster(pg.cluster(), provider, {
      nodes: 3,
      config: {
        engine: { kind: 'dbos', queue_poll_ms: 100 },
        store: { node_heartbeat_ms: 300, node_stale_ms: 1_000 },
        permissions: { allowed_tools: ['bash'] },
      },
    });
    sql = await createPostgresClient({
      url: cluster.storeUrl,
      pool_size: 1,
      statement_timeout_ms: 10_000,
      connect_timeout_ms: 5_000,
    });
  }, 240_000);
  afterAll(async () => {
    await sql?.close();
    await cluster?.stop();
    await provider?.close();
  }, 120_000); // stopping several nodes on a loaded box outlasts the 30 s default

  const send = async (node: ClusterNode, tag: string, sessionId?: string) => {
    const id = sessionId ?? ((await node.post('/v1/sessions', { title: tag })).body.session.id as string);
    const sent = await node.post(`/v1/sessions/${id}/messages`, { prompt: `strand-run ${tag}` });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    return { sessionId: id, runId: sent.body.run_id as string };
  };
  const run = async (node: ClusterNode, runId: string) => (await node.get(`/v1/agent-runs/${runId}`)).run;
  const ended = (node: ClusterNode, runId: string, what: string, timeoutMs = 60_000) =>
    until(
      async () => {
        const r = await run(node, runId);
        return r.status !== 'queued' && r.status !== 'running' ? r : undefined;
      },
      what,
      timeoutMs,
    );
  const events = async (node: ClusterNode, runId: string) =>
    (await node.get(`/v1/agent-runs/${runId}/events?limit=500`)).events as { type: string; payload: any }[];
  const count = (list: { type: string }[], type: string) => list.filter((e) => e.type === type).length;
  /**
   * The run `tag` completed, once: its command ran once, the model was asked once per step, one
   * `run.started` and one `run.finished`.
   */
  const ranOnce = async (node: ClusterNode, runId: string, tag: string, what: string) => {
    const done = await ended(node, runId, what);
    expect(done, JSON.stringify(done)).toMatchObject({ status: 'completed' });
    expect(readFileSync(join(cluster.workspace, `${tag}.log`), 'utf8')).toBe(`${tag}\n`);
    expect(asked(provider, tag)).toBe(2);
    const ledger = await events(node, runId);
    expect(count(ledger, 'run.started')).toBe(1);
    expect(count(ledger, 'run.finished')).toBe(1);
  };
  const workflow = async (runId: string) =>
    await sql.one<{ status: string; executor_id: string }>(
      'SELECT status, executor_id FROM dbos.workflow_status WHERE workflow_uuid = $1',
      [runId],
    );
  /**
   * The run's workflow once it ended: DBOS records its outcome just after the run's own last
   * write, so a run read `completed` can still show its workflow PENDING for a moment.
   */
  const workflowEnded = (runId: string) =>
    until(
      async () => {
        const w = await workflow(runId);
        return w && w.status !== 'PENDING' && w.status !== 'ENQUEUED' ? w : undefined;
      },
      `the workflow of ${runId} to end`,
      30_000,
    );
  /** What DBOS's dequeue writes when it gives the run to `node` (findAndMarkStartable…). */
  const dequeuedBy = async (node: string, runId: string) =>
    await sql.run(
      `UPDATE dbos.workflow_status
          SET status = 'PENDING', executor_id = $1,
              started_at_epoch_ms = (EXTRACT(epoch FROM now()) * 1000)::bigint,
              recovery_attempts = recovery_attempts + 1,
              updated_at = (EXTRACT(epoch FROM now()) * 1000)::bigint
        WHERE workflow_uuid = $2 AND status = 'ENQUEUED' AND queue_name = 'svc_runs'`,
      [node, runId],
    );
  /** What `takeOver` writes when the live `node` adopts the run: `running`, owned by that node. */
  const adoptedBy = async (node: ClusterNode, runId: string) => {
    const owner = (await sql.one<{ id: string; host: string; pid: number }>(
      'SELECT id, host, pid FROM cluster_nodes WHERE pid = $1',
      [node.server.child.pid],
    ))!;
    return await sql.run(
      `UPDATE agent_runs SET status = 'running', started_at = $1, updated_at = $1, pid = $2, host = $3, runner = $4
        WHERE id = $5 AND status = 'queued'`,
      [Date.now(), owner.pid, owner.host, owner.id, runId],
    );
  };
  /** A run of `node`'s sent while `holdTag` holds the workspace's slot; resolves once it holds it. */
  const holdSlot = async (node: ClusterNode, holdTag: string) => {
    const hold = await send(node, holdTag);
    await until(
      async () => ((await run(node, hold.runId)).status === 'running' ? true : undefined),
      `${holdTag} to hold the workspace's slot`,
      30_000,
    );
    return hold;
  };

  it('DURABLE-6: a node dead between DBOS’s dequeue and its claim: a live node puts the run back; it runs once and the workspace’s later runs proceed', async () => {
    const [a, b, c] = cluster.nodes as [ClusterNode, ClusterNode, ClusterNode];
    // C dies (its heartbeat row stays, with its pid: gone by the process check on this machine).
    dead = (await sql.one<{ id: string }>('SELECT id FROM cluster_nodes WHERE pid = $1', [
      c.server.child.pid,
    ]))!.id;
    await c.kill('SIGKILL');

    const hold = await holdSlot(a, 'hold6');
    const stranded = await send(b, 'strand6');
    expect((await run(b, stranded.runId)).status).toBe('queued');
    await until(
      async () => ((await workflow(stranded.runId))?.status === 'ENQUEUED' ? true : undefined),
      'the run to wait on the queue',
    );
    // DBOS gives the run to C, C dying before its claim: the workflow PENDING on C, the run still
    // `queued`.
    expect(await dequeuedBy(dead, stranded.runId)).toBe(1);
    // A later run of the workspace, sent after.
    const later = await send(a, 'later6');

    expect(await ended(a, hold.runId, 'the run holding the slot to end')).toMatchObject({
      status: 'completed',
    });
    const done = await ended(b, stranded.runId, 'the stranded run to be put back and run');
    expect(done, JSON.stringify(done)).toMatchObject({ status: 'completed' });
    expect(await ended(a, later.runId, 'the later run of the workspace to run')).toMatchObject({
      status: 'completed',
    });

    // Exactly once: its command ran once, the model was asked once per step, one start, one end.
    expect(readFileSync(join(cluster.workspace, 'strand6.log'), 'utf8')).toBe('strand6\n');
    expect(asked(provider, 'strand6')).toBe(2);
    const ledger = await events(a, stranded.runId);
    expect(count(ledger, 'run.started')).toBe(1);
    expect(count(ledger, 'run.finished')).toBe(1);
    // Queued by B, then put back by a live node.
    const enqueued = ledger.filter((e) => e.type === 'run.enqueued');
    expect(enqueued.map((e) => e.payload.node)).toHaveLength(2);
    expect(enqueued[1]!.payload.node).not.toBe(dead);
    expect(enqueued[1]!.payload.workspace).toBe(enqueued[0]!.payload.workspace);
    expect((await workflowEnded(stranded.runId)).status).toBe('SUCCESS');
    expect(readFileSync(join(cluster.workspace, 'later6.log'), 'utf8')).toBe('later6\n');
  }, 120_000);

  it('DURABLE-7: the node a session’s follow-up prompt was sent to dies before the first run is dequeued: the node that runs the first starts the follow-up, once', async () => {
    const alive = cluster.nodes.filter(
      (n) => n.server.child.exitCode === null && n.server.child.signalCode === null,
    );
    expect(alive).toHaveLength(2);
    const hold = await holdSlot(alive[0]!, 'hold7');
    // The node holding the slot runs everything after; the other one is sent the session's runs.
    const holderPid = (await run(alive[0]!, hold.runId)).pid as number;
    const runsOn = alive.find((n) => n.server.child.pid === holderPid)!;
    const queuer = alive.find((n) => n !== runsOn)!;

    const first = await send(queuer, 'first7');
    const followUp = await send(queuer, 'text7', first.sessionId);
    // The first waits on the queue behind the slot's holder; the follow-up waits in the session.
    expect((await run(queuer, first.runId)).status).toBe('queued');
    expect(count(await events(queuer, followUp.runId), 'run.enqueued')).toBe(0);
    await queuer.kill('SIGKILL');

    expect(await ended(runsOn, hold.runId, 'the run holding the slot to end')).toMatchObject({
      status: 'completed',
    });
    expect(await ended(runsOn, first.runId, 'the first run to run on the node left')).toMatchObject({
      status: 'completed',
      pid: holderPid,
    });
    const next = await ended(runsOn, followUp.runId, 'the follow-up prompt to run');
    expect(next, JSON.stringify(next)).toMatchObject({ status: 'completed', pid: holderPid });
    expect(asked(provider, 'text7')).toBe(1);
    const ledger = await events(runsOn, followUp.runId);
    expect(count(ledger, 'run.enqueued')).toBe(1);
    expect(count(ledger, 'run.started')).toBe(1);
    expect(count(ledger, 'run.finished')).toBe(1);
  }, 120_000);

  it('DURABLE-8: an adopted run whose workflow a node dequeued and died with before taking it over: put back, it runs once', async () => {
    const alive = cluster.nodes.filter(
      (n) => n.server.child.exitCode === null && n.server.child.signalCode === null,
    );
    expect(alive).toHaveLength(1);
    const node = alive[0]!;
    const hold = await holdSlot(node, 'hold8');
    const adopted = await send(node, 'strand8');
    await until(
      async () => ((await workflow(adopted.runId))?.status === 'ENQUEUED' ? true : undefined),
      'the run to wait on the queue',
    );
    // The live node adopted it (the row running, owned by it, as takeOver writes it) and handed
    // its workflow back; C dequeued it and died before taking it over.
    expect(await adoptedBy(node, adopted.runId)).toBe(1);
    expect(await dequeuedBy(dead, adopted.runId)).toBe(1);
    const later = await send(node, 'later8');

    expect(await ended(node, hold.runId, 'the run holding the slot to end')).toMatchObject({
      status: 'completed',
    });
    await ranOnce(node, adopted.runId, 'strand8', 'the adopted run to be put back and run');
    expect(await ended(node, later.runId, 'the later run of the workspace to run')).toMatchObject({
      status: 'completed',
    });
    expect((await workflowEnded(adopted.runId)).status).toBe('SUCCESS');
  }, 120_000);

  it('DURABLE-9: a node stopped cleanly (no heartbeat row) left a run it was given: put back after node_stale_ms, it runs once', async () => {
    const [node] = cluster.nodes.filter(
      (n) => n.server.child.exitCode === null && n.server.child.signalCode === null,
    );
    const d = await cluster.start('d');
    const stopped = (await sql.one<{ id: string }>('SELECT id FROM cluster_nodes WHERE pid = $1', [
      d.server.child.pid,
    ]))!.id;
    const code = await d.kill('SIGTERM');
    // On a failure, how the node ended says why its row stayed (a crash in its shutdown, or not);
    // the exit code is not asserted here, this test is about the row.
    const ending = `exit code ${code}, stderr: ${d.server.stderr().slice(-2_000)}`;
    expect(await sql.one('SELECT id FROM cluster_nodes WHERE id = $1', [stopped]), ending).toBeUndefined();

    const hold = await holdSlot(node!, 'hold9');
    const stranded = await send(node!, 'strand9');
    await until(
      async () => ((await workflow(stranded.runId))?.status === 'ENQUEUED' ? true : undefined),
      'the run to wait on the queue',
    );
    expect(await dequeuedBy(stopped, stranded.runId)).toBe(1);
    expect(await ended(node!, hold.runId, 'the run holding the slot to end')).toMatchObject({
      status: 'completed',
    });
    const done = await ended(node!, stranded.runId, 'the run to be put back and run');
    expect(done, JSON.stringify(done)).toMatchObject({ status: 'completed' });
    expect(readFileSync(join(cluster.workspace, 'strand9.log'), 'utf8')).toBe('strand9\n');
    const ledger = await events(node!, stranded.runId);
    expect(count(ledger, 'run.enqueued')).toBe(2);
    expect(count(ledger, 'run.started')).toBe(1);
    expect(count(ledger, 'run.finished')).toBe(1);
  }, 180_000);

  it('DURABLE-10: an adopted run off the run queue (DBOS’s internal queue) whose dequeuer died before taking it over: put back there, it runs once', async () => {
    const [node] = cluster.nodes.filter(
      (n) => n.server.child.exitCode === null && n.server.child.signalCode === null,
    );
    const hold = await holdSlot(node!, 'hold10');
    const adopted = await send(node!, 'strand10');
    await until(
      async () => ((await workflow(adopted.runId))?.status === 'ENQUEUED' ? true : undefined),
      'the run to wait on the queue',
    );
    expect(await adoptedBy(node!, adopted.runId)).toBe(1);
    expect(await dequeuedBy(dead, adopted.runId)).toBe(1);
    // Where an adoption of a run that was never queued leaves it: on DBOS's internal queue.
    expect(
      await sql.run(
        `UPDATE dbos.workflow_status SET queue_name = '_dbos_internal_queue', queue_partition_key = NULL
          WHERE workflow_uuid = $1`,
        [adopted.runId],
      ),
    ).toBe(1);

    expect(await ended(node!, hold.runId, 'the run holding the slot to end')).toMatchObject({
      status: 'completed',
    });
    await ranOnce(node!, adopted.runId, 'strand10', 'the adopted run to be put back and run');
    expect((await workflowEnded(adopted.runId)).status).toBe('SUCCESS');
  }, 120_000);

  it('DURABLE-11: a queued run whose workflow a stopping node ended without starting it, its sender SIGKILLed: put back, it runs once', async () => {
    const [node] = cluster.nodes.filter(
      (n) => n.server.child.exitCode === null && n.server.child.signalCode === null,
    );
    const e = await cluster.start('e');
    const hold = await holdSlot(node!, 'hold11');
    const abandoned = await send(e, 'strand11');
    await until(
      async () => ((await workflow(abandoned.runId))?.status === 'ENQUEUED' ? true : undefined),
      'the run to wait on the queue',
    );
    await e.kill('SIGKILL');
    // What a node that was stopping leaves when DBOS gives it the run: the workflow ended, the run
    // not started (a minute ago, so its node, stopped cleanly with no heartbeat row, counts as gone).
    expect(
      await sql.run(
        `UPDATE dbos.workflow_status
            SET status = 'SUCCESS', executor_id = 'a-node-that-stopped',
                updated_at = (EXTRACT(epoch FROM now()) * 1000)::bigint - 60000
          WHERE workflow_uuid = $1 AND status = 'ENQUEUED'`,
        [abandoned.runId],
      ),
    ).toBe(1);
    expect(await ended(node!, hold.runId, 'the run holding the slot to end')).toMatchObject({
      status: 'completed',
    });
    const done = await ended(node!, abandoned.runId, 'the abandoned run to be put back and run');
    expect(done, JSON.stringify(done)).toMatchObject({ status: 'completed' });
    expect(readFileSync(join(cluster.workspace, 'strand11.log'), 'utf8')).toBe('strand11\n');
    expect(asked(provider, 'strand11')).toBe(2);
    const ledger = await events(node!, abandoned.runId);
    expect(count(ledger, 'run.enqueued')).toBe(2);
    expect(count(ledger, 'run.started')).toBe(1);
    expect(count(ledger, 'run.finished')).toBe(1);
  }, 120_000);
});
