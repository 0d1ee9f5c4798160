/**
 * A realpath'd temp directory that removes itself after the test, optionally a git repo with a
 * fixed identity, optionally pre-filled with files.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { onTestFinished } from 'vitest';

export interface TmpWorkspaceOptions {
  files?: Record<string, string>;
  git?: boolean;
  /** Keep the directory (debugging). */
  keep?: boolean;
}

export function tmpWorkspace(options: TmpWorkspaceOptions = {}): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'svc-test-')));
  writeFiles(dir, options.files ?? {});
  if (options.git) {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
    git('init', '-q', '-b', 'main');
    git('config', 'user.email', 'test@example.com');
    git('config', 'user.name', 'svc test');
    git('config', 'commit.gpgsign', 'false');
    git('add', '-A');
    git('commit', '-q', '--allow-empty', '-m', 'initial');
  }
  if (!options.keep) {
    try {
      // A process the test started (npm writing its cache or log) may still be writing while the
      // tree is removed: retry on ENOTEMPTY/EBUSY instead of failing a passing test.
      // If it still cannot be removed, the directory is left in the temp dir: a cleanup that
      // loses that race says nothing about the test.
      onTestFinished(() => {
        try {
          rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
        } catch {
          // left behind in tmpdir()
        }
      });
    } catch {
      // Called outside a test (beforeAll): the caller cleans up.
    }
  }
  return dir;
}

export function writeFiles(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    const full = join(root, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
  }
}
