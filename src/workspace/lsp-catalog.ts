/**
 * The language servers svc knows without configuration, and which of them this workspace gets.
 * A built-in server applies when the workspace uses its language (a marker file such as
 * tsconfig.json, go.mod or Cargo.toml at the root, or a source file of that language at the root
 * or in src/) and its executable is found: in the workspace's node_modules/.bin, in svc's own
 * dependencies (typescript-language-server) or on PATH. `[lsp.<id>]` entries always apply and
 * replace the built-in of the same id; `options.lsp.auto = false` turns the built-ins off.
 * @module
 */
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, join } from 'node:path';
import type { Config, LspServerConfig } from '../config/schema';

export type LspSource = 'config' | 'builtin';

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
  /** What to run to install it (missing built-ins). */
  install?: string;
  /** Why it is in its state, one line. */
  note: string;
}

/** A server svc can start. */
export interface ResolvedServer extends LspServerConfig {
  id: string;
  source: LspSource;
}

interface Builtin {
  id: string;
  extensions: string[];
  markers: string[];
  install: string;
  /** Command, args and initialization options, or a reason it cannot run. */
  locate(root: string, env: Env): Omit<LspServerConfig, 'extensions' | 'disabled'> | { missing: string };
}

type Env = Readonly<Record<string, string | undefined>>;

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
  const dirs = [
    ...(root ? [join(root, 'node_modules', '.bin')] : []),
    ...(env.PATH ?? '').split(delimiter).filter(Boolean),
  ];
  const names = process.platform === 'win32' ? [`${name}.cmd`, `${name}.exe`, name] : [name];
  for (const dir of dirs) {
    for (const candidate of names) {
      const path = join(dir, candidate);
      try {
        accessSync(path, constants.X_OK);
        return path;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

function onPath(name: string, args: string[]) {
  return (root: string, env: Env) => {
    const command = findExecutable(name, env, root);
    return command ? { command, args } : { missing: `${name} is not on PATH` };
  };
}

const BUILTINS: Builtin[] = [
  {
    id: 'typescript',
    extensions: ['ts', 'tsx', 'mts', 'cts', 'js', 'jsx', 'mjs', 'cjs'],
    markers: ['tsconfig.json', 'jsconfig.json', 'package.json'],
    install: 'npm install --save-dev typescript (svc brings typescript-language-server)',
    locate(root, env) {
      // tsserver: the workspace's own typescript first, else the one svc runs with (if any).
      const workspaceTs = join(root, 'node_modules', 'typescript', 'lib', 'tsserver.js');
      const tsserver = existsSync(workspaceTs) ? workspaceTs : ownModule('typescript/lib/tsserver.js');
      if (!tsserver) return { missing: 'no typescript package in the workspace node_modules' };
      const local = findExecutable('typescript-language-server', {}, root);
      const bundled = ownModule('typescript-language-server/lib/cli.mjs');
      const global = findExecutable('typescript-language-server', env);
      // No automatic typing acquisition: tsserver would otherwise run `npm install` of
      // `types-registry` and `@types/*` off the network, into the user's npm cache, during a run.
      const initialization_options = {
        tsserver: { path: tsserver },
        disableAutomaticTypingAcquisition: true,
      };
      if (local) return { command: local, args: ['--stdio'], initialization_options };
      if (bundled) return { command: process.execPath, args: [bundled, '--stdio'], initialization_options };
      if (global) return { command: global, args: ['--stdio'], initialization_options };
      return { missing: 'typescript-language-server is not installed' };
    },
  },
  {
    id: 'python',
    extensions: ['py', 'pyi'],
    markers: ['pyproject.toml', 'setup.py', 'setup.cfg', 'requirements.txt', 'Pipfile'],
    install: 'npm install -g pyright (or: pip install python-lsp-server)',
    locate(root, env) {
      const pyright = findExecutable('pyright-langserver', env, root);
      if (pyright) return { command: pyright, args: ['--stdio'] };
      const pylsp = findExecutable('pylsp', env, root);
      if (pylsp) return { command: pylsp, args: [] };
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

/**
 * Every server the readout lists and the ones svc may start (`servers`), in that order: the
 * configured ones, then the built-ins.
 */
export function resolveLanguageServers(
  config: Config,
  root: string,
  env: Env,
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
    const located = builtin.locate(root, env);
    if ('missing' in located) {
      statuses.push({ ...base, state: 'missing', install: builtin.install, note: located.missing });
      continue;
    }
    statuses.push({
      ...base,
      state: 'found',
      command: located.command,
      args: located.args,
      note: 'started on first use',
    });
    servers.push({
      ...located,
      id: builtin.id,
      source: 'builtin',
      extensions: builtin.extensions,
      disabled: false,
    });
  }
  return { statuses, servers };
}
