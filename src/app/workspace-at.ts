/**
 * The workspaces a node runs other workspaces' runs in (issue 19, the durable engine's queue):
 * with `[engine] kind = "dbos"` any node may dequeue a root run of any workspace sharing the store
 * (the workspaces are a volume every node sees, docs/engine.md). Such a run runs with its tools
 * and shell over its session's workspace, as a worktree override's run does over its checkout:
 * one workspace service per root, made on first use, with its own scratch data dir and sandbox.
 * Only while the durable engine runs on this node (`active`); otherwise runs use the node's own.
 * @module
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildRunInput } from '../agent/types';
import { globalConfigDir } from '../config/load';
import { type ProgramTrust, workspaceProgramsTrust } from '../config/trust';
import { workspacePartition } from '../engine/dbos-queue';
import { SvcError } from '../errors';
import type { EventBus } from '../events/bus';
import type { Sandbox } from '../sandbox/sandbox';
import type { CommandSpawner } from '../sandbox/spawn';
import type { MutationRequest } from '../tools/core/types';
import { createPostgresWorkspaceStores, createSqliteWorkspaceStores } from '../workspace/stores';
import { createWorkspace, type Workspace } from '../workspace/workspace';
import type { AppBase } from './base';

/**
 * Whether the language servers of the workspace at `root` may run its own programs: the trust
 * gate's mode (the user's files, env and flags), the surface's answer, the trust store.
 */
export function programTrustOf(base: AppBase, root: string): () => ProgramTrust {
  return () =>
    workspaceProgramsTrust({
      mode: base.loaded().trust?.mode ?? 'ask',
      workspace: root,
      input: base.configSources.trust,
      env: base.env,
      configDir: globalConfigDir(base.env),
    });
}

/** What the node's own workspace is built with, read when a run first needs another one. */
interface Parts {
  sandbox: Sandbox;
  spawner: CommandSpawner;
  mutationGuards: readonly ((request: MutationRequest) => void | Promise<void>)[];
}

export function createWorkspaceAt(
  base: AppBase,
  bus: EventBus,
  durable: { attached(): boolean },
  parts: () => Parts,
): (root: string) => ChildRunInput['workspace'] {
  const own = workspacePartition(base.workspace);
  const made = new Map<string, Workspace>();
  const make = (root: string): Workspace => {
    const { sandbox, spawner, mutationGuards } = parts();
    const dataDir = join(
      base.dataDir,
      'workspaces',
      createHash('sha256').update(root).digest('hex').slice(0, 16),
    );
    const rootSandbox = sandbox.forWorkspace(root, dataDir);
    const ws = createWorkspace({
      root,
      dataDir,
      env: base.env,
      config: base.config,
      stores: base.repository(createSqliteWorkspaceStores, (sql) => createPostgresWorkspaceStores({ sql })),
      bus,
      clock: base.clock,
      ids: base.ids,
      redactor: base.redactor,
      fetch: base.fetch,
      guards: () => mutationGuards,
      spawner: spawner.withSandbox(rootSandbox),
      sandbox: rootSandbox,
      programTrust: programTrustOf(base, root),
    });
    base.closers.push(() => ws.close());
    return ws;
  };
  return (root) => {
    if (!root || !durable.attached()) return undefined;
    const real = workspacePartition(root);
    if (real === own) return undefined;
    if (!existsSync(real))
      throw new SvcError(
        'unavailable',
        `the run's workspace ${real} does not exist on this node: the nodes of a cluster with [engine] kind = "dbos" must all see every workspace at the same path`,
      );
    let ws = made.get(real);
    if (!ws) {
      ws = make(real);
      made.set(real, ws);
    }
    return { root: real, ws };
  };
}
