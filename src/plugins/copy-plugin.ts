/**
 * A plugin's files, walked without blocking the process: copied from a local directory into the
 * staging directory, or checked in place after a git clone. Either way the same rules hold:
 * - at most `PLUGIN_LIMITS.bytes` of files and `PLUGIN_LIMITS.entries` files and folders;
 * - only files, folders and symlinks (a FIFO, a socket or a device is refused, naming it);
 * - a symlink must resolve inside the plugin (one to `~/.ssh` or to nothing is refused, naming it);
 *   a copied symlink points to the same place in the copy.
 * `.git` folders are left out (copy) or not walked (check). Errors are `invalid_input`.
 * @module
 */
import { constants, type Stats } from 'node:fs';
import { copyFile, lstat, mkdir, readdir, readlink, realpath, symlink } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { SvcError } from '../errors';
import { printable } from '../util/terminal-text';
import { within } from './manifest';

export interface PluginLimits {
  /** Total size of the plugin's files. */
  bytes: number;
  /** Files, folders and symlinks. */
  entries: number;
}

export const PLUGIN_LIMITS: PluginLimits = { bytes: 100 * 1024 * 1024, entries: 10_000 };

interface WalkOptions {
  signal?: AbortSignal;
  limits?: PluginLimits;
}

type Entry =
  | { kind: 'dir'; rel: string }
  | { kind: 'file'; rel: string }
  | { kind: 'link'; rel: string; target: string };

/** Copy the plugin directory `from` into `to` (which must not exist), by the rules above. */
export async function copyPluginTree(from: string, to: string, options: WalkOptions = {}): Promise<void> {
  // Checked whole before anything is written: a refused source costs a walk, not a copy.
  const entries: Entry[] = [];
  await walkPlugin(from, options, async (entry) => {
    entries.push(entry);
  });
  await mkdir(to);
  // Folders first, parents before children (the walk's order), then the rest a few at a time.
  for (const entry of entries) if (entry.kind === 'dir') await mkdir(join(to, entry.rel));
  const rest = entries.filter((entry) => entry.kind !== 'dir');
  for (let i = 0; i < rest.length; i += COPY_BATCH) {
    options.signal?.throwIfAborted();
    await Promise.all(
      rest.slice(i, i + COPY_BATCH).map((entry) => {
        const dest = join(to, entry.rel);
        return entry.kind === 'link'
          ? symlink(entry.target, dest)
          : copyFile(join(from, entry.rel), dest, constants.COPYFILE_EXCL);
      }),
    );
  }
}

/** Files copied at once. */
const COPY_BATCH = 16;

/** Check a fetched plugin (a git clone) in place, by the rules above. */
export async function checkPluginTree(root: string, options: WalkOptions = {}): Promise<void> {
  await walkPlugin(root, options, async () => {});
}

async function walkPlugin(
  root: string,
  options: WalkOptions,
  visit: (entry: Entry) => Promise<void>,
): Promise<void> {
  const limits = options.limits ?? PLUGIN_LIMITS;
  const realRoot = await realpath(root);
  let entries = 0;
  let bytes = 0;
  const pending = [''];
  while (pending.length) {
    const dir = pending.pop() as string;
    for (const name of (await readdir(join(root, dir))).sort()) {
      if (name === '.git') continue;
      options.signal?.throwIfAborted();
      const rel = dir ? join(dir, name) : name;
      const stats = await lstat(join(root, rel));
      if (++entries > limits.entries) throw tooLarge(`more than ${limits.entries} files and folders`);
      if (stats.isDirectory()) {
        await visit({ kind: 'dir', rel });
        pending.push(rel);
      } else if (stats.isFile()) {
        bytes += stats.size;
        if (bytes > limits.bytes) throw tooLarge(`more than ${mebibytes(limits.bytes)} of files`);
        await visit({ kind: 'file', rel });
      } else if (stats.isSymbolicLink()) {
        await visit({ kind: 'link', rel, target: await linkTarget(realRoot, rel) });
      } else {
        throw new SvcError(
          'invalid_input',
          `source: ${printable(rel, 200)} is ${special(stats)}; a plugin holds only files, folders and symlinks inside it. Remove it from the plugin directory`,
        );
      }
    }
  }
}

/** Where the copy of a symlink points: relative, to the same place inside the plugin. */
async function linkTarget(realRoot: string, rel: string): Promise<string> {
  const link = join(realRoot, rel);
  const written = await readlink(link);
  let resolved: string;
  try {
    resolved = await realpath(link);
  } catch {
    throw leaves(rel, written, 'points to nothing');
  }
  if (!within(realRoot, resolved)) throw leaves(rel, written, 'points outside the plugin');
  return relative(dirname(link), resolved) || '.';
}

function leaves(rel: string, written: string, what: string): SvcError {
  return new SvcError(
    'invalid_input',
    `source: the symlink ${printable(rel, 200)} → ${printable(written, 200)} ${what}; a plugin's symlinks must stay inside it`,
  );
}

function tooLarge(what: string): SvcError {
  return new SvcError(
    'invalid_input',
    `source: the plugin holds ${what} (the limit of a plugin); leave dependencies and build outputs out of the plugin directory`,
  );
}

function special(stats: Stats): string {
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isSocket()) return 'a socket';
  if (stats.isBlockDevice() || stats.isCharacterDevice()) return 'a device';
  return 'not a regular file';
}

function mebibytes(bytes: number): string {
  const mib = 1024 * 1024;
  return bytes >= mib ? `${Math.round(bytes / mib)} MiB` : `${bytes} bytes`;
}
