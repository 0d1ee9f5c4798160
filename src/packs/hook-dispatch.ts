/**
 * Hooks on session events: one bus subscription for every session. For an event whose session
 * has a pack in force with hooks for that event type (and tool), the commands run in order, per
 * session in event order, off the publisher's path and out of its transaction (the pack's lookup
 * and the outcome's row run in the dispatcher's own async context, ../events/own-context.ts: a
 * compat start's joined `run.started` came with its transaction open, and the lookup's read made
 * the lone start a BEGIN … COMMIT). Outcomes go to the log and the store; the command never does.
 * @module
 */
import type { EventBus, SessionEvent } from '../events/bus';
import { ownContext } from '../events/own-context';
import type { Logger } from '../log';
import type { Redactor } from '../redact';
import type { CommandSpawner } from '../sandbox/spawn';
import type { Clock } from '../util/ids';
import { hookEnv, runHookCommand } from './hooks';
import { HOOK_EVENTS, type PackHook, toolMatcher } from './manifest';
import type { HookRun } from './store';
import type { AppliedPack } from './types';

export interface HookDispatch {
  /** Resolves when every queued hook has finished. */
  idle(): Promise<void>;
  /** Stop listening, stop running hooks (killed), wait for them. Idempotent. */
  close(): Promise<void>;
}

const HOOK_EVENT_SET = new Set<string>(HOOK_EVENTS);

export function startHookDispatch(deps: {
  bus: EventBus;
  workspace: string;
  env: Readonly<Record<string, string | undefined>>;
  clock: Clock;
  log: Logger;
  redactor: Redactor;
  /** The pack in force for a session (hydrating), or undefined; never throws. */
  applied(sessionId: string): Promise<AppliedPack | undefined>;
  /**
   * False while packs are off (`options.operating_packs`): `applied` answers undefined for every
   * session then, so an event is let through without the lookup and its queue entry (≈ 3 KB of
   * promises and closures an event, three hook events a compat request).
   */
  enabled(): boolean;
  /** Persist an outcome; may throw (logged). */
  record(run: HookRun): Promise<void>;
  /** The App's command spawner (OS sandbox, scrubbed environment); without it, a plain shell. */
  spawner?: CommandSpawner;
}): HookDispatch {
  const queues = new Map<string, Promise<void>>();
  const running = new AbortController();
  let closed = false;

  const runHook = async (pack: AppliedPack, hook: PackHook, index: number, event: SessionEvent) => {
    const startedAt = deps.clock.now();
    const context: Record<string, string> = {
      SVC_HOOK_EVENT: event.type,
      SVC_SESSION_ID: event.session_id,
      SVC_PACK: pack.manifest.name,
      SVC_WORKSPACE: deps.workspace,
      SVC_EVENT_ID: String(event.id),
    };
    if (typeof event.payload.run_id === 'string') context.SVC_RUN_ID = event.payload.run_id;
    if (typeof event.payload.tool === 'string') context.SVC_TOOL = event.payload.tool;
    const outcome = await runHookCommand({
      command: hook.command,
      cwd: deps.workspace,
      env: hookEnv(deps.env, context, deps.redactor),
      stdin: JSON.stringify({
        type: event.type,
        event_id: event.id,
        session_id: event.session_id,
        pack: pack.manifest.name,
        payload: deps.redactor.value(event.payload),
      }),
      timeoutMs: hook.timeout_seconds * 1000,
      signal: running.signal,
      spawner: deps.spawner,
      context,
      runId: context.SVC_RUN_ID,
      label: `pack hook ${pack.manifest.name}#${index} (${event.type})`,
    });
    const run: HookRun = {
      session_id: event.session_id,
      pack_name: pack.manifest.name,
      hook_index: index,
      event: event.type,
      event_id: event.id,
      status: outcome.status,
      exit_code: outcome.exit_code,
      duration_ms: outcome.duration_ms,
      started_at: startedAt,
    };
    // Never the command: the index and the event identify the hook.
    deps.log.info('pack hook finished', { ...run });
    try {
      await deps.record(run);
    } catch (error) {
      deps.log.warn('pack hook outcome not recorded', {
        session_id: event.session_id,
        error: error instanceof Error ? error.message : String(error),
      });
    }
  };

  const dispatch = (event: SessionEvent) => {
    // The pack in force when the event came (looked up now), its hooks run in the session's order.
    const lookup = deps.applied(event.session_id);
    const tool = typeof event.payload.tool === 'string' ? event.payload.tool : undefined;
    const previous = queues.get(event.session_id) ?? Promise.resolve();
    const next = previous.then(async () => {
      const pack = await lookup;
      if (!pack) return;
      const hooks = pack.manifest.hooks
        .map((hook, index) => ({ hook, index }))
        .filter(
          ({ hook }) =>
            hook.event === event.type && (!hook.tool || (tool !== undefined && toolMatcher(hook.tool)(tool))),
        );
      for (const { hook, index } of hooks) {
        if (closed) return;
        await runHook(pack, hook, index, event);
      }
    });
    queues.set(event.session_id, next);
    void next.finally(() => {
      if (queues.get(event.session_id) === next) queues.delete(event.session_id);
    });
  };
  const own = ownContext('svc.pack-hooks');
  const unsubscribe = deps.bus.subscribe('*', (event) => {
    if (closed || !HOOK_EVENT_SET.has(event.type) || !deps.enabled()) return;
    own.run(() => dispatch(event));
  });

  return {
    async idle() {
      while (queues.size > 0) await Promise.allSettled([...queues.values()]);
    },
    async close() {
      if (closed) return;
      closed = true;
      unsubscribe();
      running.abort();
      await Promise.allSettled([...queues.values()]);
    },
  };
}
