/**
 * Bring a plugin's files into a staging directory: a local directory is copied (without `.git`),
 * a git source is cloned (`git clone --depth 1`, optionally at a branch or tag). Git sources are
 * URLs (`file://`, `https://`, `ssh://`, `git://`, `git@host:path`) or paths ending in `.git`.
 * A local directory needs its manifest before anything is copied, and must neither hold the data
 * dir nor be inside it; both kinds follow the limits and rules of ./copy-plugin.ts.
 * @module
 */
import { execFile } from 'node:child_process';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { SvcError } from '../errors';
import { printable } from '../util/terminal-text';
import { checkPluginTree, copyPluginTree } from './copy-plugin';
import { MANIFEST_FILE, within } from './manifest';

export type SourceType = 'path' | 'git';

export interface ResolvedSource {
  type: SourceType;
  /** Absolute path for `path`; the URL or path as given for `git`. */
  location: string;
}

const GIT_URL = /^(file|https?|ssh|git):\/\//i;
const SCP_LIKE = /^[\w.-]+@[\w.-]+:/;

/** The source as given (a directory, or a git URL); `dataDir` is svc's data dir, never a plugin. */
export function resolveSource(source: string, workspace: string, dataDir: string): ResolvedSource {
  const trimmed = source.trim();
  if (!trimmed) throw new SvcError('invalid_input', 'source: give a plugin directory or a git URL');
  const bare = trimmed.replace(/^git\+/, '');
  if (GIT_URL.test(bare) || SCP_LIKE.test(bare)) return { type: 'git', location: bare };
  const path = isAbsolute(bare) ? bare : resolve(workspace, bare);
  if (bare.endsWith('.git')) return { type: 'git', location: path };
  if (!existsSync(path)) throw new SvcError('not_found', `source: no directory ${path}`);
  if (!statSync(path).isDirectory())
    throw new SvcError('invalid_input', `source: ${path} is not a directory`);
  if (!existsSync(join(path, MANIFEST_FILE))) {
    throw new SvcError(
      'invalid_input',
      `source: no ${MANIFEST_FILE} at the root of ${path}; a plugin needs one (name = "…")`,
    );
  }
  const real = realpathSync(path);
  const data = existsSync(dataDir) ? realpathSync(dataDir) : resolve(dataDir);
  if (within(real, data) || within(data, real)) {
    throw new SvcError(
      'invalid_input',
      `source: ${path} ${within(real, data) ? 'holds' : 'is inside'} svc's data dir ${dataDir}; move the plugin into a directory of its own`,
    );
  }
  return { type: 'path', location: path };
}

/** Fill `dest` (which must not exist) from the source; returns the commit for git sources. */
export async function fetchSource(
  source: ResolvedSource,
  dest: string,
  options: { ref?: string; signal?: AbortSignal; env: Readonly<Record<string, string | undefined>> },
): Promise<{ commit: string | null }> {
  if (source.type === 'path') {
    if (options.ref) throw new SvcError('invalid_input', 'ref: only git sources have refs');
    await copyPluginTree(source.location, dest, { signal: options.signal }).catch((error: unknown) => {
      throw fileError(error, 'copy', source.location);
    });
    return { commit: null };
  }
  const args = ['clone', '--depth', '1', '--quiet'];
  if (options.ref) args.push('--branch', options.ref);
  args.push('--', source.location, dest);
  await git(args, undefined, options);
  await checkPluginTree(dest, { signal: options.signal }).catch((error: unknown) => {
    throw fileError(error, 'check the clone of', source.location);
  });
  const commit = (await git(['rev-parse', 'HEAD'], dest, options)).trim();
  return { commit: commit || null };
}

/** A file system error of a copy (EACCES, ENOSPC…) as a clear error instead of an internal one. */
function fileError(error: unknown, what: string, location: string): unknown {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (SvcError.is(error) || typeof code !== 'string') return error;
  return new SvcError(
    'unavailable',
    `source: could not ${what} ${location}: ${printable((error as Error).message, 300)}`,
    { cause: error },
  );
}

function git(
  args: string[],
  cwd: string | undefined,
  options: { signal?: AbortSignal; env: Readonly<Record<string, string | undefined>> },
): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(
      'git',
      args,
      {
        cwd,
        signal: options.signal,
        timeout: 120_000,
        maxBuffer: 4 * 1024 * 1024,
        env: {
          ...Object.fromEntries(Object.entries(options.env).filter(([, v]) => v !== undefined)),
          GIT_TERMINAL_PROMPT: '0',
        } as NodeJS.ProcessEnv,
      },
      (error, stdout, stderr) => {
        if (!error) return resolvePromise(stdout);
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
          return reject(
            new SvcError('unavailable', 'git is not installed: git sources need the git command'),
          );
        }
        if (options.signal?.aborted) return reject(new SvcError('cancelled', 'git was cancelled'));
        const reason = String(stderr || error.message)
          .trim()
          .split('\n')
          .slice(-3)
          .join(' ');
        reject(new SvcError('unavailable', `git ${args[0]} failed: ${reason}`));
      },
    );
  });
}
