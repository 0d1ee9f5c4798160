/**
 * The moment a run of the open session has ended and the TUI waits for the human: the TUI hands
 * back the memory the run grew then (one full GC, `trimWhenIdle().now`), not 10–20 s later when
 * the process has been quiet long enough (issue 17, item 4). `delayMs` after the state went back
 * to idle, so the last frames are drawn first; a run that starts within it cancels the call.
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
    let running = store.getSnapshot().state !== 'idle';
    const stop = store.subscribe(() => {
      const now = store.getSnapshot().state !== 'idle';
      if (now) cancel();
      else if (running) {
        cancel();
        timer = setTimeout(listener, delayMs);
        timer.unref();
      }
      running = now;
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
