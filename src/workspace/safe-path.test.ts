import { existsSync, lstatSync, mkdirSync, readFileSync, renameSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tmpWorkspace } from '../../test/helpers/tmp-workspace';
import {
  lstatNoFollow,
  PARENT_NOT_DIRECTORY,
  PARENT_SYMLINK,
  pruneEmptyDirsNoFollow,
  readNoFollow,
  removeNoFollow,
  setFdRelative,
} from './safe-path';

// Each case runs with the descriptor-relative walk (Linux) and with the lstat walk (elsewhere).
for (const mode of ['detected', 'lstat walk'] as const) {
  describe(`no-follow workspace file operations (${mode})`, () => {
    const setup = () => {
      if (mode === 'lstat walk') setFdRelative(false);
      const root = tmpWorkspace({ files: { 'd/g': 'mine\n', 'd/e/f': 'deep\n', 'top.txt': 'top\n' } });
      const victim = tmpWorkspace({ files: { g: 'victim\n', 'e/f': 'victim deep\n' } });
      return { root, victim };
    };
    afterEach(() => setFdRelative(undefined));

    it('removes a file, and reports one already gone as absent', () => {
      const { root } = setup();
      expect(removeNoFollow(root, 'd/g')).toEqual({ status: 'removed' });
      expect(existsSync(join(root, 'd/g'))).toBe(false);
      expect(removeNoFollow(root, 'd/g')).toEqual({ status: 'absent' });
      expect(removeNoFollow(root, 'gone/x')).toEqual({ status: 'absent' });
    });

    it('refuses a path whose parent became a symlink, leaving its target alone', () => {
      const { root, victim } = setup();
      renameSync(join(root, 'd'), join(root, 'd.real'));
      symlinkSync(victim, join(root, 'd'));
      expect(removeNoFollow(root, 'd/g')).toEqual({ status: 'skipped', reason: PARENT_SYMLINK });
      expect(removeNoFollow(root, 'd/e/f')).toEqual({ status: 'skipped', reason: PARENT_SYMLINK });
      expect(readFileSync(join(victim, 'g'), 'utf8')).toBe('victim\n');
      expect(readFileSync(join(victim, 'e/f'), 'utf8')).toBe('victim deep\n');
      expect(readNoFollow(root, 'd/g', 1024)).toBeNull();
      expect(lstatNoFollow(root, 'd/g')).toBeUndefined();
      pruneEmptyDirsNoFollow(root, 'd/e');
      expect(existsSync(join(victim, 'e'))).toBe(true);
    });

    it('refuses a path whose parent is a file', () => {
      const { root } = setup();
      expect(removeNoFollow(root, 'top.txt/x')).toEqual({ status: 'skipped', reason: PARENT_NOT_DIRECTORY });
      expect(removeNoFollow(root, '../x')).toMatchObject({ status: 'skipped' });
    });

    it('removes a symlink that is the final component itself, never its target', () => {
      const { root, victim } = setup();
      symlinkSync(join(victim, 'g'), join(root, 'd/link'));
      symlinkSync(join(victim, 'e'), join(root, 'd/dirlink'));
      expect(removeNoFollow(root, 'd/link')).toEqual({ status: 'removed' });
      expect(removeNoFollow(root, 'd/dirlink')).toEqual({ status: 'removed' });
      expect(existsSync(join(root, 'd/link'))).toBe(false);
      expect(existsSync(join(root, 'd/dirlink'))).toBe(false);
      expect(readFileSync(join(victim, 'g'), 'utf8')).toBe('victim\n');
      expect(readFileSync(join(victim, 'e/f'), 'utf8')).toBe('victim deep\n');
    });

    it("reads a file's bytes, a symlink's target path, and nothing too large or not a file", () => {
      const { root, victim } = setup();
      symlinkSync(join(victim, 'g'), join(root, 'd/link'));
      expect(readNoFollow(root, 'd/g', 1024)?.toString()).toBe('mine\n');
      expect(readNoFollow(root, 'd/link', 1024)?.toString()).toBe(join(victim, 'g'));
      expect(readNoFollow(root, 'd/g', 2)).toBeNull();
      expect(readNoFollow(root, 'd/e', 1024)).toBeNull();
      expect(readNoFollow(root, 'd/missing', 1024)).toBeNull();
      expect(lstatNoFollow(root, 'd/link')?.isSymbolicLink()).toBe(true);
    });

    it('prunes emptied directories up to, never including, the root; stops at a symlink', () => {
      const { root, victim } = setup();
      mkdirSync(join(root, 'a/b/c'), { recursive: true });
      pruneEmptyDirsNoFollow(root, 'a/b/c');
      expect(existsSync(join(root, 'a'))).toBe(false);
      expect(existsSync(root)).toBe(true);
      removeNoFollow(root, 'd/e/f');
      pruneEmptyDirsNoFollow(root, 'd/e');
      expect(existsSync(join(root, 'd/e'))).toBe(false);
      expect(existsSync(join(root, 'd'))).toBe(true); // d/g is still there
      mkdirSync(join(victim, 'empty'));
      symlinkSync(join(victim, 'empty'), join(root, 'emptylink'));
      pruneEmptyDirsNoFollow(root, 'emptylink');
      expect(lstatSync(join(root, 'emptylink')).isSymbolicLink()).toBe(true);
      expect(existsSync(join(victim, 'empty'))).toBe(true);
    });
  });
}
