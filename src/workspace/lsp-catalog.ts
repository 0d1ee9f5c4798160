/**
 * The language servers svc knows without configuration, and which of them this workspace gets.
 * A built-in server applies when the workspace uses its language (a marker file such as
 * tsconfig.json, go.mod or Cargo.toml at the root, or a source file of that language at the root
 * or in src/) and its executable is found: in svc's own dependencies (typescript-language-server,
 * typescript) or on PATH. A program of the workspace's own (its node_modules/.bin, its
 * node_modules/typescript, a PATH entry inside it) is workspace code: it is used only when the
 * workspace is trusted (config/trust.ts `workspaceProgramsTrust`), else svc's own or one on PATH
 * outside the workspace is, and the readout says which and why. `[lsp.<id>]` entries always apply
 * and replace the built-in of the same id; `options.lsp.auto = false` turns the built-ins off.
 * @module
 */
import { accessSync, constants, existsSync, readdirSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, isAbsolute, join, relative, resolve } from 'node:path';
import type { Config, LspServerConfig } from '../config/schema';
import type { ProgramTrust } from '../config/trust';

export type { ProgramTrust } from '../config/trust';

export type LspSource = 'config' | 'builtin';

/** Whose program a built-in runs: svc's own dependency, the workspace's own, or one on PATH. */
export type LspOrigin = 'svc' | 'workspace' | 'path';

/** One server as the status readout shows it. */
export interface LspServerStatus {
  id: string;
  source: LspSource;
  /** The workspace uses the server's language (always true for a configured server). */
  detected: boolean;
  /** configured: from [lsp.<id>]; found: built-in and installed; missing: built-in, not installed. */
  state: 'configured' | 'found' | 'missing' | 'disabled' | 'not_needed';
  extensions: string[];
  command?: string;
  args?: string[];
  /** A found built-in: whose program runs (the workspace's only when it is trusted). */
  origin?: LspOrigin;
  /** typescript: the tsserver.js the server is given, and whose it is. */
  tsserver?: { path: string; origin: LspOrigin };
  /** What to run to install it (missing built-ins). */
  install?: string;
  /** Why it is in its state and which program it runs, one line. */
  note: string;
}

/** A server svc can start. */
export interface ResolvedServer extends LspServerConfig {
  id: string;
  source: LspSource;
}

type Env = Readonly<Record<string, string | undefined>>;

/** Where a built-in looks: the workspace, svc's environment, and whether the workspace is trusted. */
interface Lookup {
  root: string;
  env: Env;
  trust: ProgramTrust;
  /** The workspace's own programs passed over (untrusted), as the readout names them. */
  passed: Set<string>;
}

interface Located extends Omit<LspServerConfig, 'extensions' | 'disabled'> {
  origin: LspOrigin;
  tsserver?: { path: string; origin: LspOrigin };
}

interface Builtin {
  id: string;
  extensions: string[];
  markers: string[];
  install: string;
  /** Command, args and initialization options, or a reason it cannot run. */
  locate(lookup: Lookup, config: Config): Located | { missing: string };
}

const ownRequire = createRequire(import.meta.url);

function ownModule(specifier: string): string | undefined {
  try {
    return ownRequire.resolve(specifier);
  } catch {
    return undefined;
  }
}

/** An executable named `name` on PATH (or in the workspace's node_modules/.bin). */
export function findExecutable(name: string, env: Env, root?: string): string | undefined {
  return executables(name, env, root)[0];
}

/** Every executable named `name`: in the workspace's node_modules/.bin (with `root`), then on PATH. */
function executables(name: string, env: Env, root?: string): string[] {
  const dirs = [
    ...(root ? [join(root, 'node_modules', '.bin')] : []),
    ...(env.PATH ?? '').split(delimiter).filter(Boolean),
  ];
  const names = process.platform === 'win32' ? [`${name}.cmd`, `${name}.exe`, name] : [name];
  const found: string[] = [];
  for (const dir of dirs) {
    for (const candidate of names) {
      const path = join(dir, candidate);
      try {
        accessSync(path, constants.X_OK);
        found.push(path);
        break;
      } catch {
        // not here
      }
    }
  }
  return found;
}

const real = (path: string) => {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
};

/** Whether `path` (relative ones from the root, as a server is started there) is in the workspace. */
export function insideWorkspace(path: string, root: string): boolean {
  const rel = relative(real(root), real(resolve(root, path)));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** How the readout names a program the workspace holds. */
const shown = (path: string, root: string) => relative(real(root), real(resolve(root, path))) || '.';

/**
 * The first program named `name` svc may run: the workspace's own (its node_modules/.bin unless
 * `bin` is false, a PATH entry inside it) only when it is trusted; those passed over are recorded
 * for the readout.
 */
function program(name: string, lookup: Lookup, bin = true): { path: string; origin: LspOrigin } | undefined {
  for (const path of executables(name, lookup.env, bin ? lookup.root : undefined)) {
    if (!insideWorkspace(path, lookup.root)) return { path, origin: 'path' };
    if (lookup.trust.trusted) return { path, origin: 'workspace' };
    lookup.passed.add(shown(path, lookup.root));
  }
  return undefined;
}

function onPath(name: string, args: string[]) {
  return (lookup: Lookup): Located | { missing: string } => {
    const found = program(name, lookup);
    return found
      ? { command: found.path, args, origin: found.origin }
      : { missing: `${name} is not on PATH` };
  };
}

/** tsserver: the workspace's own typescript when it is trusted, else the one svc depends on. */
function tsserverOf(lookup: Lookup): { path: string; origin: LspOrigin } | undefined {
  const workspaceTs = join(lookup.root, 'node_modules', 'typescript', 'lib', 'tsserver.js');
  if (existsSync(workspaceTs)) {
    if (lookup.trust.trusted) return { path: workspaceTs, origin: 'workspace' };
    lookup.passed.add(shown(join(lookup.root, 'node_modules', 'typescript'), lookup.root));
  }
  const own = ownModule('typescript/lib/tsserver.js');
  return own ? { path: own, origin: 'svc' } : undefined;
}

/**
 * typescript-language-server with a tsserver: the workspace's own server (trusted only), else the
 * one svc depends on, else one on PATH.
 */
function locateTypescript(lookup: Lookup, config: Config): Located | { missing: string } {
  const tsserver = tsserverOf(lookup);
  if (!tsserver) return { missing: 'no typescript package svc may use' };
  // No automatic typing acquisition: tsserver would otherwise run `npm install` of
  // `types-registry` and `@types/*` off the network, into the user's npm cache, during a run.
  // A heap limit: one type-level recursion took tsserver past 4 GB.
  const initialization_options = {
    tsserver: { path: tsserver.path },
    disableAutomaticTypingAcquisition: true,
    maxTsServerMemory: config.options.lsp.tsserver_memory_mb,
  };
  const args = ['--stdio'];
  const local = program('typescript-language-server', { ...lookup, env: {} });
  if (local) return { command: local.path, args, initialization_options, origin: local.origin, tsserver };
  const bundled = ownModule('typescript-language-server/lib/cli.mjs');
  if (bundled)
    return {
      command: process.execPath,
      args: [bundled, ...args],
      initialization_options,
      origin: 'svc',
      tsserver,
    };
  const global = program('typescript-language-server', lookup, false);
  if (global) return { command: global.path, args, initialization_options, origin: global.origin, tsserver };
  return { missing: 'typescript-language-server is not installed' };
}

const BUILTINS: Builtin[] = [
  {
    id: 'typescript',
    extensions: ['ts', 'tsx', 'mts', 'cts', 'js', 'jsx', 'mjs', 'cjs'],
    markers: ['tsconfig.json', 'jsconfig.json', 'package.json'],
    install:
      'svc brings typescript-language-server and typescript: npm ci in svc (or npm install --save-dev typescript in a trusted workspace)',
    locate: locateTypescript,
  },
  {
    id: 'python',
    extensions: ['py', 'pyi'],
    markers: ['pyproject.toml', 'setup.py', 'setup.cfg', 'requirements.txt', 'Pipfile'],
    install: 'npm install -g pyright (or: pip install python-lsp-server)',
    locate(lookup) {
      const pyright = program('pyright-langserver', lookup);
      if (pyright) return { command: pyright.path, args: ['--stdio'], origin: pyright.origin };
      const pylsp = program('pylsp', lookup);
      if (pylsp) return { command: pylsp.path, args: [], origin: pylsp.origin };
      return { missing: 'neither pyright-langserver nor pylsp is on PATH' };
    },
  },
  {
    id: 'go',
    extensions: ['go'],
    markers: ['go.mod', 'go.work'],
    install: 'go install golang.org/x/tools/gopls@latest',
    locate: onPath('gopls', []),
  },
  {
    id: 'rust',
    extensions: ['rs'],
    markers: ['Cargo.toml'],
    install: 'rustup component add rust-analyzer',
    locate: onPath('rust-analyzer', []),
  },
];

/** The extensions of files at the root and in src/ (a cheap look, not a walk). */
function topLevelExtensions(root: string): Set<string> {
  const found = new Set<string>();
  for (const dir of [root, join(root, 'src')]) {
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names.slice(0, 2000)) {
      const dot = name.lastIndexOf('.');
      if (dot > 0) found.add(name.slice(dot + 1).toLowerCase());
    }
  }
  return found;
}

const WHOSE: Record<LspOrigin, string> = { svc: "svc's own", workspace: "the workspace's", path: 'on PATH' };

/** The readout's line: whose programs run, which of the workspace's were passed over and why. */
function passedOver(lookup: Lookup): string {
  return lookup.passed.size
    ? `; not the workspace's own ${[...lookup.passed].join(', ')}: ${lookup.trust.why}`
    : '';
}

function foundNote(located: Located, lookup: Lookup): string {
  const whose = [`${WHOSE[located.origin]} server`];
  if (located.tsserver) whose.push(`${WHOSE[located.tsserver.origin]} TypeScript`);
  const workspace = located.origin === 'workspace' || located.tsserver?.origin === 'workspace';
  return `${whose.join(' and ')}${workspace ? ` (${lookup.trust.why})` : ''}${passedOver(lookup)}; started on first use`;
}

/**
 * Every server the readout lists and the ones svc may start (`servers`), in that order: the
 * configured ones, then the built-ins. `trust` says whether a built-in may run the workspace's own
 * programs (absent: it may not).
 */
export function resolveLanguageServers(
  config: Config,
  root: string,
  env: Env,
  trust: ProgramTrust = { trusted: false, why: 'workspace not trusted' },
): { statuses: LspServerStatus[]; servers: ResolvedServer[] } {
  const statuses: LspServerStatus[] = [];
  const servers: ResolvedServer[] = [];
  for (const [id, server] of Object.entries(config.lsp)) {
    const state = server.disabled ? 'disabled' : 'configured';
    statuses.push({
      id,
      source: 'config',
      detected: true,
      state,
      extensions: server.extensions,
      command: server.command,
      args: server.args,
      note: server.disabled ? `[lsp.${id}] disabled = true` : `[lsp.${id}] in the config`,
    });
    if (!server.disabled) servers.push({ ...server, id, source: 'config' });
  }
  const extensions = topLevelExtensions(root);
  for (const builtin of BUILTINS) {
    if (config.lsp[builtin.id]) continue;
    const detected =
      builtin.markers.some((m) => existsSync(join(root, m))) ||
      builtin.extensions.some((e) => extensions.has(e));
    const base = { id: builtin.id, source: 'builtin' as const, detected, extensions: builtin.extensions };
    if (!config.options.lsp.auto) {
      statuses.push({ ...base, state: 'disabled', note: 'options.lsp.auto = false' });
      continue;
    }
    if (!detected) {
      statuses.push({ ...base, state: 'not_needed', note: 'the workspace does not use this language' });
      continue;
    }
    const lookup: Lookup = { root, env, trust, passed: new Set() };
    const located = builtin.locate(lookup, config);
    if ('missing' in located) {
      const note = `${located.missing}${passedOver(lookup)}`;
      statuses.push({ ...base, state: 'missing', install: builtin.install, note });
      continue;
    }
    const { origin, tsserver, ...server } = located;
    statuses.push({
      ...base,
      state: 'found',
      command: located.command,
      args: located.args,
      origin,
      ...(tsserver ? { tsserver } : {}),
      note: foundNote(located, lookup),
    });
    servers.push({
      ...server,
      id: builtin.id,
      source: 'builtin',
      extensions: builtin.extensions,
      disabled: false,
    });
  }
  return { statuses, servers };
}
