/**
 * `workspace_snapshot`: the workspace right now — git branch, HEAD, dirty state and counts, file
 * counts and languages (the workspace walker: .gitignore honoured, .git/ and svc's data dir
 * skipped). With `options.workspace_environment_fields` set (CFG-29) it adds an `environment`
 * section with the fields that table enables; environment variables appear by name with whether
 * they are set, never with their values. Unset: no `environment` key at all.
 * @module
 */
import { cpus, totalmem } from 'node:os';
import { basename } from 'node:path';
import type { Config } from '../config/schema';
import type { Clock } from '../util/ids';
import { MAX_WALKED_FILES, type WorkspaceFiles } from './codebase-summary';
import { type GitStateDeps, gitView, readGitState } from './git-state';
import { DATA_LANGUAGES, languageCounts } from './languages';

/** What the workspace readouts read: git, the file walker, the clock and the config. */
export interface WorkspaceReadoutDeps extends GitStateDeps {
  readonly ws: WorkspaceFiles;
  readonly clock: Clock;
  readonly config: Config;
  readonly dataDir: string;
}

export async function buildWorkspaceSnapshot(app: WorkspaceReadoutDeps, signal?: AbortSignal) {
  const [git, listing] = await Promise.all([
    readGitState(app),
    app.ws.search.files({ limit: MAX_WALKED_FILES }, { tool: 'workspace_snapshot', signal }),
  ]);
  const languages = languageCounts(listing.files);
  const directories = new Set<string>();
  for (const file of listing.files) {
    const parts = file.split('/');
    for (let i = 1; i < parts.length; i++) directories.add(parts.slice(0, i).join('/'));
  }
  const environment = environmentFields(app);
  return {
    workspace: app.workspace,
    generated_at: app.clock.now(),
    git: gitView(git),
    files: {
      total: listing.files.length,
      directories: directories.size,
      truncated: listing.truncated,
      limit: MAX_WALKED_FILES,
    },
    languages,
    primary_language:
      languages.find((l) => l.language !== 'other' && !DATA_LANGUAGES.has(l.language))?.language ?? null,
    ...(environment ? { environment } : {}),
  };
}

/** The environment section, or undefined when `options.workspace_environment_fields` is unset. */
export function environmentFields(
  app: Pick<WorkspaceReadoutDeps, 'config' | 'env'>,
): Record<string, unknown> | undefined {
  const fields = app.config.options.workspace_environment_fields;
  if (!fields) return undefined;
  const out: Record<string, unknown> = {};
  if (fields.platform) out.platform = process.platform;
  if (fields.arch) out.arch = process.arch;
  if (fields.node_version) out.node_version = process.versions.node;
  if (fields.shell) {
    const shell = app.env.SHELL ?? app.env.ComSpec;
    out.shell = shell ? basename(shell) : null;
  }
  if (fields.cpu_count) out.cpu_count = cpus().length;
  if (fields.total_memory_mb) out.total_memory_mb = Math.round(totalmem() / (1024 * 1024));
  if (fields.env_vars.length) {
    out.env_vars = [...new Set(fields.env_vars)]
      .sort()
      .map((name) => ({ name, set: app.env[name] !== undefined && app.env[name] !== '' }));
  }
  return out;
}
