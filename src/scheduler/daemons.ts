/**
 * Service processes of a data dir (`app.daemons`, table `service_processes`): every
 * `svc service start http|autopilot` registers itself with its pid, URL and argv, heartbeats, and
 * marks itself stopped at shutdown. Other processes (the CLI, the lifecycle tools) read it to know
 * which daemons are live, where they listen and how to restart them. A row whose pid is gone or
 * whose heartbeat is stale counts as not alive.
 * @module
 */
import { hostname } from 'node:os';
import type { Clock, Ids } from '../util/ids';
import type { DaemonRecord, DaemonRepository } from './daemon-repository';

export type DaemonKind = 'http' | 'autopilot';

export interface DaemonRow {
  id: string;
  kind: DaemonKind;
  pid: number;
  host: string;
  url: string | null;
  argv: string[];
  cwd: string | null;
  worker: string | null;
  started_at: number;
  heartbeat_at: number;
  stopped_at: number | null;
  stop_reason: string | null;
  /** What the process last reported (worker counters, open streams…). */
  status: Record<string, unknown>;
}

export interface DaemonView extends DaemonRow {
  alive: boolean;
  /** This very process. */
  self: boolean;
}

export interface DaemonRegistry {
  register(input: {
    kind: DaemonKind;
    url: string | null;
    argv: string[];
    cwd: string;
    worker: string | null;
  }): Promise<DaemonRow>;
  heartbeat(id: string, status: Record<string, unknown>): Promise<void>;
  stopped(id: string, reason: string): Promise<void>;
  list(options?: { includeStopped?: boolean; limit?: number }): Promise<DaemonView[]>;
  live(kind?: DaemonKind): Promise<DaemonView[]>;
  get(id: string): Promise<DaemonView | undefined>;
}

/** A heartbeat older than this (ms) means the daemon is gone even if its pid was reused. */
export const STALE_AFTER_MS = 60_000;

export function createDaemonRegistry(deps: {
  /** The `service_processes` rows (./daemon-repository.ts, or its PostgreSQL twin). */
  rows: DaemonRepository;
  clock: Clock;
  ids: Ids;
  pid?: number;
}): DaemonRegistry {
  const self = deps.pid ?? process.pid;
  const { rows } = deps;
  const host = hostname();
  const toView = (row: DaemonRecord): DaemonView => {
    const status = JSON.parse(row.status) as Record<string, unknown>;
    const view: DaemonView = {
      ...row,
      argv: JSON.parse(row.argv) as string[],
      cwd: typeof status.cwd === 'string' ? status.cwd : null,
      status,
      alive: false,
      self: row.pid === self && row.host === host && row.stopped_at === null,
    };
    view.alive =
      row.stopped_at === null &&
      row.host === host &&
      pidAlive(row.pid) &&
      (view.self || deps.clock.now() - row.heartbeat_at < STALE_AFTER_MS);
    return view;
  };
  const registry: DaemonRegistry = {
    async register(input) {
      const now = deps.clock.now();
      const id = deps.ids.next('dmn');
      await rows.insert({
        id,
        kind: input.kind,
        pid: self,
        host,
        url: input.url,
        argv: JSON.stringify(input.argv),
        worker: input.worker,
        started_at: now,
        heartbeat_at: now,
        status: JSON.stringify({ cwd: input.cwd }),
      });
      return (await registry.get(id))!;
    },
    async heartbeat(id, status) {
      const current = await registry.get(id);
      await rows.heartbeat(
        id,
        deps.clock.now(),
        JSON.stringify({ ...(current?.cwd ? { cwd: current.cwd } : {}), ...status }),
      );
    },
    async stopped(id, reason) {
      await rows.stopped(id, deps.clock.now(), reason);
    },
    async list(options = {}) {
      return (
        await rows.list({ includeStopped: options.includeStopped === true, limit: options.limit ?? 20 })
      ).map(toView);
    },
    async live(kind) {
      return (await registry.list()).filter((d) => d.alive && (!kind || d.kind === kind));
    },
    async get(id) {
      const row = await rows.get(id);
      return row ? toView(row) : undefined;
    },
  };
  return registry;
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
