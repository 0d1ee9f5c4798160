/**
 * Loading a file for the file tools: a text file within the size limit (not a directory, not
 * binary), and the read-before-edit rule: a session edits or overwrites only a file it has read,
 * as it is on disk now. `not_found` names similar files in the same directory.
 * @module
 */
import { readdirSync, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { SvcError } from '../errors';
import type { OpContext } from './context';
import { looksBinary, MovedDuringReadError, NotRegularFileError, readRegularFile, sha256 } from './file-io';
import type { PathResolver, ResolvedPath } from './paths';
import type { ReadTracker } from './read-tracker';

export const VIEW_LIMITS = {
  defaultLines: 400,
  maxLines: 2000,
  maxLineChars: 2000,
  maxOutputChars: 100_000,
  maxTextBytes: 50 * 1024 * 1024,
  maxImageBytes: 5 * 1024 * 1024,
} as const;

export interface LoadedFile {
  target: ResolvedPath;
  buffer: Buffer;
  text: string;
}

export interface FileLoader {
  /**
   * Record that the session has seen the file as it is now; with `after` (a call run ahead of its
   * step's first statement, `OpContext.ahead`), written once that answered, and not when it failed
   * (then this throws its error: the call's result is dropped with the mark).
   */
  markRead(
    sessionId: string | undefined,
    target: ResolvedPath,
    buffer: Buffer,
    after?: Promise<void>,
  ): Promise<void>;
  /** Refuse (conflict) when the session never read the file, or it changed since. */
  checkFresh(ctx: OpContext, target: ResolvedPath, buffer: Buffer, verb: string): Promise<void>;
  /** An existing text file within the limits; `field` names the input in messages. */
  loadText(target: ResolvedPath, field: string): LoadedFile;
  /** Load an existing text file for editing, enforcing read-before-edit and staleness for the session. */
  loadForEdit(path: string, ctx: OpContext, field?: string): Promise<LoadedFile>;
}

export function createFileLoader(deps: { paths: PathResolver; reads: ReadTracker }): FileLoader {
  const markRead = async (
    sessionId: string | undefined,
    target: ResolvedPath,
    buffer: Buffer,
    after?: Promise<void>,
  ) => {
    if (!sessionId) return;
    // The file as read (its hash and mtime now), whenever the mark is written.
    const file = { sha256: sha256(buffer), size: buffer.length, mtimeMs: statSync(target.abs).mtimeMs };
    if (after) await after;
    await deps.reads.record(sessionId, target.rel, file);
  };

  const checkFresh = async (ctx: OpContext, target: ResolvedPath, buffer: Buffer, verb: string) => {
    if (!ctx.sessionId) return; // the operator's own call (CLI, HTTP, MCP): nothing to protect against
    const record = await deps.reads.get(ctx.sessionId, target.rel);
    if (!record) {
      throw new SvcError(
        'conflict',
        `${target.rel} has not been read in this session; view it before you ${verb} it, so the change is based on its current content`,
        { details: { path: target.rel, reason: 'not_read' } },
      );
    }
    if (record.sha256 !== sha256(buffer)) {
      throw new SvcError(
        'conflict',
        `${target.rel} changed on disk since this session last read it; view it again, then redo the ${verb} against the current content`,
        { details: { path: target.rel, reason: 'stale_read', read_at: record.read_at } },
      );
    }
  };

  const loadText = (target: ResolvedPath, field: string): LoadedFile => {
    const stat = statOrUndefined(target.abs);
    if (!stat) throw notFound(target, field);
    if (stat.isDirectory()) {
      throw new SvcError(
        'invalid_input',
        `${field}: ${target.rel} is a directory, not a file; use ls to list it`,
      );
    }
    if (stat.size > VIEW_LIMITS.maxTextBytes) {
      throw new SvcError(
        'invalid_input',
        `${field}: ${target.rel} is ${stat.size} bytes, more than the ${VIEW_LIMITS.maxTextBytes} a file tool handles; use grep or bash (head, tail, sed -n) on it`,
      );
    }
    const buffer = readTarget(target, field);
    if (looksBinary(buffer)) {
      throw new SvcError(
        'invalid_input',
        `${field}: ${target.rel} is a binary file; it cannot be edited as text`,
      );
    }
    return { target, buffer, text: buffer.toString('utf8') };
  };

  const loadForEdit = async (path: string, ctx: OpContext, field = 'path'): Promise<LoadedFile> => {
    const target = deps.paths.resolve(path, field);
    const file = loadText(target, field);
    await checkFresh(ctx, target, file.buffer, ctx.tool === 'write' ? 'overwrite' : 'edit');
    return file;
  };

  return { markRead, checkFresh, loadText, loadForEdit };
}

/**
 * The bytes of a workspace file for a file tool (its first `head` bytes when given): a FIFO, socket
 * or device there is refused with what it is, never read (`readRegularFile`: reading one would
 * wait, and stop the process, until something writes to it).
 */
export function readTarget(target: ResolvedPath, field: string, head?: number): Buffer {
  try {
    return readRegularFile(target.abs, head, target.real);
  } catch (error) {
    if (error instanceof MovedDuringReadError)
      throw new SvcError(
        'conflict',
        `${field}: ${target.rel} changed while it was being read (it was swapped for a link elsewhere); nothing was read: check what changed it and read it again`,
        { details: { field, reason: 'moved_during_read' } },
      );
    if (error instanceof NotRegularFileError)
      throw new SvcError(
        'invalid_input',
        `${field}: ${target.rel} is a ${error.kind}, not a regular file; the file tools read and write regular files only`,
      );
    throw error;
  }
}

export function statOrUndefined(abs: string) {
  try {
    return statSync(abs);
  } catch {
    return undefined;
  }
}

/** not_found with the names of similar files in the same directory, when there are any. */
export function notFound(target: ResolvedPath, field: string): SvcError {
  const dir = dirname(target.abs);
  const wanted = basename(target.abs).toLowerCase();
  const stem = wanted.replace(/\.[^.]+$/, '');
  let similar: string[] = [];
  try {
    similar = readdirSync(dir)
      .filter((name) => {
        const lower = name.toLowerCase();
        const other = lower.replace(/\.[^.]+$/, '');
        return (stem.length >= 3 && lower.includes(stem)) || (other.length >= 3 && stem.includes(other));
      })
      .slice(0, 5);
  } catch {
    // the directory does not exist either
  }
  const hint = similar.length
    ? `; similar names in that directory: ${similar.join(', ')}`
    : '; check the path with ls or glob';
  return new SvcError('not_found', `${field}: ${target.rel} does not exist${hint}`, {
    details: { path: target.rel, similar },
  });
}
