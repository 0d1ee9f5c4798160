/**
 * Delegation to remote A2A agents (`a2a_delegate`, `delete_a2a_task`): resolve the target (a card
 * URL, a deployed agent's name or a configured remote's name, or a capability matched against
 * known cards' skills), fetch and validate its card, send the task over JSON-RPC, then poll
 * `tasks/get` until it ends or the wait runs out. Every delegated task is a row in `a2a_tasks`
 * until it is deleted, so a later call can wait on it again or cancel it.
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { Logger } from '../log';
import type { Redactor } from '../redact';
import type { Db } from '../store/db';
import type { Clock, Ids } from '../util/ids';
import { type A2aHttp, cancelTask, fetchAgentCard, getTask, sendMessage } from './a2a-client';
import { capabilityScore, partsText, type TaskWire, TERMINAL_STATES } from './a2a-wire';
import {
  createA2aStore,
  type KnownCard,
  type TargetKind,
  type TaskRow,
  type TrackedTask,
  viewTask,
} from './task-store';

export type { KnownCard, TargetKind, TrackedTask } from './task-store';

export interface DelegateInput {
  card_url?: string;
  agent_name?: string;
  capability?: string;
  message: string;
  context_id?: string;
  wait: boolean;
  timeout_seconds: number;
}

export interface CallContext {
  sessionId?: string;
  runId?: string;
  signal: AbortSignal;
}

/** A deployed agent as delegation sees it (filled by the deploy service). */
export interface DeployedEndpoint {
  name: string;
  url: string;
  token?: string;
}

export interface RemoteAgents {
  delegate(input: DelegateInput, ctx: CallContext): Promise<TrackedTask>;
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
  get(taskId: string): TrackedTask;
  list(options?: { session_id?: string; limit?: number }): TrackedTask[];
  knownCards(): KnownCard[];
}

export interface RemoteAgentDeps {
  db: () => Db;
  clock: Clock;
  ids: Ids;
  fetch: typeof fetch;
  config: () => Config;
  redactor: Redactor;
  log: Logger;
  deployed: () => DeployedEndpoint[];
}

interface Endpoint {
  url: string;
  token?: string;
  source: string;
}

const CARD_TTL_MS = 10 * 60 * 1000;
const MAX_STORED_TEXT = 100_000;

export function createRemoteAgents(deps: RemoteAgentDeps): RemoteAgents {
  const log = deps.log.child({ component: 'a2a' });
  const store = createA2aStore({ db: deps.db, clock: deps.clock });
  const remember = store.rememberCard;
  const knownCards = store.cards;
  const row = store.task;
  const update = store.updateTask;
  const view = viewTask;

  const endpoints = (): Map<string, Endpoint> => {
    const out = new Map<string, Endpoint>();
    for (const [name, remote] of Object.entries(deps.config().a2a.remotes)) {
      out.set(name, { url: remote.url, token: remote.token, source: `remote:${name}` });
    }
    // A deployed agent of the same name wins: it is the one this machine runs.
    for (const agent of deps.deployed())
      out.set(agent.name, { url: agent.url, token: agent.token, source: `deployed:${agent.name}` });
    return out;
  };

  /** The token of the endpoint a URL belongs to (same origin), if any. */
  const tokenFor = (url: string): string | undefined => {
    const origin = safeOrigin(url);
    for (const endpoint of endpoints().values())
      if (origin && safeOrigin(endpoint.url) === origin) return endpoint.token;
    return undefined;
  };

  const httpFor = (url: string, signal: AbortSignal, token = tokenFor(url)): A2aHttp => ({
    fetch: deps.fetch,
    token,
    origin: safeOrigin(url),
    signal,
  });

  const resolve = async (
    input: DelegateInput,
    signal: AbortSignal,
  ): Promise<{ kind: TargetKind; value: string; card: KnownCard; token?: string }> => {
    const given = [input.card_url, input.agent_name, input.capability].filter((v) => v !== undefined);
    if (given.length !== 1) {
      throw new SvcError(
        'invalid_input',
        'give exactly one of card_url, agent_name or capability (or task_id to check a tracked task)',
      );
    }
    if (input.card_url !== undefined) {
      const fetched = await fetchAgentCard(input.card_url, httpFor(input.card_url, signal));
      return {
        kind: 'card_url',
        value: input.card_url,
        card: remember(fetched, 'url'),
        token: tokenFor(fetched.card_url),
      };
    }
    if (input.agent_name !== undefined) {
      const endpoint = endpoints().get(input.agent_name);
      if (!endpoint) {
        const names = [...endpoints().keys()];
        throw new SvcError(
          'not_found',
          `agent_name: no deployed or configured agent "${input.agent_name}"${names.length ? `; known: ${names.join(', ')}` : ''} (deploy one with deploy_agent or add [a2a.remotes.${input.agent_name}])`,
        );
      }
      const fetched = await fetchAgentCard(endpoint.url, httpFor(endpoint.url, signal, endpoint.token));
      return {
        kind: 'name',
        value: input.agent_name,
        card: remember(fetched, endpoint.source),
        token: endpoint.token,
      };
    }
    return matchCapability(input.capability as string, signal);
  };

  const matchCapability = async (capability: string, signal: AbortSignal) => {
    // Refresh the cards of every agent we can name (best effort), then score all known cards.
    const cached = new Map(knownCards().map((card) => [card.source, card]));
    const tokens = new Map<string, string | undefined>();
    for (const endpoint of endpoints().values()) {
      const fresh = cached.get(endpoint.source);
      tokens.set(endpoint.source, endpoint.token);
      if (fresh && deps.clock.now() - fresh.fetched_at < CARD_TTL_MS) continue;
      try {
        remember(
          await fetchAgentCard(endpoint.url, httpFor(endpoint.url, signal, endpoint.token)),
          endpoint.source,
        );
      } catch (error) {
        if (signal.aborted) throw error;
        log.warn('agent card refresh failed', {
          source: endpoint.source,
          error: SvcError.is(error) ? error.message : String(error),
        });
      }
    }
    const ranked = knownCards()
      .map((card) => ({ card, score: capabilityScore(card.skills, card, capability) }))
      .filter((entry) => entry.score > 0)
      .sort((a, b) => b.score - a.score || a.card.name.localeCompare(b.card.name));
    const best = ranked[0];
    if (!best) {
      const skills = knownCards().flatMap((card) => card.skills.map((skill) => `${card.name}:${skill.id}`));
      throw new SvcError(
        'not_found',
        `capability: no known agent card has a skill matching "${capability}"${skills.length ? `; known skills: ${skills.slice(0, 20).join(', ')}` : ' (no agent cards known yet: deploy an agent or configure [a2a.remotes])'}`,
      );
    }
    const token = tokens.get(best.card.source) ?? tokenFor(best.card.card_url);
    return { kind: 'capability' as const, value: capability, card: best.card, token };
  };

  const applyTask = (id: string, task: TaskWire) => {
    const done = TERMINAL_STATES.has(task.status.state);
    const artifacts = (task.artifacts ?? [])
      .map((artifact) => partsText(artifact.parts))
      .filter(Boolean)
      .join('\n\n');
    const statusText = partsText(task.status.message?.parts);
    const failed = task.status.state === 'failed' || task.status.state === 'rejected';
    update(id, {
      remote_task_id: task.id,
      context_id: task.contextId ?? null,
      state: task.status.state,
      result_text: done && !failed ? clip(deps.redactor.string(artifacts || statusText)) : null,
      error: failed ? clip(deps.redactor.string(statusText || `the remote task ${task.status.state}`)) : null,
    });
  };

  const poll = async (id: string, timeoutSeconds: number, signal: AbortSignal): Promise<TrackedTask> => {
    const deadline = Date.now() + timeoutSeconds * 1000;
    let interval = 250;
    let current = row(id);
    while (!TERMINAL_STATES.has(current.state) && current.remote_task_id) {
      const left = deadline - Date.now();
      if (left <= 0) {
        return view(
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
          httpFor(current.rpc_url, signal, tokenForRow(current)),
        );
      } catch (error) {
        if (!signal.aborted) throw error;
        await cancelQuietly(current);
        throw new SvcError(
          'cancelled',
          `stopped waiting for A2A task ${id}; the remote task was asked to cancel`,
        );
      }
      applyTask(id, task);
      current = row(id);
    }
    return view(current);
  };

  const tokenForRow = (r: TaskRow): string | undefined => {
    if (r.target_kind === 'name') return endpoints().get(r.target)?.token ?? tokenFor(r.card_url);
    return tokenFor(r.card_url);
  };

  const cancelQuietly = async (r: TaskRow): Promise<boolean> => {
    if (!r.remote_task_id || TERMINAL_STATES.has(r.state)) return false;
    try {
      const task = await cancelTask(
        r.rpc_url,
        r.remote_task_id,
        httpFor(r.rpc_url, AbortSignal.timeout(10_000), tokenForRow(r)),
      );
      if (task) applyTask(r.id, task);
      else update(r.id, { state: 'canceled' });
      return true;
    } catch (error) {
      log.warn('remote task cancel failed', {
        task_id: r.id,
        error: SvcError.is(error) ? error.message : String(error),
      });
      return false;
    }
  };

  return {
    async delegate(input, ctx) {
      if (!input.message.trim())
        throw new SvcError('invalid_input', 'message: give the task for the remote agent');
      const target = await resolve(input, ctx.signal);
      const id = deps.ids.next('a2a');
      store.insertTask({
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
          httpFor(target.card.rpc_url, ctx.signal, target.token),
        );
      } catch (error) {
        update(id, {
          state: 'failed',
          error: clip(deps.redactor.string(SvcError.is(error) ? error.message : String(error))),
        });
        throw error;
      }
      if (sent.kind === 'message') {
        // Agents may answer a simple request with a message instead of a task: it is done.
        update(id, {
          state: 'completed',
          context_id: sent.message.contextId ?? null,
          result_text: clip(deps.redactor.string(partsText(sent.message.parts))),
        });
        return view(row(id));
      }
      applyTask(id, sent.task);
      if (!input.wait)
        return view(
          row(id),
          TERMINAL_STATES.has(sent.task.status.state)
            ? undefined
            : `call a2a_delegate with task_id "${id}" to wait for it`,
        );
      return poll(id, input.timeout_seconds, ctx.signal);
    },

    async check(taskId, options, ctx) {
      const current = row(taskId);
      if (TERMINAL_STATES.has(current.state) || !current.remote_task_id) return view(current);
      if (!options.wait) {
        const task = await getTask(
          current.rpc_url,
          current.remote_task_id,
          httpFor(current.rpc_url, ctx.signal, tokenForRow(current)),
        );
        applyTask(taskId, task);
        return view(row(taskId));
      }
      return poll(taskId, options.timeout_seconds, ctx.signal);
    },

    async remove(taskId) {
      const current = row(taskId);
      const running = !TERMINAL_STATES.has(current.state) && current.remote_task_id !== null;
      const cancelled = running ? await cancelQuietly(current) : false;
      const state = row(taskId).state;
      store.deleteTask(taskId);
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

    get: (taskId) => view(row(taskId)),

    list: (options = {}) => store.tasks(options).map((r) => view(r)),

    knownCards,
  };
}

function safeOrigin(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

function clip(text: string): string {
  return text.length > MAX_STORED_TEXT ? `${text.slice(0, MAX_STORED_TEXT)}…` : text;
}
