/**
 * Service processes of a data dir (`app.daemons`, table `service_processes`): every
 * `svc service start http|autopilot` registers itself with its pid, URL and argv, heartbeats, and
 * marks itself stopped at shutdown. Other processes (the CLI, the lifecycle tools) read it to know
 * which daemons are live, where they listen and how to restart them. A row whose pid is gone, whose
 * heartbeat is stale or in the future (beyond a small clock skew), or whose recorded process
 * identity (pid start time and boot id, src/sandbox/proc.ts) names another process counts as not
 * alive. A row without an identity (written by an older svc, or where /proc is missing) cannot be
 * verified: it may be listed, but ./lifecycle.ts never signals it.
 * @module
 */
import { hostname } from 'node:os';
import { identify, type ProcessIdentity, stillRunning } from '../sandbox/proc';
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
  /** The process as registered (start time, boot id); null on older rows or without /proc. */
  identity: ProcessIdentity | null;
}

/**
 * Whether the row's pid is still the process that registered: `match`, `mismatch` (the pid is gone
 * or now another process: a stale row), or `unverifiable` (no identity recorded).
 */
export type IdentityCheck = 'match' | 'mismatch' | 'unverifiable';

export interface DaemonView extends DaemonRow {
  alive: boolean;
  identity_check: IdentityCheck;
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
/** A heartbeat further in the future than this (ms) is not believed: the row counts as stale. */
export const FUTURE_SKEW_MS = 5_000;

/** The heartbeat is recent and not (beyond FUTURE_SKEW_MS) in the future. */
export function heartbeatFresh(heartbeatAt: number, now: number): boolean {
  const age = now - heartbeatAt;
  return age < STALE_AFTER_MS && age >= -FUTURE_SKEW_MS;
}

export function parseIdentity(pid: number, text: string | null | undefined): ProcessIdentity | null {
  if (!text) return null;
  try {
    const value = JSON.parse(text) as { start_time?: unknown; boot_id?: unknown };
    if (typeof value.start_time !== 'number' || typeof value.boot_id !== 'string') return null;
    return { pid, start_time: value.start_time, boot_id: value.boot_id };
  } catch {
    return null;
  }
}

export function checkIdentity(identity: ProcessIdentity | null): IdentityCheck {
  if (!identity) return 'unverifiable';
  return stillRunning(identity) ? 'match' : 'mismatch';
}

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
    const identity = parseIdentity(row.pid, row.identity);
    const sameHost = row.host === host;
    const view: DaemonView = {
      ...row,
      argv: JSON.parse(row.argv) as string[],
      cwd: typeof status.cwd === 'string' ? status.cwd : null,
      status,
      identity,
      // Another host's /proc says nothing about its pid.
      identity_check: sameHost ? checkIdentity(identity) : identity ? 'mismatch' : 'unverifiable',
      alive: false,
      self: row.pid === self && sameHost && row.stopped_at === null,
    };
    view.alive =
      row.stopped_at === null &&
      sameHost &&
      pidAlive(row.pid) &&
      view.identity_check !== 'mismatch' &&
      (view.self || heartbeatFresh(row.heartbeat_at, deps.clock.now()));
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
        argv: JSON.stringify(recordableArgv(input.argv)),
        worker: input.worker,
        started_at: now,
        heartbeat_at: now,
        status: JSON.stringify({ cwd: input.cwd }),
        identity: identityText(self),
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

/** This process's identity as stored, or null where it cannot be known (no /proc). */
function identityText(pid: number): string | null {
  const identity = identify(pid);
  if (identity.start_time === null || identity.boot_id === null) return null;
  return JSON.stringify({ start_time: identity.start_time, boot_id: identity.boot_id });
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A flag whose value is a secret (`--token`, `--api-key`, `--password=…`). */
const SECRET_FLAG = /^--?[\w-]*(token|key|secret|password|passwd)$/i;

/**
 * The argv a row records, secret flag values replaced: the row is for showing what runs (restart
 * rebuilds its command from kind, host and port), and `--token` in svc.db was readable by anyone
 * who can read the database (stop 81, found by probing).
 */
export function recordableArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const eq = arg.indexOf('=');
    if (arg.startsWith('-') && eq > 0 && SECRET_FLAG.test(arg.slice(0, eq)))
      out.push(`${arg.slice(0, eq)}=[REDACTED]`);
    else if (SECRET_FLAG.test(arg) && i + 1 < argv.length) {
      out.push(arg, '[REDACTED]');
      i++;
    } else out.push(arg);
  }
  return out;
}
