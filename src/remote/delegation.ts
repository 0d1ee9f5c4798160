/**
 * Delegation to remote A2A agents (`a2a_delegate`, `delete_a2a_task`): resolve the target (a card
 * URL, a deployed agent's name or a configured remote's name, or a capability matched against
 * known cards' skills), fetch and validate its card, send the task over JSON-RPC, then poll
 * `tasks/get` until it ends or the wait runs out. Every delegated task is a row in `a2a_tasks`
 * until it is deleted, so a later call can wait on it again or cancel it.
 * @module
 */
import { SvcError } from '../errors';
import { getTask, sendMessage } from './a2a-client';
import { partsText, TERMINAL_STATES } from './a2a-wire';
import { type CallContext, clip, type DelegateInput, type RemoteAgentDeps } from './delegation-types';
import { createEndpoints, type ResolvedTarget } from './endpoints';
import type { ServedTaskRepository } from './served-task-repository';
import { type KnownCard, type TrackedTask, viewTask } from './task-store';
import { createTaskSync } from './task-sync';

export type {
  CallContext,
  DelegateInput,
  DeployedEndpoint,
  RemoteAgentDeps,
} from './delegation-types';
export type { ResolvedTarget } from './endpoints';
export type { KnownCard, TargetKind, TrackedTask } from './task-store';

export interface RemoteAgents {
  /** Which agent a delegation would go to (its card fetched and checked), without sending. */
  resolve(input: DelegateInput, signal: AbortSignal): Promise<ResolvedTarget>;
  /** Send the task to `target` (as `resolve` answered for this input), else resolve it first. */
  delegate(input: DelegateInput, ctx: CallContext, target?: ResolvedTarget): Promise<TrackedTask>;
  /** Look at a tracked task again (polling the remote until it ends when `wait`). */
  check(
    taskId: string,
    options: { wait: boolean; timeout_seconds: number },
    ctx: CallContext,
  ): Promise<TrackedTask>;
  /** Cancel the remote task when it still runs, then forget it. */
  remove(
    taskId: string,
    ctx: CallContext,
  ): Promise<{ task_id: string; deleted: true; cancelled: boolean; state: string; warning?: string }>;
  get(taskId: string): Promise<TrackedTask>;
  list(options?: { session_id?: string; limit?: number }): Promise<TrackedTask[]>;
  knownCards(): Promise<KnownCard[]>;
  /** The tasks this process served as an A2A agent (`a2a_served_tasks`, ./a2a-agent.ts). */
  readonly served: ServedTaskRepository;
}

export function createRemoteAgents(deps: RemoteAgentDeps): RemoteAgents {
  const log = deps.log.child({ component: 'a2a' });
  const { store } = deps;
  const view = viewTask;
  const endpoints = createEndpoints(deps, store, log);
  const { httpFor, authForRow } = endpoints;
  const sync = createTaskSync(store, endpoints, deps.redactor, log);

  return {
    resolve: (input, signal) => endpoints.resolve(input, signal),

    async delegate(input, ctx, resolved) {
      if (!input.message.trim())
        throw new SvcError('invalid_input', 'message: give the task for the remote agent');
      const target = resolved ?? (await endpoints.resolve(input, ctx.signal));
      const id = deps.ids.next('a2a');
      await store.insertTask({
        id,
        session_id: ctx.sessionId ?? null,
        run_id: ctx.runId ?? null,
        target_kind: target.kind,
        target: target.value,
        card_url: target.card.card_url,
        agent_name: target.card.name,
        rpc_url: target.card.rpc_url,
        message: clip(deps.redactor.string(input.message)),
      });
      log.info('a2a delegate', { task_id: id, agent: target.card.name, target_kind: target.kind });
      let sent: Awaited<ReturnType<typeof sendMessage>>;
      try {
        sent = await sendMessage(
          target.card.rpc_url,
          { text: input.message, contextId: input.context_id, blocking: false },
          httpFor(ctx.signal, target.auth),
        );
      } catch (error) {
        await store.updateTask(id, {
          state: 'failed',
          error: clip(deps.redactor.string(SvcError.is(error) ? error.message : String(error))),
        });
        throw error;
      }
      if (sent.kind === 'message') {
        // Agents may answer a simple request with a message instead of a task: it is done.
        await store.updateTask(id, {
          state: 'completed',
          context_id: sent.message.contextId ?? null,
          result_text: clip(deps.redactor.string(partsText(sent.message.parts))),
        });
        return view(await store.task(id));
      }
      await sync.apply(id, sent.task);
      if (!input.wait)
        return view(
          await store.task(id),
          TERMINAL_STATES.has(sent.task.status.state)
            ? undefined
            : `call a2a_delegate with task_id "${id}" to wait for it`,
        );
      return sync.poll(id, input.timeout_seconds, ctx.signal);
    },

    async check(taskId, options, ctx) {
      const current = await store.task(taskId);
      if (TERMINAL_STATES.has(current.state) || !current.remote_task_id) return view(current);
      if (!options.wait) {
        const task = await getTask(
          current.rpc_url,
          current.remote_task_id,
          httpFor(ctx.signal, await authForRow(current)),
        );
        await sync.apply(taskId, task);
        return view(await store.task(taskId));
      }
      return sync.poll(taskId, options.timeout_seconds, ctx.signal);
    },

    async remove(taskId) {
      const current = await store.task(taskId);
      const running = !TERMINAL_STATES.has(current.state) && current.remote_task_id !== null;
      const cancelled = running ? await sync.cancelQuietly(current) : false;
      const state = (await store.task(taskId)).state;
      await store.deleteTask(taskId);
      return {
        task_id: taskId,
        deleted: true,
        cancelled,
        state,
        ...(running && !cancelled
          ? { warning: 'the remote agent could not be asked to cancel; the task may still run there' }
          : {}),
      };
    },

    get: async (taskId) => view(await store.task(taskId)),

    list: async (options = {}) => (await store.tasks(options)).map((r) => view(r)),

    knownCards: () => store.cards(),

    served: deps.served,
  };
}
