import { statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { createRedactor } from '../redact';
import type { CommandSpawner, SpawnRequest } from '../sandbox/spawn';
import { createSequentialIds, systemClock } from '../util/ids';
import { createJobs } from './jobs';

/** A spawner whose one job prints what the test pushes, in the chunks the test chooses. */
function scriptedSpawner() {
  let output: ((chunk: Buffer) => void) | undefined;
  let exit: (() => void) | undefined;
  const spawner = {
    spawn(request: SpawnRequest) {
      output = request.onOutput;
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
        exit = () => resolve({ code: 0, signal: null });
      });
      return {
        child: { pid: 4242 },
        exited,
        kill: async () => exit?.(),
        reap: () => {},
        identity: undefined,
        sandboxed: false,
      };
    },
  } as unknown as CommandSpawner;
  return { spawner, print: (text: string) => output?.(Buffer.from(text)), exit: () => exit?.() };
}

describe('background job logs', () => {
  it('rotate past the segment size: two segments on disk, offsets from the job start, the rotated-away part reported skipped', async () => {
    const dataDir = tmpWorkspace();
    const job = scriptedSpawner();
    const jobs = createJobs({
      dataDir,
      ids: createSequentialIds(),
      clock: systemClock,
      redactor: createRedactor(),
      spawner: job.spawner,
      logSegmentBytes: 10_000,
    });
    const { id, logPath } = jobs.start({ command: 'numbers', cwd: dataDir, plan: null });
    // 6,000 numbered lines of 6 bytes ("00001\n" …), 100 lines a chunk: 36,000 bytes in 600-byte
    // chunks. Rotations at 9,600 and 19,200 and 28,800: the log keeps [19,200, 36,000).
    for (let line = 1; line <= 6000; line += 100) {
      job.print(Array.from({ length: 100 }, (_, i) => `${String(line + i).padStart(5, '0')}\n`).join(''));
    }
    job.exit();
    const done = await jobs.output(id, { waitSeconds: 5, maxBytes: 1_000_000, offset: 0 });
    expect(done.status).toBe('exited');
    expect(done.output_bytes).toBe(36_000);
    expect(statSync(`${logPath}.1`).size).toBe(9_600);
    expect(statSync(logPath).size).toBe(7_200);
    expect(done).toMatchObject({ offset: 0, next_offset: 36_000, skipped_bytes: 19_200 });
    // What is kept is contiguous across the two files: lines 3201 … 6000.
    const lines = done.output.split('\n').filter(Boolean);
    expect(lines).toEqual(Array.from({ length: 2800 }, (_, i) => String(3201 + i).padStart(5, '0')));
    // An offset inside the kept range reads exactly from there, across the segment boundary.
    const part = await jobs.output(id, { maxBytes: 600, offset: 28_500 });
    expect(part).toMatchObject({ offset: 28_500, skipped_bytes: 0, next_offset: 29_100 });
    expect(part.output).toBe(
      Array.from({ length: 100 }, (_, i) => `${String(4751 + i).padStart(5, '0')}\n`).join(''),
    );
  });
});
