/**
 * The quality services (`app.quality`): apply_patch (multi-file patches through the one mutation
 * path), edit capsules (each agent run's changes as a reviewable, revertible unit) and the finding
 * lifecycle (failing checks and diagnostics errors, followed until fixed, waived or stale). Built
 * once by createApp; they hook into the change committer, the run ledger and the bus, and never
 * into the agent loop.
 * @module
 */
import type { Config } from '../config/schema';
import type { EventBus } from '../events/bus';
import { ownContext } from '../events/own-context';
import type { SessionEventPayloads } from '../events/types';
import type { Logger } from '../log';
import type { Redactor } from '../redact';
import type { RunLedger } from '../runs/run-ledger';
import type { Clock, Ids } from '../util/ids';
import type { Workspace } from '../workspace/workspace';
import { createPatchService, type PatchService } from './apply-patch';
import { type CapsuleService, createCapsuleService } from './capsules';
import { startFindingObserver } from './finding-observer';
import { createFindingService, type FindingService } from './findings';
import type { QualityStores } from './stores';

export interface Quality {
  readonly patches: PatchService;
  readonly capsules: CapsuleService;
  readonly findings: FindingService;
  close(): void;
}

export function createQuality(deps: {
  /** The async repositories (./stores.ts): SQLite or PostgreSQL. */
  stores: QualityStores;
  config: () => Config;
  clock: Clock;
  ids: Ids;
  bus: EventBus;
  log: Logger;
  redactor: Redactor;
  runs: RunLedger;
  ws: Workspace;
}): Quality {
  const log = deps.log.child({ component: 'quality' });
  const patches = createPatchService({
    log: deps.stores.patchLog,
    clock: deps.clock,
    paths: deps.ws.paths,
    changes: deps.ws.changes,
    reads: deps.ws.reads,
    redact: (text) => deps.redactor.string(text),
  });
  const capsules = createCapsuleService({
    capsules: deps.stores.capsules,
    clock: deps.clock,
    ids: deps.ids,
    bus: deps.bus,
    log,
    enabled: () => deps.config().options.edit_capsules,
    history: deps.ws.history,
    checkpoints: deps.ws.checkpoints,
    changes: deps.ws.changes,
    paths: deps.ws.paths,
    runs: deps.runs,
  });
  const findings = createFindingService({
    findings: deps.stores.findings,
    clock: deps.clock,
    ids: deps.ids,
    bus: deps.bus,
  });

  const removeHook = deps.ws.changes.beforeWrite(capsules.beforeWrite);
  const stopObserver = startFindingObserver({ runs: deps.runs, bus: deps.bus, findings, log });
  // The capsule's reads and writes are its own: never in the transaction of whoever published the
  // run's end (../events/own-context.ts).
  const own = ownContext('svc.edit-capsules');
  const unsubscribe = deps.bus.subscribe('*', (event) => {
    if (event.type !== 'run.finished') return;
    // Capsules off and none recording (every compat request's end): nothing to queue.
    if (capsules.nothingToFinalize()) return;
    const payload = event.payload as SessionEventPayloads['run.finished'];
    // A bus listener is sync: the capsule is built in the background, finalizations one at a
    // time in run order (the capsule service queues them); a failure is logged as before.
    own.run(
      () =>
        void capsules
          .finalize({ sessionId: payload.session_id, runId: payload.run_id, status: payload.status })
          .catch((error) => log.warn('edit capsule not built', { run_id: payload.run_id, error })),
    );
  });

  return {
    patches,
    capsules,
    findings,
    close() {
      unsubscribe();
      stopObserver();
      removeHook();
    },
  };
}
