/**
 * The workspaces a node runs other workspaces' runs in (issue 19, the durable engine's queue):
 * with `[engine] kind = "dbos"` any node may dequeue a root run of any workspace sharing the store
 * (the workspaces are a volume every node sees, docs/engine.md). Such a run runs with its tools
 * and shell over its session's workspace, as a worktree override's run does over its checkout:
 * one workspace service per root, made on first use, with its own scratch data dir.
 * @module
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildRunInput } from '../agent/types';
import { workspacePartition } from '../engine/dbos-queue';
import { SvcError } from '../errors';
import type { Workspace } from '../workspace/workspace';

export function createWorkspaceAt(deps: {
  /** This node's own workspace. */
  own: string;
  dataDir: string;
  make(root: string, dataDir: string): Workspace;
}): (root: string) => ChildRunInput['workspace'] {
  const own = workspacePartition(deps.own);
  const made = new Map<string, Workspace>();
  return (root) => {
    if (!root) return undefined;
    const real = workspacePartition(root);
    if (real === own) return undefined;
    if (!existsSync(real))
      throw new SvcError(
        'unavailable',
        `the run's workspace ${real} does not exist on this node: the nodes of a cluster with [engine] kind = "dbos" must all see every workspace at the same path`,
      );
    let ws = made.get(real);
    if (!ws) {
      const slug = createHash('sha256').update(real).digest('hex').slice(0, 16);
      ws = deps.make(real, join(deps.dataDir, 'workspaces', slug));
      made.set(real, ws);
    }
    return { root: real, ws };
  };
}
