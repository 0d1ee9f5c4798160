/**
 * Path containment for every workspace operation. A path is resolved against the workspace root
 * and refused when it lands outside it, lexically (`../x`, `/etc/x`) or through a symlink whose
 * real target is outside, unless `permissions.allow_outside_workspace` lifts the rule. A path into
 * a protected location (svc's data directory, its credential store, the sandbox deny list such as
 * ~/.ssh) is refused whatever the rules say (issue 15).
 * @module
 */
import { existsSync, lstatSync, readlinkSync, realpathSync, type Stats } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { SvcError } from '../errors';

export interface ResolvedPath {
  /** Absolute path as given (symlinks not followed), used for I/O. */
  abs: string;
  /** Workspace-relative with forward slashes ('.' for the root); the absolute path when outside. */
  rel: string;
  /** True when the real location is inside the workspace. */
  inside: boolean;
  /** The real location checked (symlinks followed): what a read must find open (`readTarget`). */
  real?: string;
}

export interface PathResolver {
  readonly root: string;
  /** The root with symlinks resolved (what `pwd -P` and realpath report). */
  readonly realRoot: string;
  /**
   * Resolve a user- or model-supplied path. `field` names the input field in errors.
   * Throws `forbidden` when the path is outside the workspace and that is not allowed.
   */
  resolve(input: string, field?: string, options?: { cwd?: string }): ResolvedPath;
  /** Is this absolute path (after following symlinks) inside the workspace? */
  contains(abs: string): boolean;
  /** Workspace-relative display form of an absolute path. */
  display(abs: string): string;
}

export function createPathResolver(deps: {
  root: string;
  home?: string;
  allowOutside: () => boolean;
  /** The protected location a real path is in, if any (src/sandbox/protected.ts). */
  protectedPath?: (real: string) => { label: string; why: string; kind?: string } | undefined;
}): PathResolver {
  const root = resolve(deps.root);
  const realRoot = safeRealpath(root);

  const lexicallyInside = (base: string, abs: string) => {
    const rel = relative(base, abs);
    return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
  };

  const contains = (abs: string) => lexicallyInside(realRoot, realpathOfDeepest(abs));

  const display = (abs: string) => {
    // Real paths (from `pwd -P`, realpath) are shown relative to the real root.
    const base = lexicallyInside(root, abs) ? root : lexicallyInside(realRoot, abs) ? realRoot : undefined;
    if (!base) return abs;
    const rel = relative(base, abs);
    return rel === '' ? '.' : rel.split(sep).join('/');
  };

  return {
    root,
    realRoot,
    contains,
    display,
    resolve(input, field = 'path', options = {}) {
      if (typeof input !== 'string' || input.trim() === '') {
        throw new SvcError('invalid_input', `${field}: a path is required`);
      }
      if (input.includes('\0')) throw new SvcError('invalid_input', `${field}: the path contains a NUL byte`);
      let expanded = input;
      if (deps.home && (input === '~' || input.startsWith('~/'))) expanded = join(deps.home, input.slice(1));
      const abs = resolve(options.cwd ?? root, expanded);
      checkNameLengths(abs, field);
      const lexical = lexicallyInside(root, abs);
      const real = realpathOfDeepest(abs);
      const hit = deps.protectedPath?.(real);
      if (hit) {
        const allow =
          hit.kind === 'deny_read'
            ? `to allow it: options.sandbox.allow_read = ["${hit.label}"]`
            : 'no setting allows it';
        throw new SvcError(
          'forbidden',
          `${field}: ${input} is in ${hit.label} (${hit.why}); svc's tools never read or write it (${allow})`,
          { details: { field, path: input, reason: 'protected_path', protected: hit.label } },
        );
      }
      const inside = lexicallyInside(realRoot, real);
      if (!inside && !deps.allowOutside()) {
        const how = lexical
          ? `resolves through a symlink to ${real}, which is outside the workspace ${root}`
          : `is outside the workspace ${root}`;
        throw new SvcError(
          'forbidden',
          `${field}: ${input} ${how}; use a path inside the workspace (or set permissions.allow_outside_workspace = true)`,
          { details: { field, path: input, resolved: real, workspace: root } },
        );
      }
      return { abs, rel: inside && lexical ? display(abs) : abs, inside, real };
    },
  };
}

/** The file system's limits: bytes in one name (ext4, APFS, NTFS…), bytes in a whole path. */
export const NAME_LIMITS = { nameBytes: 255, pathBytes: process.platform === 'darwin' ? 1024 : 4096 };

/**
 * A name or path the system cannot hold, refused before any call to it: every file call on it is
 * ENAMETOOLONG, which said nothing to the user but "internal error".
 */
function checkNameLengths(abs: string, field: string): void {
  const pathBytes = Buffer.byteLength(abs);
  if (pathBytes >= NAME_LIMITS.pathBytes) {
    throw new SvcError(
      'invalid_input',
      `${field}: the path is ${pathBytes} bytes long, over the system's ${NAME_LIMITS.pathBytes - 1}-byte limit for a path; use a shorter path`,
    );
  }
  for (const name of abs.split(sep)) {
    const bytes = Buffer.byteLength(name);
    if (bytes > NAME_LIMITS.nameBytes) {
      throw new SvcError(
        'invalid_input',
        `${field}: the name ${name.slice(0, 40)}… is ${bytes} bytes long, over the ${NAME_LIMITS.nameBytes}-byte limit for a file or directory name; use a shorter name`,
      );
    }
  }
}

/**
 * realpath of the deepest existing ancestor, with the missing tail appended. `hops`: the dangling
 * symlinks followed so far, across the recursion (a loop, `a -> b -> a`, is "dangling" at each
 * link: counted per call it recursed until the stack overflowed).
 */
export function realpathOfDeepest(abs: string, hops = 0): string {
  const tail: string[] = [];
  let current = abs;
  for (;;) {
    const link = lstatOrUndefined(current);
    if (link) {
      let real: string;
      if (link.isSymbolicLink() && !existsSync(current) && hops < 40) {
        // A dangling symlink: writing through it creates its target, so the target is what counts.
        real = realpathOfDeepest(resolve(dirname(current), readlinkSync(current)), hops + 1);
      } else {
        real = safeRealpath(current);
      }
      return tail.length ? join(real, ...tail.reverse()) : real;
    }
    const parent = dirname(current);
    if (parent === current) return abs;
    tail.push(basename(current));
    current = parent;
  }
}

function safeRealpath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}
