import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import { OutputCollector } from './process';

describe('OutputCollector', () => {
  it('keeps everything under the cap, and head + tail with a full spill file over it', () => {
    const dir = tmpWorkspace();
    const data = Buffer.from(Array.from({ length: 5000 }, (_, i) => `${i}\n`).join(''));
    for (const [max, step] of [
      [100_000, 7],
      [1000, 1],
      [1000, 333],
      [1000, 5000],
      [1000, 100_000],
      [999, 13],
    ]) {
      const spill = join(dir, `spill-${max}-${step}.txt`);
      const collector = new OutputCollector(max, () => spill);
      for (let at = 0; at < data.length; at += step) collector.push(data.subarray(at, at + step));
      const out = collector.finish();
      if (data.length <= max) {
        expect(out).toEqual({ text: data.toString(), truncated: false, omittedBytes: 0 });
        continue;
      }
      const head = data.subarray(0, Math.floor(max / 2)).toString();
      const tail = data.subarray(data.length - (max - Math.floor(max / 2))).toString();
      const omitted = data.length - max;
      expect(out, `max ${max} step ${step}`).toEqual({
        text: `${head}\n\n… [${omitted} bytes of output omitted] …\n\n${tail}`,
        truncated: true,
        omittedBytes: omitted,
      });
      expect(readFileSync(spill).equals(data), `spill max ${max} step ${step}`).toBe(true);
    }
  });
});

describe('OutputCollector spill limit', () => {
  it('keeps at most spillLimit bytes in the spill file and says so in the text', () => {
    const dir = tmpWorkspace();
    const spill = join(dir, 'spill-limited.txt');
    const collector = new OutputCollector(100, () => spill, 1000);
    const data = Buffer.from('y\n'.repeat(5000));
    for (let at = 0; at < data.length; at += 64) collector.push(data.subarray(at, at + 64));
    expect(collector.spillCut).toBe(true);
    const out = collector.finish();
    expect(readFileSync(spill).equals(data.subarray(0, 1000))).toBe(true);
    expect(out.truncated).toBe(true);
    expect(out.omittedBytes).toBe(data.length - 100);
    expect(out.text).toContain(
      `[${data.length - 100} bytes of output omitted; the output file keeps only its first 1000 bytes]`,
    );
  });
});

describe('pruneOldFiles', () => {
  it('removes kept output older than the retention, once per directory', async () => {
    const { utimesSync, writeFileSync, existsSync, mkdirSync } = await import('node:fs');
    const { pruneOldFiles, OUTPUT_RETENTION_MS } = await import('./process');
    const dir = join(tmpWorkspace(), 'tool-output');
    mkdirSync(dir);
    writeFileSync(join(dir, 'old.txt'), 'old');
    writeFileSync(join(dir, 'new.txt'), 'new');
    const old = new Date(Date.now() - OUTPUT_RETENTION_MS - 60_000);
    utimesSync(join(dir, 'old.txt'), old, old);
    pruneOldFiles(dir);
    expect(existsSync(join(dir, 'old.txt'))).toBe(false);
    expect(existsSync(join(dir, 'new.txt'))).toBe(true);
  });
});
