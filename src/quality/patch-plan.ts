/**
 * Planning a patch: its file sections applied, in order, to a virtual copy of the files they
 * touch. Nothing is written here; a section or hunk that does not apply throws.
 * @module
 */
import { existsSync, statSync } from 'node:fs';
import { SvcError } from '../errors';
import type { OpContext } from '../workspace/context';
import { looksBinary, sha256 } from '../workspace/file-io';
import { readTarget } from '../workspace/file-load';
import type { PathResolver, ResolvedPath } from '../workspace/paths';
import type { ReadTracker } from '../workspace/read-tracker';
import { type AppliedHunk, applyHunks } from './patch-apply';
import type { FilePatch, PatchFormat } from './patch-parse';

const MAX_FILE_BYTES = 50 * 1024 * 1024;

export interface PlanDeps {
  paths: PathResolver;
  reads: ReadTracker;
}

export interface Entry {
  target: ResolvedPath;
  /** On disk now; null when absent. */
  disk: Buffer | null;
  binary: boolean;
  /** After the patch sections so far; null when (to be) absent; '' stands for a binary file's content. */
  current: string | null;
  /** A patch section changed it. */
  touched: boolean;
  hunks?: AppliedHunk[];
  movedFrom?: string;
  movedTo?: string;
}

export async function planPatch(
  deps: PlanDeps,
  files: FilePatch[],
  format: PatchFormat,
  ctx: OpContext,
): Promise<Map<string, Entry>> {
  const entries = new Map<string, Entry>();
  const load = (raw: string): Entry => {
    const target = deps.paths.resolve(raw, 'patch');
    const known = entries.get(target.abs);
    if (known) return known;
    let disk: Buffer | null = null;
    if (existsSync(target.abs)) {
      const stat = statSync(target.abs);
      if (stat.isDirectory()) {
        throw new SvcError('invalid_input', `patch: ${target.rel} is a directory, not a file`, {
          details: { path: target.rel, reason: 'directory' },
        });
      }
      if (stat.size > MAX_FILE_BYTES) {
        throw new SvcError(
          'invalid_input',
          `patch: ${target.rel} is ${stat.size} bytes, more than the ${MAX_FILE_BYTES} a patch handles; change it with bash`,
          { details: { path: target.rel, reason: 'too_large' } },
        );
      }
      disk = readTarget(target, 'patch');
    }
    const binary = disk !== null && looksBinary(disk);
    const entry: Entry = {
      target,
      disk,
      binary,
      current: disk === null ? null : binary ? '' : disk.toString('utf8'),
      touched: false,
    };
    entries.set(target.abs, entry);
    return entry;
  };
  const refuse = (entry: Entry, message: string, reason: string): never => {
    throw new SvcError('invalid_input', `patch: ${message}. Nothing was written`, {
      details: { path: entry.target.rel, reason },
    });
  };

  for (const file of files) {
    const entry = load(file.path);
    const rel = entry.target.rel;
    entry.touched = true;
    switch (file.kind) {
      case 'add':
        if (entry.current !== null) {
          refuse(
            entry,
            `Add File ${rel}: the file already exists; change it with an Update File section (or delete it first)`,
            'file_exists',
          );
        }
        entry.current = file.content;
        break;
      case 'delete':
        if (entry.current === null) refuse(entry, `Delete File ${rel}: no such file`, 'file_not_found');
        await checkFresh(deps, entry, ctx);
        entry.current = null;
        break;
      case 'update': {
        if (entry.current === null) {
          refuse(
            entry,
            `Update File ${rel}: no such file; create it with an Add File section`,
            'file_not_found',
          );
        }
        if (entry.binary)
          refuse(entry, `Update File ${rel}: it is a binary file and cannot be patched as text`, 'binary');
        const applied = applyHunks(rel, entry.current as string, file.hunks, format);
        entry.hunks = [...(entry.hunks ?? []), ...applied.hunks];
        if (file.moveTo) {
          const destination = load(file.moveTo);
          if (destination !== entry && destination.current !== null) {
            refuse(
              destination,
              `Move to ${destination.target.rel} (from ${rel}): the destination already exists`,
              'file_exists',
            );
          }
          entry.current = null;
          entry.movedTo = destination.target.rel;
          destination.current = applied.text;
          destination.touched = true;
          destination.movedFrom = rel;
          destination.hunks = entry.hunks;
        } else {
          entry.current = applied.text;
        }
        break;
      }
      default: {
        const never: never = file;
        throw new Error(`unknown patch section ${JSON.stringify(never)}`);
      }
    }
  }
  return entries;
}

async function checkFresh(deps: PlanDeps, entry: Entry, ctx: OpContext): Promise<void> {
  // A delete checks no context: refuse it when the session saw an older version of the file.
  if (!ctx.sessionId || entry.disk === null) return;
  const record = await deps.reads.get(ctx.sessionId, entry.target.rel);
  if (record && record.sha256 !== sha256(entry.disk)) {
    throw new SvcError(
      'conflict',
      `patch: Delete File ${entry.target.rel}: the file changed on disk since this session last read it; view it again before deleting it. Nothing was written`,
      { details: { path: entry.target.rel, reason: 'stale_read' } },
    );
  }
}
