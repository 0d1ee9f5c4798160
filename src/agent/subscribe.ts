/**
 * Subscriptions to a session's events (or its family's), with the replay of retained events
 * after a given id, without gaps or duplicates.
 * @module
 */
import type { SessionEvent } from '../events/bus';
import type { AgentHost } from './deps';
import type { SubscribeOptions } from './types';

export async function subscribeSession(
  host: Pick<AgentHost, 'sessions' | 'bus'>,
  sessionId: string,
  listener: (event: SessionEvent) => void,
  options: SubscribeOptions = {},
): Promise<() => void> {
  const members = new Set(
    options.family ? (await host.sessions.family(sessionId)).map((s) => s.id) : [sessionId],
  );
  if (members.size === 0) members.add(sessionId);
  let buffer: SessionEvent[] | undefined = [];
  const accept = (event: SessionEvent) => {
    if (options.family && event.type === 'session.created') {
      const parent = (event.payload as { parent_id?: string | null }).parent_id;
      if (parent && members.has(parent)) members.add(event.session_id);
    }
    return members.has(event.session_id);
  };
  const unsubscribe = host.bus.subscribe(options.family ? '*' : sessionId, (event) => {
    if (!accept(event)) return;
    if (buffer) buffer.push(event);
    else listener(event);
  });
  let last = options.afterId ?? Number.MAX_SAFE_INTEGER;
  if (options.afterId !== undefined) {
    const afterId = options.afterId;
    const replays = await Promise.all([...members].map((id) => host.bus.replay(id, afterId)));
    const replayed = replays.flatMap((replay) => replay.events).sort((x, y) => x.id - y.id);
    last = options.afterId;
    for (const event of replayed) {
      listener(event);
      last = Math.max(last, event.id);
    }
  }
  const pending = buffer;
  buffer = undefined;
  for (const event of pending) if (options.afterId === undefined || event.id > last) listener(event);
  return unsubscribe;
}
