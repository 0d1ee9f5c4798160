/**
 * Language servers for diagnostics and semantic edits. The servers are the `[lsp.<id>]` entries
 * and the built-ins of the languages the workspace uses (lsp-catalog.ts). Each starts on first use
 * (one process per server for the whole app, so every session shares it), is started again when
 * it crashed, stopped answering or its start failed (lsp-starts.ts: past MAX_RESTARTS in a row it
 * backs off, calls fail at once saying until when and `status()` says why), and is stopped after
 * `options.lsp.idle_minutes` without use. A caller
 * waits for a start no longer than its own wait (a server that never answered `initialize` held
 * every edit 30 s per file, on every edit); the start goes on in the background meanwhile. Diagnostics are pulled with `textDocument/diagnostic` when the server offers it, else the
 * `publishDiagnostics` it pushes (waiting a short quiet period). Servers stop with the app.
 * @module
 */
import { accessSync, constants, existsSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Config } from '../config/schema';
import { SvcError } from '../errors';
import type { CommandSpawner } from '../sandbox/spawn';
import {
  findExecutable,
  type LspServerStatus,
  type ProgramTrust,
  type ResolvedServer,
  resolveLanguageServers,
} from './lsp-catalog';
import { type Diagnostic, LspClient } from './lsp-client';
import { cannotStart, quirksOf } from './lsp-quirks';
import { createStarts, waitFor } from './lsp-starts';
import type { ResolvedPath } from './paths';

export type { Diagnostic } from './lsp-client';

export interface DiagnosticsResult {
  path: string;
  server: string;
  diagnostics: Diagnostic[];
  counts: Record<Diagnostic['severity'], number>;
  /** False when the server did not answer within the wait (the list may be partial). */
  complete: boolean;
  /** Diagnostics the server reported beyond what svc keeps for one file (lsp-limits.ts). */
  dropped?: number;
}

/** A server's live state, for the status readout. */
export interface LspRuntimeStatus extends LspServerStatus {
  running: boolean;
  pid?: number;
  /** Crashes and failed starts so far. */
  restarts: number;
  /** Why the last start or run failed. */
  last_error?: string;
  /** Set while the server backs off after too many failures in a row (no start until `retry_at`): why. */
  broken?: string;
  /** While it backs off: when a use may start it again (ISO 8601). */
  retry_at?: string;
}

export interface LanguageServers {
  /** The server id for a file, if any (configured or built-in). */
  serverFor(path: string): string | undefined;
  /** Every known server: configured, found, missing (with the install command), not needed. */
  status(): LspRuntimeStatus[];
  /** Any server svc may start for this workspace. */
  available(): boolean;
  diagnostics(
    target: ResolvedPath,
    text: string,
    options: { waitMs: number; signal?: AbortSignal },
  ): Promise<DiagnosticsResult>;
  /**
   * Run `fn` with the client of the file's server (started if needed, the file's text synced);
   * undefined when no server handles the file. The server is not stopped as idle meanwhile.
   * `open` syncs another file's text with the same server (ignored for a file it does not handle),
   * so a server without a project file knows the files a rename or a reference search may reach.
   */
  withClient<T>(
    target: ResolvedPath,
    text: string,
    fn: (lsp: {
      id: string;
      client: LspClient;
      uri: string;
      open(other: ResolvedPath, text: string): void;
    }) => Promise<T>,
    /** The caller's: a cancelled call stops waiting for a server still starting. */
    signal?: AbortSignal,
  ): Promise<T | undefined>;
  close(): Promise<void>;
}

const LANGUAGE_IDS: Record<string, string> = {
  ts: 'typescript',
  tsx: 'typescriptreact',
  js: 'javascript',
  jsx: 'javascriptreact',
  mjs: 'javascript',
  cjs: 'javascript',
  py: 'python',
  go: 'go',
  rs: 'rust',
  java: 'java',
  rb: 'ruby',
  php: 'php',
  cs: 'csharp',
  c: 'c',
  h: 'c',
  cpp: 'cpp',
  cc: 'cpp',
  hpp: 'cpp',
  json: 'json',
  css: 'css',
  html: 'html',
  md: 'markdown',
};

export interface LanguageServerDeps {
  root: string;
  env: Readonly<Record<string, string | undefined>>;
  config: () => Config;
  /**
   * Where servers run: inside the command sandbox, with the scrubbed environment the agent's
   * commands get. A server is a program the workspace can choose (its node_modules/.bin, an
   * `[lsp.*]` entry in its svc.toml, both writable by sandboxed commands): run as svc, outside,
   * with svc's environment, it was a way out of the sandbox with every key svc holds.
   */
  spawner?: Pick<CommandSpawner, 'plan' | 'env'>;
  /**
   * Whether the built-ins may run the workspace's own programs (its node_modules/.bin, its
   * typescript): config/trust.ts `workspaceProgramsTrust`. Absent: they may not (svc's own run).
   */
  programTrust?: () => ProgramTrust;
  /** The clock of the restart back-off (Date.now when absent). */
  now?: () => number;
}

export function createLanguageServers(deps: LanguageServerDeps): LanguageServers {
  const clients = new Map<string, Promise<LspClient>>();
  /** Aborted when the app closes: starts still waiting for `initialize` are killed. */
  const closing = new AbortController();
  const starts = createStarts({
    clients,
    start: (server) => startServer(server, deps, closing.signal),
    now: deps.now,
  });
  const idleTimers = new Map<string, NodeJS.Timeout>();
  let cached: { config: Config; resolved: ReturnType<typeof resolveLanguageServers> } | undefined;

  // Detection looks at the file system (and the trust store): redone when the config object
  // changes (a reload).
  const resolved = () => {
    const config = deps.config();
    if (cached?.config !== config)
      cached = {
        config,
        resolved: resolveLanguageServers(config, deps.root, deps.env, deps.programTrust?.()),
      };
    return cached.resolved;
  };

  const serverOf = (path: string): ResolvedServer | undefined => {
    const ext = path.split('.').pop()?.toLowerCase() ?? '';
    return resolved().servers.find((s) => s.extensions.includes(ext));
  };

  const stopIdle = (id: string) => {
    const pending = clients.get(id);
    clients.delete(id);
    idleTimers.delete(id);
    void pending?.then((c) => c.stop()).catch(() => undefined);
  };

  const inFlight = new Map<string, number>();
  // The idle clock runs only while nothing uses the server.
  const touch = (id: string) => {
    clearTimeout(idleTimers.get(id));
    idleTimers.delete(id);
    if ((inFlight.get(id) ?? 0) > 0 || !clients.has(id)) return;
    const ms = deps.config().options.lsp.idle_minutes * 60_000;
    idleTimers.set(id, setTimeout(() => stopIdle(id), ms).unref());
  };
  /** `startWaitMs`: the longest the caller waits for a start (it goes on in the background). */
  const using = async <T>(
    server: ResolvedServer,
    fn: (client: LspClient) => Promise<T>,
    startWaitMs?: number,
    signal?: AbortSignal,
  ): Promise<T> => {
    inFlight.set(server.id, (inFlight.get(server.id) ?? 0) + 1);
    clearTimeout(idleTimers.get(server.id));
    idleTimers.delete(server.id);
    try {
      return await fn(await waitFor(server.id, starts.client(server), startWaitMs, signal));
    } finally {
      inFlight.set(server.id, (inFlight.get(server.id) ?? 1) - 1);
      touch(server.id);
    }
  };

  const languageId = (server: ResolvedServer, abs: string) => {
    const ext = abs.split('.').pop()?.toLowerCase() ?? '';
    return server.language_id ?? LANGUAGE_IDS[ext] ?? ext;
  };

  return {
    serverFor: (path) => serverOf(path)?.id,
    available: () => resolved().servers.length > 0,
    status() {
      return resolved().statuses.map((s) => {
        return { ...s, ...starts.status(s.id) };
      });
    },
    async diagnostics(target, text, options) {
      const server = serverOf(target.abs);
      if (!server) {
        const ext = target.rel.split('.').pop();
        throw new SvcError(
          'invalid_input',
          `path: no language server handles .${ext} files here; svc config show-lsp lists the servers, or add one, e.g. [lsp.typescript] command = "typescript-language-server", args = ["--stdio"], extensions = ["ts", "tsx"]`,
        );
      }
      // One wait for all of it: a start included.
      const deadline = Date.now() + options.waitMs;
      const { diagnostics, complete, dropped } = await using(
        server,
        (lsp) =>
          lsp.diagnose(pathToFileURL(target.abs).href, languageId(server, target.abs), text, {
            ...options,
            waitMs: Math.max(0, deadline - Date.now()),
          }),
        options.waitMs,
        options.signal,
      );
      const counts = { error: 0, warning: 0, information: 0, hint: 0 };
      for (const d of diagnostics) counts[d.severity]++;
      return {
        path: target.rel,
        server: server.id,
        diagnostics,
        counts,
        complete,
        ...(dropped ? { dropped } : {}),
      };
    },
    async withClient(target, text, fn, signal) {
      const server = serverOf(target.abs);
      if (!server) return undefined;
      return using(
        server,
        (lsp) => {
          const uri = pathToFileURL(target.abs).href;
          const open = (other: ResolvedPath, otherText: string) => {
            if (serverOf(other.abs)?.id === server.id)
              lsp.sync(pathToFileURL(other.abs).href, languageId(server, other.abs), otherText);
          };
          open(target, text);
          return fn({ id: server.id, client: lsp, uri, open });
        },
        undefined,
        signal,
      );
    },
    async close() {
      closing.abort();
      for (const timer of idleTimers.values()) clearTimeout(timer);
      idleTimers.clear();
      const all = [...clients.values()];
      clients.clear();
      await Promise.all(all.map(async (c) => (await c.catch(() => undefined))?.stop()));
    },
  };
}

/** Whether `command` names a program that can run: a path (from `root`) or a name on PATH. */
function runnable(command: string, env: Readonly<Record<string, string | undefined>>, root: string): boolean {
  if (!command.includes('/')) return findExecutable(command, env) !== undefined;
  try {
    accessSync(resolve(root, command), constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Start a server: inside the command sandbox, with the scrubbed environment, when there is a spawner. */
async function startServer(
  server: ResolvedServer,
  deps: LanguageServerDeps,
  signal: AbortSignal,
): Promise<LspClient> {
  const { spawner } = deps;
  if (!spawner)
    return LspClient.start(server.id, server, deps.root, deps.env, quirksOf(server), undefined, signal);
  const plan = spawner.plan(deps.root);
  // The sandbox starts whatever it is given: a missing program is named before, not after.
  if (plan && !runnable(server.command, deps.env, deps.root)) throw cannotStart(server.id, server.command);
  const prefix = plan ? showPrograms(plan.prefix, server, deps.root) : undefined;
  return LspClient.start(server.id, server, deps.root, spawner.env(), quirksOf(server), prefix, signal);
}

/**
 * The sandbox's wrapper with the server's own files shown read-only where its private /tmp would
 * hide them: a server svc runs from its own install (`node …/typescript-language-server/lib/cli.mjs`,
 * tsserver.js) or a Node under /tmp (a CI clone, an unpacked release). Only the programs' own
 * packages are shown (programMount), never a whole directory of /tmp: the top one of a server's
 * path showed the projects and configs next to it, which the agent's commands cannot see. Bound
 * right after the `--tmpfs /tmp`, so every later bind (the workspace, the data dir hidden) still
 * wins over it.
 */
function showPrograms(prefix: readonly string[], server: ResolvedServer, root: string): string[] {
  const tsserver = (server.initialization_options as { tsserver?: { path?: unknown } } | undefined)?.tsserver
    ?.path;
  const paths = [
    server.command,
    ...server.args,
    process.execPath,
    ...(typeof tsserver === 'string' ? [tsserver] : []),
  ];
  const at = prefix.findIndex((arg, i) => arg === '--tmpfs' && prefix[i + 1] === '/tmp');
  if (at < 0) return [...prefix];
  const mounts = paths.flatMap((path) => programMount(path, root) ?? []);
  if (mounts.length === 0) return [...prefix];
  const shown = [...new Set(mounts.flatMap((m) => m.shown ?? []))];
  const links = new Map<string, string>();
  for (const { link, file } of mounts) {
    // A link inside a package shown is there already (bwrap cannot make it again).
    if (link && !shown.some((dir) => within(link, dir))) links.set(link, file);
  }
  return [
    ...prefix.slice(0, at + 2),
    ...shown.flatMap((path) => ['--ro-bind-try', path, path]),
    ...[...links].flatMap(([link, file]) => ['--symlink', file, link]),
    ...prefix.slice(at + 2),
  ];
}

const realOrSelf = (path: string) => {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
};

const within = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);

/**
 * What shows one program under /tmp: `shown`, the directory of its package (the nearest
 * package.json below the top directory of /tmp, one that neither holds the workspace nor is that
 * top directory), else the file alone; `link`, the symlink under /tmp it was named by. Nothing for
 * a file outside /tmp (visible read-only already) or inside the workspace (bound as the workspace).
 */
function programMount(
  path: string,
  root: string,
): { shown?: string; file: string; link?: string } | undefined {
  if (!isAbsolute(path)) return undefined;
  const file = realOrSelf(path);
  const workspace = realOrSelf(root);
  const link = path !== file && path.startsWith('/tmp/') && !within(path, workspace) ? path : undefined;
  if (!file.startsWith('/tmp/') || within(file, workspace)) return link ? { file, link } : undefined;
  const top = `/tmp/${file.slice('/tmp/'.length).split('/')[0]}`;
  let shown = file;
  for (let dir = dirname(file); within(dir, top) && dir !== top; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) {
      if (!within(workspace, dir)) shown = dir;
      break;
    }
  }
  return { shown, file, ...(link ? { link } : {}) };
}
