/**
 * The run engine a config selects (`[engine] kind`, docs/engine.md). Only the in-process engine
 * is in this build; `dbos` is refused with the reason (./engine-kind.ts).
 * @module
 */
import { checkEngineKind, type EngineKind } from './engine-kind';
import { createInProcessEngine, type InProcessEngineDeps } from './in-process-engine';
import type { RunEngine } from './run-engine';

export function createRunEngine(
  selection: { kind: EngineKind; store: 'sqlite' | 'postgres' },
  deps: InProcessEngineDeps,
): RunEngine {
  checkEngineKind(selection.kind, selection.store);
  return createInProcessEngine(deps);
}
