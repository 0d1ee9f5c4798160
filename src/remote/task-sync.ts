/**
 * Keeping a tracked task in step with its remote: apply a task the remote reported, poll
 * `tasks/get` until it ends or the wait runs out, and ask the remote to cancel.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SvcError } from '../errors';
import type { Logger } from '../log';
import type { Redactor } from '../redact';
import { cancelTask, getTask } from './a2a-client';
import { partsText, type TaskWire, TERMINAL_STATES } from './a2a-wire';
import { clip } from './delegation-types';
import type { Endpoints } from './endpoints';
import { type A2aStore, type TaskRow, type TrackedTask, viewTask } from './task-store';

export interface TaskSync {
  /** Record what the remote said about a task. */
  apply(id: string, task: TaskWire): Promise<void>;
  /** Poll until the task ends or `timeoutSeconds` pass (then the view says how to wait again). */
  poll(id: string, timeoutSeconds: number, signal: AbortSignal): Promise<TrackedTask>;
  /** Ask the remote to cancel a running task; false when it could not be asked. */
  cancelQuietly(row: TaskRow): Promise<boolean>;
}

export function createTaskSync(
  store: Pick<A2aStore, 'task' | 'updateTask'>,
  endpoints: Pick<Endpoints, 'httpFor' | 'authForRow'>,
  redactor: Redactor,
  log: Logger,
): TaskSync {
  const { httpFor, authForRow } = endpoints;

  const apply = async (id: string, task: TaskWire) => {
    const done = TERMINAL_STATES.has(task.status.state);
    const artifacts = (task.artifacts ?? [])
      .map((artifact) => partsText(artifact.parts))
      .filter(Boolean)
      .join('\n\n');
    const statusText = partsText(task.status.message?.parts);
    const failed = task.status.state === 'failed' || task.status.state === 'rejected';
    await store.updateTask(id, {
      remote_task_id: task.id,
      context_id: task.contextId ?? null,
      state: task.status.state,
      result_text: done && !failed ? clip(redactor.string(artifacts || statusText)) : null,
      error: failed ? clip(redactor.string(statusText || `the remote task ${task.status.state}`)) : null,
    });
  };

  const cancelQuietly = async (r: TaskRow): Promise<boolean> => {
    if (!r.remote_task_id || TERMINAL_STATES.has(r.state)) return false;
    try {
      const task = await cancelTask(
        r.rpc_url,
        r.remote_task_id,
        httpFor(AbortSignal.timeout(10_000), await authForRow(r)),
      );
      if (task) await apply(r.id, task);
      else await store.updateTask(r.id, { state: 'canceled' });
      return true;
    } catch (error) {
      log.warn('remote task cancel failed', {
        task_id: r.id,
        error: SvcError.is(error) ? error.message : String(error),
      });
      return false;
    }
  };

  const poll = async (id: string, timeoutSeconds: number, signal: AbortSignal): Promise<TrackedTask> => {
    const deadline = Date.now() + timeoutSeconds * 1000;
    let interval = 250;
    let current = await store.task(id);
    while (!TERMINAL_STATES.has(current.state) && current.remote_task_id) {
      const left = deadline - Date.now();
      if (left <= 0) {
        return viewTask(
          current,
          `still ${current.state} after ${timeoutSeconds}s: call a2a_delegate with task_id "${id}" to wait again, or delete_a2a_task to cancel it`,
        );
      }
      try {
        await sleep(Math.min(interval, left), undefined, { signal });
      } catch {
        await cancelQuietly(current);
        throw new SvcError(
          'cancelled',
          `stopped waiting for A2A task ${id}; the remote task was asked to cancel`,
        );
      }
      interval = Math.min(interval * 2, 2000);
      let task: TaskWire;
      try {
        task = await getTask(
          current.rpc_url,
          current.remote_task_id,
          httpFor(signal, await authForRow(current)),
        );
      } catch (error) {
        if (!signal.aborted) throw error;
        await cancelQuietly(current);
        throw new SvcError(
          'cancelled',
          `stopped waiting for A2A task ${id}; the remote task was asked to cancel`,
        );
      }
      await apply(id, task);
      current = await store.task(id);
    }
    return viewTask(current);
  };

  return { apply, poll, cancelQuietly };
}
