/**
 * The run engine a config selects (`[engine] kind`, docs/engine.md): `dbos` needs the PostgreSQL
 * store (./engine-kind.ts).
 * @module
 */
import { checkEngineKind, type EngineKind } from './engine-kind';
import { createInProcessEngine, type InProcessEngineDeps } from './in-process-engine';
import type { RunEngine } from './run-engine';

export function createRunEngine(
  selection: { kind: EngineKind; store: 'sqlite' | 'postgres' },
  deps: InProcessEngineDeps,
): RunEngine {
  // The DBOS engine works under the agent (its root runs are DBOS workflows: ./dbos-runs.ts,
  // launched by a serving node); the operations on runs are the same.
  return createInProcessEngine(deps, checkEngineKind(selection.kind, selection.store));
}
