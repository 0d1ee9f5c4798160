/**
 * The bubblewrap probe's result kept in the user cache dir (issue 17): a later process reuses it
 * instead of starting bwrap again, unless the executable changed, the cache is corrupt or the
 * caller asks for a fresh probe. A stand-in `bwrap` logs each start.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { probeBwrap } from '../../src/sandbox/bwrap';

function fakeBwrap(exitCode = 0) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-probe-cache-'));
  const bin = join(dir, 'bwrap');
  const log = join(dir, 'starts.log');
  const write = (code: number) => {
    writeFileSync(
      bin,
      `#!/bin/sh\necho start >> '${log}'\nif [ "$1" = --version ]; then echo 'bubblewrap 0.8.0'; exit 0; fi\necho 'bwrap: no userns' >&2\nexit ${code}\n`,
    );
    chmodSync(bin, 0o755);
  };
  write(exitCode);
  const starts = () => {
    try {
      return readFileSync(log, 'utf8').split('\n').filter(Boolean).length;
    } catch {
      return 0;
    }
  };
  return { dir, bin, cache: join(dir, 'cache'), starts, write };
}

describe('bwrap probe cache', () => {
  it('reuses a stored result and starts no process', () => {
    const f = fakeBwrap();
    const first = probeBwrap(f.bin, {}, 'none', { dir: f.cache });
    expect(first).toEqual({ path: f.bin, version: '0.8.0', usable: true, proc: 'fresh', error: null });
    expect(f.starts()).toBe(2);
    expect(probeBwrap(f.bin, {}, 'none', { dir: f.cache })).toEqual(first);
    expect(f.starts()).toBe(2);
    // without a cache, or asked to refresh, it probes
    probeBwrap(f.bin, {}, 'none');
    expect(f.starts()).toBe(4);
    probeBwrap(f.bin, {}, 'none', { dir: f.cache, refresh: true });
    expect(f.starts()).toBe(6);
    // the other network layout is its own entry
    probeBwrap(f.bin, {}, 'host', { dir: f.cache });
    expect(f.starts()).toBe(8);
  });

  it('probes again when the executable changes', () => {
    const f = fakeBwrap();
    expect(probeBwrap(f.bin, {}, 'none', { dir: f.cache }).usable).toBe(true);
    f.write(1); // a different size, and a new mtime
    const again = probeBwrap(f.bin, {}, 'none', { dir: f.cache });
    expect(again).toMatchObject({ usable: false, proc: null, error: expect.stringContaining('no userns') });
    expect(f.starts()).toBe(2 + 3);
    expect(probeBwrap(f.bin, {}, 'none', { dir: f.cache })).toEqual(again);
    expect(f.starts()).toBe(5);
  });

  it('ignores a corrupt or foreign cache file and rewrites it', () => {
    const f = fakeBwrap();
    probeBwrap(f.bin, {}, 'none', { dir: f.cache });
    const [name] = readdirSync(f.cache);
    const file = join(f.cache, name);
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    for (const bad of [
      '{not json',
      JSON.stringify({ ...stored, probe: { ...stored.probe, path: '/elsewhere/bwrap' } }),
      JSON.stringify({ ...stored, probe: { ...stored.probe, usable: 'yes' } }),
      JSON.stringify({ ...stored, key: 'another machine' }),
      JSON.stringify({ ...stored, at: 0 }),
    ]) {
      writeFileSync(file, bad);
      const before = f.starts();
      expect(probeBwrap(f.bin, {}, 'none', { dir: f.cache }).usable).toBe(true);
      expect(f.starts()).toBe(before + 2);
      expect(JSON.parse(readFileSync(file, 'utf8')).probe).toEqual(stored.probe);
    }
  });

  it('still probes when the cache dir cannot be written', () => {
    const f = fakeBwrap();
    const blocked = join(f.dir, 'a-file');
    writeFileSync(blocked, '');
    expect(probeBwrap(f.bin, {}, 'none', { dir: join(blocked, 'cache') }).usable).toBe(true);
    expect(probeBwrap(f.bin, {}, 'none', { dir: join(blocked, 'cache') }).usable).toBe(true);
    expect(f.starts()).toBe(4);
  });
});
