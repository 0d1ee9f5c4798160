/**
 * Every test gets its own App in its own temp workspace, with a fixed clock and sequential ids,
 * an isolated HOME/XDG config dir (no user config leaks in) and a memory logger.
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { onTestFinished } from 'vitest';
import { type App, type AppOptions, createApp } from '../../src/app';
import { createMemoryLogger } from '../../src/log';
import { type Clock, createSequentialIds } from '../../src/util/ids';
import { tmpWorkspace } from './tmp-workspace';

export interface TestAppOptions extends Partial<AppOptions> {
  files?: Record<string, string>;
  git?: boolean;
  /** Written to <workspace>/svc.toml. */
  config?: Record<string, unknown>;
  /** Written to the isolated global config file. */
  globalConfig?: Record<string, unknown>;
  /** Mark the runtime ready (servers do this after start-up). Default true. */
  ready?: boolean;
}

export interface TestClock extends Clock {
  advance(ms: number): void;
  set(ms: number): void;
}

export function testClock(start = Date.UTC(2026, 10, 22, 12, 0, 0)): TestClock {
  let now = start;
  return {
    now: () => now,
    advance: (ms) => {
      now += ms;
    },
    set: (ms) => {
      now = ms;
    },
  };
}

/** The cache dir of every test app and binary run (the template database lives there). */
export const TEST_CACHE_HOME = join(tmpdir(), 'svc-test-cache');

export function isolatedEnv(
  root: string,
  extra: Record<string, string | undefined> = {},
): Record<string, string | undefined> {
  const home = join(root, '.home');
  mkdirSync(join(home, '.config'), { recursive: true });
  return {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    // Outside the workspace (readouts walk it) and shared: the template database is built once.
    XDG_CACHE_HOME: TEST_CACHE_HOME,
    PATH: process.env.PATH,
    // npm run by a test must not check for updates or write a cache in the background.
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    ...extra,
  };
}

export async function makeTestApp(
  options: TestAppOptions = {},
): Promise<App & { memoryLog: ReturnType<typeof createMemoryLogger> }> {
  const workspace = options.workspace ?? tmpWorkspace({ files: options.files, git: options.git });
  const env = options.env ?? isolatedEnv(workspace);
  if (options.config) writeFileSync(join(workspace, 'svc.toml'), stringify(options.config));
  if (options.globalConfig) {
    const dir = join(env.XDG_CONFIG_HOME ?? join(workspace, '.home', '.config'), 'svc');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'svc.toml'), stringify(options.globalConfig));
  }
  const memoryLog = createMemoryLogger();
  const app = await createApp({
    clock: testClock(),
    ids: createSequentialIds(),
    log: memoryLog,
    ...options,
    workspace,
    env,
  });
  app.runtime.ready = options.ready ?? true;
  onTestFinished(() => app.close());
  return Object.assign(app, { memoryLog });
}
