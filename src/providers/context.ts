/**
 * What the providers domain needs from the App, passed explicitly (no App import, so the domain
 * stays below the tools and surfaces layers).
 * @module
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { LoadedConfig } from '../config/load';
import type { Config } from '../config/schema';
import type { EventBus } from '../events/bus';
import type { Logger } from '../log';
import type { Redactor } from '../redact';
import type { Clock } from '../util/ids';
import type { ModelCallSink } from './types';

export type Env = Readonly<Record<string, string | undefined>>;

export interface ProviderDeps {
  config: () => Config;
  loaded: () => LoadedConfig;
  env: Env;
  fetch: typeof fetch;
  dataDir: string;
  workspace: string;
  log: Logger;
  bus: EventBus;
  redactor: Redactor;
  clock: Clock;
  /** Where every model call is reported (the cost ledger); unset, calls go unrecorded. */
  calls?: ModelCallSink;
  /** Wait (backoff); injectable so tests need not sleep. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** The user's home as the App sees it (tests isolate HOME). */
export function homeOf(env: Env): string {
  return env.HOME || env.USERPROFILE || homedir();
}

export function expandHome(path: string, env: Env): string {
  return path === '~' || path.startsWith('~/') ? join(homeOf(env), path.slice(1)) : path;
}

/** A value from the env, with its name; empty strings count as unset. */
export function firstEnv(env: Env, names: readonly string[]): { name: string; value: string } | undefined {
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value.trim() !== '') return { name, value: value.trim() };
  }
  return undefined;
}

/** `SVC_<NAME>` process-local override first, then `<NAME>` (spec, Cloud identity). */
export function withSvcOverrides(names: readonly string[]): string[] {
  return names.flatMap((name) => [`SVC_${name}`, name]);
}

export { isLoopbackUrl } from '../util/loopback';

export function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
