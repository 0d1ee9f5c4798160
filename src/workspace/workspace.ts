/**
 * The workspace service (`app.ws`): the only code that touches workspace files, processes and
 * git. Every path goes through the resolver (containment, symlink escapes), every mutation through
 * the mutation guards, and every file change into the per-session file history.
 * @module
 */
import type { Config } from '../config/schema';
import type { EventBus } from '../events/bus';
import { ownContext } from '../events/own-context';
import type { Redactor } from '../redact';
import type { CommandSpawner } from '../sandbox/spawn';
import type { Clock, Ids } from '../util/ids';
import { type Checkpoints, createCheckpoints } from './checkpoints';
import type { MutationGuard } from './context';
import { type ChangeCommitter, createChangeCommitter } from './file-changes';
import { createFileHistory, type FileHistory } from './file-history';
import { createFileOps, type FileOps } from './files';
import { configuredGitLimit, createGitRunner } from './git';
import { createJobs, type Jobs } from './jobs';
import { createLanguageServers, type LanguageServers } from './lsp';
import type { ProgramTrust } from './lsp-catalog';
import { createPathResolver, type PathResolver } from './paths';
import { createReadTracker, type ReadTracker } from './read-tracker';
import { createSearchOps, type SearchOps } from './search';
import { createSemanticOps, type SemanticOps } from './semantic';
import { createShell, type Shell, type ShellSandbox } from './shell';
import type { WorkspaceStores } from './stores';
import { createTodoStore, type TodoStore } from './todos';
import { createWebOps, type WebOps } from './web';

export interface Workspace {
  readonly root: string;
  readonly paths: PathResolver;
  readonly files: FileOps;
  readonly search: SearchOps;
  /** tree-sitter symbols: overview, lookup, structural edits (rename across files…). */
  readonly semantic: SemanticOps;
  readonly shell: Shell;
  readonly jobs: Jobs;
  readonly web: WebOps;
  readonly checkpoints: Checkpoints;
  /** Per-session record of every file change, with before/after for diffs. */
  readonly history: FileHistory;
  /** What each session last read of each file (read-before-edit). */
  readonly reads: ReadTracker;
  /** The mutation pipeline (guards, approval with diff, history, events) for multi-file changes. */
  readonly changes: ChangeCommitter;
  readonly todos: TodoStore;
  /** Language servers of `[lsp.<id>]`, for diagnostics. */
  readonly lsp: LanguageServers;
  /** Stop background jobs, language servers and searches still running. */
  close(): Promise<void>;
}

export function createWorkspace(deps: {
  root: string;
  dataDir: string;
  env: Readonly<Record<string, string | undefined>>;
  config: () => Config;
  /** The repositories (./stores.ts): SQLite or PostgreSQL. */
  stores: WorkspaceStores;
  bus: EventBus;
  clock: Clock;
  ids: Ids;
  redactor: Redactor;
  fetch: typeof fetch;
  guards: () => readonly MutationGuard[];
  /** Starts every command (bash, jobs): the OS sandbox when active, a scrubbed environment. */
  spawner: CommandSpawner;
  /** The OS sandbox as the shell sees it, and the protected locations every tool refuses. */
  sandbox: ShellSandbox;
  /** Whether language servers may run the workspace's own programs (absent: they may not). */
  programTrust?: () => ProgramTrust;
}): Workspace {
  const paths = createPathResolver({
    root: deps.root,
    home: deps.env.HOME,
    allowOutside: () => deps.config().permissions.allow_outside_workspace,
    protectedPath: (real) => deps.sandbox.protectedPath(real),
  });
  const history = createFileHistory({
    history: deps.stores.history,
    queries: deps.stores.historyQueries,
    clock: deps.clock,
  });
  const reads = createReadTracker({ reads: deps.stores.reads, clock: deps.clock });
  const changes = createChangeCommitter({ guards: deps.guards, history, reads, bus: deps.bus, paths });
  const jobs = createJobs({
    dataDir: deps.dataDir,
    ids: deps.ids,
    clock: deps.clock,
    redactor: deps.redactor,
    spawner: deps.spawner,
  });
  const shell = createShell({
    paths,
    dataDir: deps.dataDir,
    home: deps.env.HOME,
    guards: deps.guards,
    jobs,
    ids: deps.ids,
    clock: deps.clock,
    redactor: deps.redactor,
    spawner: deps.spawner,
    sandbox: deps.sandbox,
    settings: () => {
      const config = deps.config();
      return {
        timeoutSeconds: config.options.bash.timeout_seconds,
        maxOutputBytes: config.options.bash.max_output_bytes,
        allowOutside: config.permissions.allow_outside_workspace,
        autoAllowReadOnly: config.permissions.auto_allow_read_only_bash,
        bashAllow: config.permissions.bash_allow,
        bashDeny: config.permissions.bash_deny,
      };
    },
  });
  const checkpoints = createCheckpoints({
    git: createGitRunner(paths.root, deps.env, configuredGitLimit(deps.config)),
    root: paths.root,
    dataDir: deps.dataDir,
    clock: deps.clock,
    ids: deps.ids,
    bus: deps.bus,
    history,
    guards: deps.guards,
  });
  // Aborted by close(): a search still running (ripgrep) is stopped with the workspace.
  const closing = new AbortController();
  const search = createSearchOps({
    closed: closing.signal,
    paths,
    dataDir: deps.dataDir,
    hidden: () => deps.sandbox.protectedEntries().map((p) => p.path),
    protectedMatcher: () => deps.sandbox.protectedMatcher(),
    memoryLimitBytes: () => deps.config().options.search.memory_limit_mb * 1024 * 1024,
  });
  const lsp = createLanguageServers({
    root: paths.root,
    env: deps.env,
    config: deps.config,
    spawner: deps.spawner,
    programTrust: deps.programTrust,
  });
  // The delete is the workspace's own: never in (nor rolled back with) the publisher's transaction.
  const own = ownContext('svc.workspace-reads');
  const unsubscribe = deps.bus.subscribe('*', (event) => {
    // Order does not matter here (nothing reads a deleted session's records); a failure only
    // leaves rows no edit consults, so it is not worth failing the bus's listener for.
    if (event.type === 'session.deleted')
      own.run(() => void reads.forgetSession(event.session_id).catch(() => undefined));
  });

  return {
    root: paths.root,
    paths,
    files: createFileOps({ paths, reads, changes }),
    search,
    semantic: createSemanticOps({ paths, search, changes, lsp }),
    shell,
    jobs,
    web: createWebOps({
      fetch: deps.fetch,
      paths,
      dataDir: deps.dataDir,
      ids: deps.ids,
      changes,
      history,
      bus: deps.bus,
    }),
    checkpoints,
    history,
    reads,
    changes,
    todos: createTodoStore({ todos: deps.stores.todos, clock: deps.clock }),
    lsp,
    async close() {
      unsubscribe();
      closing.abort();
      try {
        await jobs.stopAll();
      } finally {
        await lsp.close();
      }
    },
  };
}
