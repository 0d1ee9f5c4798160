/**
 * No orphans (issue 15, item 5). Every process svc starts is recorded on its run with its pid and
 * start time (src/sandbox/spawn.ts). When svc dies without stopping them (kill -9 during a bash
 * call, a crash) they keep running; inside bubblewrap they die with svc, outside they survive.
 * The next svc that opens the ledger (its first use marks the dead process's runs interrupted)
 * calls `reap()`: every recorded process whose owner is gone and which is still the same process
 * (same pid, start time and boot) has its process group killed, and a `process_reaped` event on
 * its run says so (`session diagnose` reports it). A pid reused since is never touched.
 * @module
 */
import { hostname } from 'node:os';
import { killSurvivors, type ProcessIdentity, stillRunning } from '../sandbox/proc';
import type { ProcessRepository } from './process-repository';

export interface ReapedProcess {
  run_id: string;
  pid: number;
  kind: string | null;
  command: string | null;
  /** The pids of its group that were still running and were killed (empty: it was gone). */
  killed: number[];
}

export interface ProcessReaper {
  /** Reap what dead svc processes left; returns what was looked at (killed or found gone). */
  reap(): Promise<ReapedProcess[]>;
}

/** Processes started longer ago than this are not looked at any more. */
const WINDOW_MS = 7 * 24 * 60 * 60 * 1000;

export function createProcessReaper(deps: {
  processes: ProcessRepository;
  append: (runId: string, type: string, payload: Record<string, unknown>) => Promise<void>;
  now: () => number;
  host?: string;
  onError?: (error: unknown) => void;
}): ProcessReaper {
  const host = deps.host ?? hostname();
  return {
    async reap() {
      const out: ReapedProcess[] = [];
      let pending: Awaited<ReturnType<ProcessRepository['pending']>>;
      try {
        pending = await deps.processes.pending(deps.now() - WINDOW_MS);
      } catch (error) {
        deps.onError?.(error);
        return out;
      }
      for (const { run_id, payload } of pending) {
        const identity = asIdentity(payload);
        if (!identity || payload.host !== host) continue; // another machine: cannot tell
        const owner = asIdentity(payload.owner);
        if (owner && stillRunning(owner)) continue; // its svc is alive and stops it itself
        const killed = killSurvivors(identity);
        const reaped: ReapedProcess = {
          run_id,
          pid: identity.pid,
          kind: typeof payload.kind === 'string' ? payload.kind : null,
          command: typeof payload.command === 'string' ? payload.command : null,
          killed,
        };
        try {
          await deps.append(run_id, 'process_reaped', {
            pid: identity.pid,
            kind: reaped.kind,
            command: reaped.command,
            killed,
            reason: killed.length
              ? `the svc process (pid ${owner?.pid ?? '?'}) that started it exited without stopping it`
              : 'it had already exited',
          });
        } catch (error) {
          deps.onError?.(error);
        }
        out.push(reaped);
      }
      return out;
    },
  };
}

function asIdentity(value: unknown): ProcessIdentity | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.pid !== 'number') return undefined;
  return {
    pid: v.pid,
    start_time: typeof v.start_time === 'number' ? v.start_time : null,
    boot_id: typeof v.boot_id === 'string' ? v.boot_id : null,
  };
}
