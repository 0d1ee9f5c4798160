/**
 * The Apps of the workspaces an ACP connection's sessions name: the launch workspace's App, plus
 * one per other workspace, at most `max` open at once. Past the cap the least recently used App
 * that runs no prompt is closed (its sessions are told first, and reopen it on their next use);
 * when every App is busy the cap is exceeded (until a later open finds one idle) rather than
 * stopping a prompt.
 * An App still closing is waited for before its workspace opens again (one App per database).
 * @module
 */
import type { App } from '../../app';
import type { Logger } from '../../log';

export const DEFAULT_MAX_APPS = 8;

export interface AppPoolOptions {
  /** The launch workspace (its key) and App: always open, never closed by the pool. */
  launch: { key: string; app: App };
  open(key: string): Promise<App>;
  /** Whether a prompt runs in the workspace's App (it is not closed then). */
  busy(key: string): boolean;
  /** The workspace's App is about to close: its sessions let go of it. */
  onEvict(key: string): void;
  max?: number;
  log: Logger;
}

export interface AppPool {
  /** The App of the workspace `key`, opened when needed; it becomes the most recently used. */
  acquire(key: string): Promise<App>;
  /** Workspaces with an App open (or opening), least recently used first. */
  keys(): string[];
  /** Close every App but the launch one. */
  close(): Promise<void>;
}

export function createAppPool(options: AppPoolOptions): AppPool {
  const max = Math.max(1, options.max ?? DEFAULT_MAX_APPS);
  const { launch, log } = options;
  // Insertion order is recency: a used entry moves to the end.
  const open = new Map<string, Promise<App>>([[launch.key, Promise.resolve(launch.app)]]);
  const closing = new Map<string, Promise<void>>();

  const closeOne = (key: string, app: Promise<App>) => {
    open.delete(key);
    options.onEvict(key);
    const done = app
      .then((a) => a.close())
      .catch((error) => log.warn('acp workspace close failed', { workspace: key, error }))
      .finally(() => closing.delete(key));
    closing.set(key, done);
    return done;
  };

  const evict = (keep: string) => {
    for (const [key, app] of open) {
      if (open.size <= max) return;
      if (key === launch.key || key === keep || options.busy(key)) continue;
      log.info('acp workspace closed (least recently used)', { workspace: key, open: open.size, max });
      void closeOne(key, app);
    }
    if (open.size > max) log.warn('acp: every open workspace runs a prompt; over the cap for now', { max });
  };

  return {
    async acquire(key) {
      await closing.get(key);
      let app = open.get(key);
      if (app) open.delete(key);
      else {
        app = options.open(key);
        app.catch(() => {
          if (open.get(key) === app) open.delete(key);
        });
      }
      open.set(key, app);
      evict(key);
      return app;
    },
    keys: () => [...open.keys()],
    async close() {
      const pending = [...open].filter(([key]) => key !== launch.key);
      await Promise.all(pending.map(([key, app]) => closeOne(key, app)));
      await Promise.all(closing.values());
    },
  };
}
