/**
 * The ProcessRepository contract (issue 18): `pending` on every backend, run on SQLite and
 * PostgreSQL by ./processes.contract.test.ts. Pins: only `process_started` since the given time,
 * oldest first; an exit or a reap of the same pid on the same run ends it (another pid or another
 * run does not); the limit; the payload parsed.
 */
import { expect, it } from 'vitest';
import type { ProcessRepository } from '../../../src/runs/process-repository';

export interface OpenedProcesses {
  processes: ProcessRepository;
  /** Adds a session `s1` and the runs (queued, of `s1`). */
  addRuns(ids: string[]): Promise<void>;
  addEvent(
    runId: string,
    seq: number,
    type: string,
    payload: Record<string, unknown>,
    at: number,
  ): Promise<void>;
  close(): Promise<void>;
}

export function processesContract(open: () => Promise<OpenedProcesses>): void {
  const withProcesses = (fn: (o: OpenedProcesses) => Promise<void>) => async () => {
    const o = await open();
    try {
      await o.addRuns(['r1', 'r2']);
      await fn(o);
    } finally {
      await o.close();
    }
  };

  it(
    'STORE-PG-proc: pending lists started processes with no end, oldest first, since a time',
    withProcesses(async ({ processes, addEvent }) => {
      await addEvent('r1', 1, 'process_started', { pid: 10, kind: 'bash', owner: { pid: 1 } }, 100);
      await addEvent('r1', 2, 'process_started', { pid: 11, kind: 'job' }, 200);
      await addEvent('r2', 1, 'process_started', { pid: 10, kind: 'bash' }, 300);
      await addEvent('r1', 3, 'process_started', { pid: 12 }, 50);
      await addEvent('r1', 4, 'process_exited', { pid: 11 }, 400);
      await addEvent('r1', 5, 'tool_call', { pid: 13 }, 400);
      expect(await processes.pending(100)).toEqual([
        { run_id: 'r1', session_id: 's1', payload: { pid: 10, kind: 'bash', owner: { pid: 1 } } },
        { run_id: 'r2', session_id: 's1', payload: { pid: 10, kind: 'bash' } },
      ]);
      await addEvent('r2', 2, 'process_reaped', { pid: 10, killed: [] }, 500);
      expect(await processes.pending(0)).toEqual([
        { run_id: 'r1', session_id: 's1', payload: { pid: 10, kind: 'bash', owner: { pid: 1 } } },
        { run_id: 'r1', session_id: 's1', payload: { pid: 12 } },
      ]);
      expect((await processes.pending(0, 1)).map((p) => p.payload.pid)).toEqual([10]);
      expect(await processes.pending(1000)).toEqual([]);
    }),
  );
}
