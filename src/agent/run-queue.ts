/**
 * Root runs on the durable engine's queue (issue 19, `[engine] kind = "dbos"`,
 * src/engine/dbos-queue.ts): a root run is queued on its workspace's slot instead of starting
 * where it was sent, stays `queued` in the ledger (with `run.enqueued`: the workspace, the node
 * that queued it) and is claimed by whichever node the queue gives it to (./run-control.ts
 * `resumeRun` there). The node that queued it answers its waiters when it ended, wherever it ran;
 * the session's next queued prompt is started by the node that ran it (./run-control.ts
 * `drainOutside`), and again by the node that queued it, which finds it already queued if so.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SvcError, toSvcError } from '../errors';
import type { AgentRun } from '../runs/run-ledger';
import type { AgentCore } from './session-runtime';
import type { ChildRunInput } from './types';

const RETRY_MS = 250;
/** How long a dequeued run's row may take to commit (it was queued inside a transaction). */
const UNCOMMITTED_TRIES = 40;

/**
 * Queue the root run on the durable engine; false when the engine does not queue it (no durable
 * engine on this node, or started from inside another run's workflow): it starts here.
 */
export async function enqueueRun(
  core: AgentCore,
  run: AgentRun,
  drain: (sessionId: string) => Promise<unknown>,
): Promise<boolean> {
  const a = core.host;
  const enqueue = core.deps.durable?.enqueue;
  if (!enqueue) return false;
  let workspace = a.workspace;
  const queued = await enqueue(run.id, async () => {
    workspace = (await a.sessions.get(run.session_id))?.workspace || a.workspace;
    return workspace;
  });
  if (!queued) return false;
  // Already on the queue (a drain of the session reached it again): its queuer waits for it.
  if (queued.already) return true;
  await a.runs.append(run.id, 'run.enqueued', { queue: 'workspace', workspace, node: a.runs.owner.runner });
  a.log.info('run queued for its workspace', { run_id: run.id, session_id: run.session_id, workspace });
  const ended = async () => {
    const final = await a.runs.require(run.id).catch(() => undefined);
    // Its workflow ended and the run never started (the node it was given to was stopping):
    // queued again, for another node.
    if (final?.status === 'queued' && !core.closing && (await enqueueRun(core, final, drain))) return;
    await core.settle(run.id);
    if (final?.status === 'completed' && !core.closing) await drain(run.session_id);
    core.notifyIdle(run.session_id);
  };
  queued.done
    .then(ended, (error) => {
      // The engine stopped waiting (this node is closing): its waiters end with the node.
      if (!core.closing) a.log.warn('queued run: its end was not seen here', { run_id: run.id, error });
    })
    .catch((error) => {
      if (!core.closing) a.log.warn('queued run settle failed', { run_id: run.id, error });
    });
  return true;
}

/** The run as stored, waiting a little for a row queued inside a transaction to commit. */
export async function storedRun(core: AgentCore, runId: string): Promise<AgentRun | undefined> {
  let stored = await core.host.runs.require(runId).catch(() => undefined);
  for (let tries = 0; !stored && tries < UNCOMMITTED_TRIES; tries++) {
    await sleep(RETRY_MS);
    stored = await core.host.runs.require(runId).catch(() => undefined);
  }
  return stored;
}

/**
 * Claim here a queued run the queue gave this node, and the workspace it runs in (its session's;
 * undefined: this node's own). Undefined when it is not queued any more (removed, cancelled).
 */
export async function claimDequeued(
  core: AgentCore,
  run: AgentRun,
): Promise<{ claimed: AgentRun; workspace: ChildRunInput['workspace']; started: boolean } | undefined> {
  const a = core.host;
  let workspace: ChildRunInput['workspace'];
  let unavailable: string | undefined;
  try {
    const session = await a.sessions.get(run.session_id);
    workspace = session ? core.deps.workspaceAt?.(session.workspace) : undefined;
  } catch (error) {
    unavailable = a.redactor.string(toSvcError(error).message);
  }
  for (;;) {
    const current = await a.runs.require(run.id).catch(() => undefined);
    if (current?.status !== 'queued' || core.closing) return undefined;
    // Its run.started is written with the claim when the ledger can, unless the run fails here.
    const started = unavailable === undefined ? { started: true } : undefined;
    const claim = await a.runs.claim(run.id, started).catch((error: unknown) => {
      if (SvcError.is(error) && error.code === 'conflict') return undefined;
      throw error;
    });
    if (!claim) return undefined;
    if (claim.ok) {
      if (unavailable === undefined)
        return { claimed: claim.run, workspace, started: claim.started !== undefined };
      // Its workspace is not on this node: the run fails here, saying why (never runs elsewhere).
      await a.runs.update(run.id, { status: 'failed', error: unavailable, finished_at: a.clock.now() });
      await a.runs.append(run.id, 'run.finished', { status: 'failed', error: unavailable, steps: 0 });
      return undefined;
    }
    // Another run of the session still runs (one started outside the queue): it goes first.
    await sleep(RETRY_MS);
  }
}
