/**
 * The project registry: every workspace svc has run an agent in, kept in the user data dir
 * (`$XDG_DATA_HOME/svc/projects.json`, default `~/.local/share/svc/`), so `svc projects` can list
 * them from anywhere. Written atomically (temp file + rename); a damaged file is set aside, never
 * a reason to fail a run.
 * @module
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeDirs } from '../util/make-dirs';
import type { AgentHost } from './deps';
import { findRepoRoot } from './environment';

export interface ProjectEntry {
  path: string;
  data_dir: string;
  git_root: string | null;
  first_seen_at: number;
  last_run_at: number;
  runs: number;
}

export interface ProjectRegistry {
  path: string | null;
  projects: ProjectEntry[];
  warning?: string;
}

/** `$XDG_DATA_HOME/svc`, else `$HOME/.local/share/svc`; null when neither is set. */
export function userDataDir(env: Readonly<Record<string, string | undefined>>): string | null {
  if (env.XDG_DATA_HOME) return join(env.XDG_DATA_HOME, 'svc');
  if (env.HOME) return join(env.HOME, '.local', 'share', 'svc');
  return null;
}

export function readProjects(app: AgentHost): ProjectRegistry {
  const dir = userDataDir(app.env);
  if (!dir) return { path: null, projects: [], warning: 'neither XDG_DATA_HOME nor HOME is set' };
  const path = join(dir, 'projects.json');
  if (!existsSync(path)) return { path, projects: [] };
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as { projects?: ProjectEntry[] };
    const projects = Array.isArray(parsed.projects) ? parsed.projects.filter(isEntry) : [];
    return { path, projects: projects.sort((a, b) => b.last_run_at - a.last_run_at) };
  } catch (error) {
    return { path, projects: [], warning: `could not read ${path}: ${(error as Error).message}` };
  }
}

/** Registry writes are coalesced to at most one per second per agent host (runs in a burst add up). */
const WRITE_INTERVAL_MS = 1000;
const pending = new WeakMap<
  AgentHost,
  { runs: number; lastWrite: number; timer?: ReturnType<typeof setTimeout> }
>();

/**
 * Record that a run started in this workspace. The first run writes at once; runs within the next
 * second are added in one later write (and at close). Never throws.
 */
export function recordProject(app: AgentHost): void {
  let state = pending.get(app);
  if (!state) {
    const created = { runs: 0, lastWrite: 0 } as {
      runs: number;
      lastWrite: number;
      timer?: ReturnType<typeof setTimeout>;
    };
    state = created;
    pending.set(app, created);
    app.onClose(() => flush(app, created));
  }
  state.runs++;
  const now = Date.now();
  if (state.timer) return;
  const wait = WRITE_INTERVAL_MS - (now - state.lastWrite);
  if (wait <= 0) {
    flush(app, state);
    return;
  }
  const current = state;
  current.timer = setTimeout(() => flush(app, current), wait);
  current.timer.unref?.();
}

function flush(
  app: AgentHost,
  state: { runs: number; lastWrite: number; timer?: ReturnType<typeof setTimeout> },
) {
  if (state.timer) clearTimeout(state.timer);
  state.timer = undefined;
  if (state.runs === 0) return;
  const runs = state.runs;
  state.runs = 0;
  state.lastWrite = Date.now();
  writeProject(app, runs);
}

function writeProject(app: AgentHost, runs: number): void {
  try {
    const registry = readProjects(app);
    if (!registry.path) return;
    if (registry.warning && existsSync(registry.path)) renameSync(registry.path, `${registry.path}.bad`);
    const now = app.clock.now();
    const existing = registry.projects.find((p) => p.path === app.workspace);
    const entry: ProjectEntry = existing
      ? { ...existing, data_dir: app.dataDir, last_run_at: now, runs: existing.runs + runs }
      : {
          path: app.workspace,
          data_dir: app.dataDir,
          git_root: findRepoRoot(app.workspace) ?? null,
          first_seen_at: now,
          last_run_at: now,
          runs,
        };
    const projects = [entry, ...registry.projects.filter((p) => p.path !== app.workspace)];
    const dir = join(registry.path, '..');
    makeDirs(dir);
    const temp = `${registry.path}.${process.pid}.tmp`;
    writeFileSync(temp, `${JSON.stringify({ version: 1, projects }, null, 2)}\n`);
    renameSync(temp, registry.path);
  } catch (error) {
    app.log.warn('project registry not updated', { error });
  }
}

function isEntry(value: unknown): value is ProjectEntry {
  const v = value as ProjectEntry;
  return typeof v?.path === 'string' && typeof v.last_run_at === 'number';
}
