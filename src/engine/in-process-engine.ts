/**
 * The in-process run engine, the default (issue 19, docs/engine.md): a thin adapter over the
 * agent service (runs live in the memory of the node that started them) and the run ledger (the
 * events, the list), on the SQLite or the PostgreSQL store. It adds no behaviour of its own:
 * what the agent and the ledger do today is what it does.
 * @module
 */
import type { AgentService } from '../agent/types';
import { SvcError } from '../errors';
import type { PendingPermission } from '../permissions/permission-types';
import type { RunLedger } from '../runs/run-ledger';
import type { SessionStore } from '../sessions/types';
import type { EngineKind } from './engine-kind';
import { forkRun } from './fork';
import type { EngineReply, RunEngine } from './run-engine';

export interface InProcessEngineDeps {
  agent: Pick<AgentService, 'send' | 'cancelRun' | 'pendingPermissions' | 'answerPermission'>;
  runs: Pick<RunLedger, 'get' | 'require' | 'events' | 'list'>;
  sessions: Pick<SessionStore, 'get' | 'require' | 'messages' | 'create' | 'appendMessage'>;
  /**
   * The pending requests of a session family on any node (the permission service's `listPending`:
   * on PostgreSQL also the stored requests of runs other nodes hold; issue 19 item 4). Absent:
   * this process's (`agent.pendingPermissions`).
   */
  pending?: (sessionId: string) => Promise<PendingPermission[]>;
}

export function createInProcessEngine(deps: InProcessEngineDeps, kind: EngineKind = 'in-process'): RunEngine {
  const { agent, runs, sessions } = deps;
  const pendingOfSession = async (sessionId: string) =>
    deps.pending ? await deps.pending(sessionId) : agent.pendingPermissions(sessionId);

  /** The requests pending for a run (its own), or for a session (and its sub-agents'). */
  async function pendingOf(id: string): Promise<PendingPermission[]> {
    const run = await runs.get(id);
    if (run) return (await pendingOfSession(run.session_id)).filter((p) => p.run_id === run.id);
    if (await sessions.get(id)) return await pendingOfSession(id);
    throw new SvcError('not_found', `run_id: no run or session "${id}"; see list_agent_runs`);
  }

  async function pick(id: string, answer: EngineReply): Promise<PendingPermission> {
    const pending = await pendingOf(id);
    if (answer.request_id !== undefined) {
      const named = pending.find((p) => p.request_id === answer.request_id);
      if (!named) {
        throw new SvcError(
          'not_found',
          `request_id: no pending request "${answer.request_id}" for ${id}; see list_permission_requests`,
        );
      }
      return named;
    }
    const [only, ...more] = pending;
    if (!only) throw new SvcError('not_found', `${id} has no pending permission request`);
    if (more.length) {
      throw new SvcError(
        'conflict',
        `${id} has ${pending.length} pending permission requests; pass request_id (one of ${pending.map((p) => p.request_id).join(', ')})`,
      );
    }
    return only;
  }

  return {
    kind,
    start: (request) => agent.send(request),
    cancel: (runId, reason) => agent.cancelRun(runId, reason),
    async reply(id, answer) {
      const request = await pick(id, answer);
      return await agent.answerPermission(request.request_id, answer.decision, answer.by, answer.message);
    },
    async events(runId, options = {}) {
      await runs.require(runId);
      return await runs.events(runId, { afterSeq: options.after, limit: options.limit });
    },
    fork: (runId, options) => forkRun({ runs, sessions }, runId, options),
    list: (filter) => runs.list(filter),
  };
}
