/**
 * Low-level file helpers for the workspace: content hashes, binary and image sniffing, and atomic
 * writes (temp file in the same directory, then rename) that keep the file's mode.
 * @module
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  fstatSync,
  openSync,
  readFileSync,
  readlinkSync,
  readSync,
  realpathSync,
  renameSync,
  type Stats,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { makeDirs } from '../util/make-dirs';

export function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The file at a path is no regular file (nor a directory): a FIFO, a socket or a device. */
export class NotRegularFileError extends Error {
  constructor(
    readonly path: string,
    /** What it is instead: "FIFO (named pipe)", "socket", "character device", "block device". */
    readonly kind: string,
  ) {
    super(`${path} is a ${kind}, not a regular file`);
    this.name = 'NotRegularFileError';
  }
}

/**
 * The file opened for a read is not the one whose location was checked: a path swapped for a
 * symlink (or a directory on it for one) between the check and the open.
 */
export class MovedDuringReadError extends Error {
  constructor(
    readonly path: string,
    /** Where the opened file really is. */
    readonly opened: string,
  ) {
    super(`${path} now resolves to ${opened}, not the file that was checked`);
    this.name = 'MovedDuringReadError';
  }
}

/** Where an open descriptor's file really is (Linux), or `undefined` where that cannot be told. */
function openedPath(fd: number): string | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return undefined;
  }
}

/** What a stat says a non-regular, non-directory entry is, in words. */
function kindOf(stat: Stats): string {
  if (stat.isFIFO()) return 'FIFO (named pipe)';
  if (stat.isSocket()) return 'socket';
  if (stat.isCharacterDevice()) return 'character device';
  if (stat.isBlockDevice()) return 'block device';
  return 'special file';
}

/**
 * The bytes of the regular file at `abs`, or its first `head` bytes. It is opened non-blocking and
 * checked on the open descriptor before anything is read: `readFileSync` of a FIFO waits for a
 * writer that may never come (open and read block), and with it the whole process, every session
 * and request of a service included; a FIFO a command made in the workspace, a socket or a device
 * is a `NotRegularFileError` here, at once. A directory is EISDIR, as `readFileSync` says it.
 */
export function readRegularFile(abs: string, head?: number, checkedReal?: string): Buffer {
  const fd = openSync(abs, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    // With the real location a containment check approved: the open must have reached that file
    // (a swap in between, by a command the agent runs meanwhile, would read outside the workspace).
    if (checkedReal !== undefined) {
      const opened = openedPath(fd);
      if (opened !== undefined && opened !== checkedReal) throw new MovedDuringReadError(abs, opened);
    }
    const stat = fstatSync(fd);
    if (stat.isDirectory())
      throw Object.assign(new Error(`EISDIR: illegal operation on a directory, read '${abs}'`), {
        code: 'EISDIR',
        path: abs,
      });
    if (!stat.isFile()) throw new NotRegularFileError(abs, kindOf(stat));
    if (head === undefined) return readFileSync(fd);
    // Sized by the file, not the limit (a hook digest's limit is 8 MiB); a file that grew since
    // its fstat fills the smaller buffer and is read again up to the limit.
    const fits = Math.min(head, stat.size + 1);
    const buffer = Buffer.alloc(fits);
    const read = readSync(fd, buffer, 0, fits, 0);
    if (read < fits || fits === head) return buffer.subarray(0, read);
    const whole = Buffer.alloc(head);
    return whole.subarray(0, readSync(fd, whole, 0, head, 0));
  } finally {
    closeSync(fd);
  }
}

/** What is at a path now, for a check that something changed: never a read that waits. */
export type FileOnDisk =
  | { kind: 'none' }
  | { kind: 'file'; buffer: Buffer }
  /** A directory, FIFO, socket or device where a file was: a change, never read. */
  | { kind: 'other'; what: string };

/**
 * What is at `abs`: nothing, a regular file's bytes, or something else in its place (a directory,
 * a FIFO a command made, a socket, a device), told apart without reading what is not a file.
 */
export function fileOnDisk(abs: string): FileOnDisk {
  try {
    return { kind: 'file', buffer: readRegularFile(abs) };
  } catch (error) {
    if (error instanceof NotRegularFileError) return { kind: 'other', what: error.kind };
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'none' };
    if (code === 'EISDIR') return { kind: 'other', what: 'directory' };
    throw error;
  }
}

/** A NUL byte in the first 8 KiB is the same test git and ripgrep use. */
export function looksBinary(buffer: Buffer): boolean {
  const end = Math.min(buffer.length, 8192);
  for (let i = 0; i < end; i++) if (buffer[i] === 0) return true;
  return false;
}

/** Media type of a raster image the models accept, from its magic bytes. */
export function imageMediaType(buffer: Buffer): string | undefined {
  if (
    buffer.length >= 8 &&
    buffer.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
  )
    return 'image/png';
  if (buffer.length >= 3 && buffer[0] === 0xff && buffer[1] === 0xd8 && buffer[2] === 0xff)
    return 'image/jpeg';
  if (buffer.length >= 6 && /^GIF8[79]a$/.test(buffer.subarray(0, 6).toString('latin1'))) return 'image/gif';
  if (
    buffer.length >= 12 &&
    buffer.subarray(0, 4).toString('latin1') === 'RIFF' &&
    buffer.subarray(8, 12).toString('latin1') === 'WEBP'
  )
    return 'image/webp';
  return undefined;
}

/** Write a file atomically; creates parent directories; keeps the mode of a file it replaces. */
export function atomicWrite(path: string, data: string | Buffer): void {
  // Write through a symlink to its target rather than replacing the link with a file.
  const abs = existsSync(path) ? realpathSync(path) : path;
  const dir = dirname(abs);
  makeDirs(dir);
  let mode: number | undefined;
  try {
    mode = statSync(abs).mode & 0o7777;
  } catch {
    mode = undefined;
  }
  replaceAtomically(abs, data, mode);
}

/**
 * Writes `data` to a temporary file beside `path` and renames it over `path`: a reader sees the
 * old content or the new, never part of it. `mode` is given to the new file. The temporary name
 * does not grow with the target's (`.<name>.svc-….tmp` made a legal name of 240 bytes one over the
 * 255-byte limit: ENAMETOOLONG), and it is made with `wx`, so a symlink planted there is not
 * followed. `path` itself is replaced, never followed.
 */
export function replaceAtomically(path: string, data: string | Buffer, mode?: number): void {
  const temp = join(dirname(path), `.svc-write-${randomBytes(6).toString('hex')}.tmp`);
  try {
    const fd = openSync(temp, 'wx');
    try {
      writeFileSync(fd, data);
      if (mode !== undefined) fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    try {
      unlinkSync(temp);
    } catch {
      // never made, or already renamed
    }
    throw error;
  }
}

/** Line ending used by the file: CRLF when it has any `\r\n`, else LF. */
export function lineEnding(text: string): '\r\n' | '\n' {
  return text.includes('\r\n') ? '\r\n' : '\n';
}
