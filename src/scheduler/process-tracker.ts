/**
 * The process tracker (`app.processes`): the child processes this svc process runs, for
 * `daemon_status.spawn_isolation_audit` (TOOLS-30). Parts that spawn register their children
 * (`register`, then `exited`/`cleanedUp`); children nobody registered are still found — background
 * jobs from the workspace, and on Linux every direct child from /proc, matched by command line to
 * the MCP stdio servers, language servers and vendor CLI providers of the config, and to bash
 * commands of runs. Each child is classified:
 *
 * - session_only: works for one session and ends with it (bash commands and background jobs);
 * - runtime_backed: owned by the runtime, shared by every session (MCP stdio servers, language
 *   servers, daemons this process started);
 * - mixed: runtime-owned but started for a session's work (vendor CLI and ACP provider children),
 *   or a child svc cannot attribute.
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { Config } from '../config/schema';
import type { JobInfo } from '../workspace/jobs';

export type Isolation = 'session_only' | 'runtime_backed' | 'mixed';
export type ChildKind =
  | 'bash_command'
  | 'bash_job'
  | 'mcp_stdio'
  | 'language_server'
  | 'vendor_cli'
  | 'acp'
  | 'daemon'
  | 'other';

export interface TrackedChild {
  pid: number;
  kind: ChildKind;
  label: string;
  session_id: string | null;
  isolation: Isolation;
  /** registered: the spawner told the tracker; job: the workspace job table; discovered: /proc. */
  source: 'registered' | 'job' | 'discovered';
  started_at: number | null;
}

export interface SpawnIsolationAudit {
  /** session_only / runtime_backed when every child is; mixed when both (or any mixed); none without children. */
  classification: Isolation | 'none';
  children: TrackedChild[];
  counts: Record<Isolation, number>;
  counters: {
    /** Children registered or seen since this process started. */
    spawned_total: number;
    exited_total: number;
    /** Children svc stopped itself (cancel, timeout, job_kill, shutdown). */
    cleaned_up_total: number;
    running: number;
    /** Session-only children whose session has no active run any more (candidates for cleanup). */
    orphaned: number;
  };
  discovery: 'proc' | 'registered_only';
}

export interface ProcessHandle {
  exited(): void;
  /** svc stopped it (counts as cleaned up, and as exited). */
  cleanedUp(): void;
}

export interface ProcessTracker {
  register(input: {
    pid: number;
    kind: ChildKind;
    label: string;
    sessionId?: string | null;
    isolation?: Isolation;
  }): ProcessHandle;
  audit(context: { config: Config; jobs: JobInfo[]; activeSessions: Set<string> }): SpawnIsolationAudit;
}

const DEFAULT_ISOLATION: Record<ChildKind, Isolation> = {
  bash_command: 'session_only',
  bash_job: 'session_only',
  mcp_stdio: 'runtime_backed',
  language_server: 'runtime_backed',
  daemon: 'runtime_backed',
  vendor_cli: 'mixed',
  acp: 'mixed',
  other: 'mixed',
};

export function createProcessTracker(deps: {
  now: () => number;
  pid?: number;
  procRoot?: string;
}): ProcessTracker {
  const registered = new Map<number, TrackedChild>();
  const seen = new Set<number>();
  let spawned = 0;
  let exited = 0;
  let cleaned = 0;
  const selfPid = deps.pid ?? process.pid;
  const procRoot = deps.procRoot ?? '/proc';

  return {
    register(input) {
      const child: TrackedChild = {
        pid: input.pid,
        kind: input.kind,
        label: input.label,
        session_id: input.sessionId ?? null,
        isolation: input.isolation ?? DEFAULT_ISOLATION[input.kind],
        source: 'registered',
        started_at: deps.now(),
      };
      registered.set(input.pid, child);
      seen.add(input.pid);
      spawned++;
      let done = false;
      const end = (byUs: boolean) => {
        if (done) return;
        done = true;
        registered.delete(input.pid);
        exited++;
        if (byUs) cleaned++;
      };
      return { exited: () => end(false), cleanedUp: () => end(true) };
    },
    audit(context) {
      const children = new Map<number, TrackedChild>();
      for (const [pid, child] of registered) {
        if (alive(pid)) children.set(pid, child);
        else {
          registered.delete(pid);
          exited++;
        }
      }
      let jobExited = 0;
      let jobKilled = 0;
      for (const job of context.jobs) {
        if (job.pid === undefined || job.pid === null) continue;
        if (!seen.has(job.pid)) {
          seen.add(job.pid);
          spawned++;
        }
        if (job.status === 'running') {
          children.set(job.pid, {
            pid: job.pid,
            kind: 'bash_job',
            label: `job ${job.job_id}: ${oneLine(job.command)}`,
            session_id: job.session_id,
            isolation: job.session_id ? 'session_only' : 'mixed',
            source: 'job',
            started_at: job.started_at,
          });
        } else if (job.status === 'killed') jobKilled++;
        else jobExited++;
      }
      const discovered = discover(procRoot, selfPid);
      for (const proc of discovered ?? []) {
        if (children.has(proc.pid)) continue;
        if (!seen.has(proc.pid)) {
          seen.add(proc.pid);
          spawned++;
        }
        children.set(proc.pid, {
          ...classify(proc.argv, context.config),
          pid: proc.pid,
          source: 'discovered',
          started_at: null,
          session_id: null,
        });
      }
      const list = [...children.values()].sort((a, b) => a.pid - b.pid);
      const counts: Record<Isolation, number> = { session_only: 0, runtime_backed: 0, mixed: 0 };
      for (const child of list) counts[child.isolation]++;
      const kinds = (Object.keys(counts) as Isolation[]).filter((k) => counts[k] > 0);
      return {
        classification: kinds.length === 0 ? 'none' : kinds.length === 1 ? kinds[0] : 'mixed',
        children: list,
        counts,
        counters: {
          spawned_total: spawned,
          exited_total: exited + jobExited + jobKilled,
          cleaned_up_total: cleaned + jobKilled,
          running: list.length,
          orphaned: list.filter(
            (c) =>
              c.isolation === 'session_only' &&
              c.session_id !== null &&
              !context.activeSessions.has(c.session_id) &&
              c.kind !== 'bash_job',
          ).length,
        },
        discovery: discovered ? 'proc' : 'registered_only',
      };
    },
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Direct children of `parent` from /proc (Linux); undefined where /proc is not there. */
function discover(procRoot: string, parent: number): { pid: number; argv: string[] }[] | undefined {
  let entries: string[];
  try {
    entries = readdirSync(procRoot);
  } catch {
    return undefined;
  }
  const out: { pid: number; argv: string[] }[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`${procRoot}/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …: comm may hold spaces and parens, so split after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== parent) continue;
      const argv = readFileSync(`${procRoot}/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (argv.length === 0) continue; // a zombie: gone already
      out.push({ pid: Number(entry), argv });
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

function classify(
  argv: string[],
  config: Config,
): Omit<TrackedChild, 'pid' | 'source' | 'started_at' | 'session_id'> {
  const command = argv[0] ?? '';
  const name = basename(command);
  const line = oneLine(argv.join(' '));
  if (/^(ba)?sh$/.test(name) && argv.includes('-c') && argv.includes('--noprofile')) {
    return { kind: 'bash_command', label: line, isolation: 'session_only' };
  }
  const matches = (configured: string | undefined) =>
    configured !== undefined &&
    (command === configured ||
      name === basename(configured) ||
      argv.some((a) => basename(a) === basename(configured)));
  for (const [id, server] of Object.entries(config.mcp)) {
    if (matches(server.command))
      return { kind: 'mcp_stdio', label: `mcp ${id}: ${line}`, isolation: 'runtime_backed' };
  }
  for (const [id, server] of Object.entries(config.lsp)) {
    if (matches(server.command))
      return { kind: 'language_server', label: `lsp ${id}: ${line}`, isolation: 'runtime_backed' };
  }
  for (const [id, provider] of Object.entries(config.providers)) {
    if (matches(provider.command)) {
      return {
        kind: provider.type === 'acp' ? 'acp' : 'vendor_cli',
        label: `provider ${id}: ${line}`,
        isolation: 'mixed',
      };
    }
  }
  if (argv.includes('service') && argv.includes('start'))
    return { kind: 'daemon', label: line, isolation: 'runtime_backed' };
  return { kind: 'other', label: line, isolation: 'mixed' };
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}
