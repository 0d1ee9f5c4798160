/**
 * The moment a run of the open session has ended and the TUI waits for the human: the local TUI
 * collects the garbage the run left then (one full GC, `trimWhenIdle().now`), not only 10–20 s
 * later when the process has been quiet long enough (issue 17, item 4). `delayMs` after the state
 * is idle again, so the last frames are drawn first; a run that starts within it cancels the call.
 * @module
 */
import type { ChatController } from './chat-controller';

export function whenRunEnds(
  controller: Pick<ChatController, 'store' | 'onSwitch'>,
  listener: () => void,
  delayMs = 500,
): () => void {
  let timer: NodeJS.Timeout | undefined;
  let unsubscribe = () => {};
  const cancel = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
  };
  const watch = () => {
    unsubscribe();
    const store = controller.store();
    // A run shows as events; the store tells at most once a frame, so a quick run's `running`
    // may never be seen: what counts is an event since the last call, with the state idle now.
    let seen = store.getSnapshot().lastEventId;
    const stop = store.subscribe(() => {
      const state = store.getSnapshot();
      if (state.state !== 'idle') cancel();
      else if (state.lastEventId !== seen) {
        seen = state.lastEventId;
        cancel();
        timer = setTimeout(listener, delayMs);
        timer.unref();
      }
    });
    unsubscribe = () => {
      stop();
    };
  };
  watch();
  const stopSwitching = controller.onSwitch(watch);
  return () => {
    stopSwitching();
    unsubscribe();
    cancel();
  };
}
