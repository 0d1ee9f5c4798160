import { mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeDirs } from './make-dirs';

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'svc-make-dirs-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('makeDirs', () => {
  it('makes a directory and its missing ancestors, with the mode; an existing one is fine', () => {
    const root = temp();
    const deep = join(root, 'a', 'b', 'c');
    makeDirs(deep, 0o700);
    expect(statSync(deep).isDirectory()).toBe(true);
    expect(statSync(join(root, 'a')).mode & 0o777).toBe(0o700);
    expect(() => makeDirs(deep)).not.toThrow();
    symlinkSync(join(root, 'a'), join(root, 'link'));
    expect(() => makeDirs(join(root, 'link'))).not.toThrow();
    expect(() => makeDirs(join(root, 'link', 'd'))).not.toThrow();
    expect(statSync(join(root, 'a', 'd')).isDirectory()).toBe(true);
  });

  it("throws the system's error for a file in the way and under a dangling symlink", () => {
    const root = temp();
    writeFileSync(join(root, 'file'), '');
    expect(() => makeDirs(join(root, 'file'))).toThrow(expect.objectContaining({ code: 'EEXIST' }));
    expect(() => makeDirs(join(root, 'file', 'x'))).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
    symlinkSync(join(root, 'nowhere'), join(root, 'dangling'));
    expect(() => makeDirs(join(root, 'dangling', 'x'))).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  });

  it.runIf(process.platform === 'linux')(
    'ends with ENOENT under /proc, where mkdirSync({ recursive: true }) never returns',
    () => {
      expect(() => makeDirs('/proc/svc-make-dirs/x')).toThrow(
        expect.objectContaining({ code: 'ENOENT', path: '/proc/svc-make-dirs' }),
      );
    },
  );
});
