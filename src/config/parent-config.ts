/**
 * A config file in a directory above the workspace. The workspace is the current directory (or
 * --cwd), never searched for upwards; run from a subdirectory of a project, svc reads none of the
 * project's svc.toml, and "no model provider is configured" read as if there were none
 * (CLI-FIRST-8). The errors that can come of it name the file found here.
 * @module
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** Enough for any real tree; the walk ends sooner at $HOME or the filesystem root. */
const MAX_LEVELS = 64;

/**
 * The nearest `svc.toml` or `.svc/svc.toml` strictly above the workspace, looking no higher than
 * $HOME (when the workspace is under it) or the filesystem root.
 */
export function parentConfigFile(
  workspace: string,
  home: string | undefined,
): { file: string; root: string } | undefined {
  const stop = home ? resolve(home) : undefined;
  let dir = resolve(workspace);
  for (let level = 0; level < MAX_LEVELS && dir !== stop; level++) {
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
    for (const file of [join(dir, 'svc.toml'), join(dir, '.svc', 'svc.toml')])
      if (existsSync(file)) return { file, root: dir };
  }
  return undefined;
}
