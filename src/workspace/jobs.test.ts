import { statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { createRedactor } from '../redact';
import { createCommandSpawner } from '../sandbox/spawn';
import { createSequentialIds, systemClock } from '../util/ids';
import { createJobs } from './jobs';

function jobsIn(dataDir: string, logSegmentBytes: number) {
  const spawner = createCommandSpawner({
    sandbox: {
      plan: () => undefined,
      envPolicy: () => ({ include: [], set: {} }),
      credentialNames: () => new Set(),
    },
    env: { PATH: process.env.PATH },
  });
  return createJobs({
    dataDir,
    ids: createSequentialIds(),
    clock: systemClock,
    redactor: createRedactor(),
    spawner,
    logSegmentBytes,
  });
}

describe('background job logs', () => {
  it('rotate past the segment size: two segments on disk, offsets from the job start, the rotated-away part reported skipped', async () => {
    const dataDir = tmpWorkspace();
    const jobs = jobsIn(dataDir, 10_000);
    // 6,000 numbered lines of 6 bytes ("00001\n" …): 36,000 bytes, more than three segments.
    const command = `for i in $(seq 1 6000); do printf '%05d\\n' $i; done`;
    const { id, logPath } = jobs.start({ command, cwd: dataDir, plan: null });
    const done = await jobs.output(id, { waitSeconds: 30, maxBytes: 1_000_000, offset: 0 });
    expect(done.status).toBe('exited');
    expect(done.output_bytes).toBe(36_000);
    // The log keeps at most two segments: the oldest output is gone, and the read says how much.
    expect(statSync(logPath).size + statSync(`${logPath}.1`).size).toBeLessThanOrEqual(20_000);
    expect(done.skipped_bytes).toBeGreaterThan(0);
    expect(done.offset).toBe(0);
    expect(done.next_offset).toBe(36_000);
    const kept = done.output;
    expect(kept.length).toBe(36_000 - done.skipped_bytes);
    expect(kept.endsWith('06000\n')).toBe(true);
    // What is kept is contiguous across the two files.
    const lines = kept.split('\n').filter(Boolean);
    const first = Number(lines[0]);
    expect(lines).toEqual(Array.from({ length: lines.length }, (_, i) => String(first + i).padStart(5, '0')));
    // An offset inside the kept range reads exactly from there, across the segment boundary.
    const at = 36_000 - 12_000;
    const part = await jobs.output(id, { maxBytes: 600, offset: at });
    expect(part.offset).toBe(at);
    expect(part.skipped_bytes).toBe(0);
    expect(part.output).toBe(
      Array.from({ length: 100 }, (_, i) => `${String(4001 + i).padStart(5, '0')}\n`).join(''),
    );
  });
});
