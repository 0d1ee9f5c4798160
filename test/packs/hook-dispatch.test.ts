/**
 * Pack hooks' bus subscription (src/packs/hook-dispatch.ts). Pins:
 * - with packs off, a hook event is let through without the pack lookup or a queue entry
 *   (ENGINE-CPU-81: the lookup's promises were ≈ 3 KB of garbage an event, three a compat request);
 * - with packs on, every hook event asks for the session's pack, in event order; other events do not.
 */
import { describe, expect, it, vi } from 'vitest';
import type { EventBus, EventListener, SessionEvent } from '../../src/events/bus';
import { nullLogger } from '../../src/log';
import { startHookDispatch } from '../../src/packs/hook-dispatch';
import { systemClock } from '../../src/util/ids';

function dispatchWith(enabled: () => boolean) {
  let listener: EventListener | undefined;
  const bus = {
    subscribe: (_sessionId: string, next: EventListener) => {
      listener = next;
      return () => {
        listener = undefined;
      };
    },
  } as unknown as EventBus;
  const applied = vi.fn(async (_sessionId: string) => undefined);
  const dispatch = startHookDispatch({
    bus,
    workspace: '/nowhere',
    env: {},
    clock: systemClock,
    log: nullLogger,
    redactor: { value: (v: unknown) => v } as never,
    applied,
    enabled,
    record: async () => {},
  });
  let id = 0;
  const emit = (type: string, sessionId = 'ses_1') =>
    listener?.({ id: ++id, session_id: sessionId, type, payload: {}, created_at: 0 } as SessionEvent);
  return { dispatch, applied, emit };
}

describe('pack hook dispatch', () => {
  it('ENGINE-CPU-81 with packs off a hook event makes no pack lookup and queues nothing', async () => {
    const { dispatch, applied, emit } = dispatchWith(() => false);
    emit('run.started');
    emit('message.completed');
    emit('run.finished');
    await dispatch.idle();
    expect(applied).not.toHaveBeenCalled();
    await dispatch.close();
  });

  it('ENGINE-CPU-81 with packs on each hook event looks up its session pack, in order', async () => {
    let on = false;
    const { dispatch, applied, emit } = dispatchWith(() => on);
    emit('run.started', 'ses_a');
    on = true;
    emit('run.started', 'ses_a');
    emit('text.delta', 'ses_a'); // not a hook event
    emit('run.finished', 'ses_b');
    await dispatch.idle();
    expect(applied.mock.calls).toEqual([['ses_a'], ['ses_b']]);
    await dispatch.close();
  });
});
