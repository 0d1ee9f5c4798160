/**
 * The third phase of createApp: the scheduler and the autopilot, workspace claims and markers,
 * deployments, remote agents, plugins and contracts. What they read of later phases (the agent,
 * the recipes, the App for a reload) they read through `late` when a job fires, never at build.
 * @module
 */
import { createContractRepository } from '../contracts/contract-repository';
import { createContractService } from '../contracts/contract-service';
import { createPostgresContractRepository } from '../contracts/pg-contract-repository';
import { createClaimRepository } from '../coordination/claim-repository';
import { createClaimService } from '../coordination/claims';
import { createMarkerRepository } from '../coordination/marker-repository';
import { createMarkerService } from '../coordination/markers';
import { createPostgresClaimRepository } from '../coordination/pg-claim-repository';
import { createPostgresMarkerRepository } from '../coordination/pg-marker-repository';
import { createDeployService } from '../deploy/deploy-service';
import { createDeploymentRepository } from '../deploy/deployment-repository';
import { createPostgresDeploymentRepository } from '../deploy/pg-deployment-repository';
import { createPostgresPluginRepository } from '../plugins/pg-plugin-repository';
import { createPluginRepository } from '../plugins/plugin-repository';
import { createPluginService } from '../plugins/plugin-service';
import { createRemoteAgents } from '../remote/delegation';
import { createPostgresServedTaskRepository } from '../remote/pg-served-task-repository';
import { createPostgresA2aStore } from '../remote/pg-task-store';
import { createServedTaskRepository } from '../remote/served-task-repository';
import { createA2aStore } from '../remote/task-store';
import { createAutopilotWorker } from '../scheduler/autopilot-worker';
import { createDaemonRepository } from '../scheduler/daemon-repository';
import { createDaemonRegistry } from '../scheduler/daemons';
import { createPostgresDaemonRepository } from '../scheduler/pg-daemon-repository';
import { createPostgresScheduleStore } from '../scheduler/pg-schedule-store';
import { createProcessTracker } from '../scheduler/process-tracker';
import { createScheduleStore } from '../scheduler/schedule-store';
import { createScheduler, recipeToolAvailable } from '../scheduler/scheduler';
import type { AppBase } from './base';
import type { AppCore } from './core';
import type { App } from './types';

/** The App as it is once createApp returns: read only inside callbacks, never while building. */
export interface Late {
  app(): App;
}

export function createOperations(base: AppBase, core: AppCore, late: Late) {
  const { clock, ids, log, redactor, workspace } = base;
  const { sessions, permissions } = core;
  const scheduler = createScheduler({
    store: base.repository(
      (db) => createScheduleStore({ db, clock, ids }),
      (sql) => createPostgresScheduleStore({ sql, clock, ids }),
    ),
    clock,
    log,
    redactor,
    config: base.config,
    sessions,
    permissions,
    agent: () => late.app().agent,
    recipes: () => late.app().recipes,
    recipeToolAvailable: () => recipeToolAvailable(late.app()),
  });
  const autopilot = createAutopilotWorker({
    runs: core.runs,
    agent: () => late.app().agent,
    scheduler,
    config: base.config,
    clock,
    log,
    redactor,
  });
  const claims = createClaimService({
    claims: base.repository(createClaimRepository, (sql) => createPostgresClaimRepository({ sql })),
    workspace,
    clock,
    ids,
    bus: core.bus,
  });
  const markers = createMarkerService({
    markers: base.repository(createMarkerRepository, (sql) => createPostgresMarkerRepository({ sql })),
    workspace,
    clock,
    ids,
  });
  const deploy = createDeployService({
    rows: base.repository(createDeploymentRepository, (sql) => createPostgresDeploymentRepository({ sql })),
    clock,
    config: base.config,
    workspace,
    dataDir: base.dataDir,
    env: base.env,
    credentials: core.providers.store,
    fetch: base.fetch,
    redactor,
    log,
  });
  const remote = createRemoteAgents({
    store: base.repository(
      (db) => createA2aStore({ db, clock }),
      (sql) => createPostgresA2aStore({ sql, clock }),
    ),
    served: base.repository(createServedTaskRepository, (sql) => createPostgresServedTaskRepository({ sql })),
    clock,
    ids,
    fetch: base.fetch,
    config: base.config,
    redactor,
    log,
    deployed: () => deploy.endpoints(),
  });
  const plugins = createPluginService({
    rows: base.repository(createPluginRepository, (sql) => createPostgresPluginRepository({ sql })),
    clock,
    dataDir: base.dataDir,
    workspace,
    env: base.env,
    config: base.config,
    provenance: () => base.loaded().provenance,
    reload: () => late.app().reloadConfig(),
    log,
  });
  const contracts = createContractService({
    store: base.repository(createContractRepository, (sql) => createPostgresContractRepository({ sql })),
    clock,
    config: base.config,
    workspace,
    markers: () => markers,
    session: async (id) => await sessions.get(id),
    redactor,
  });
  return {
    scheduler,
    autopilot,
    claims,
    markers,
    deploy,
    remote,
    plugins,
    contracts,
    processes: createProcessTracker({ now: () => clock.now() }),
    daemons: createDaemonRegistry({
      rows: base.repository(createDaemonRepository, (sql) => createPostgresDaemonRepository({ sql })),
      clock,
      ids,
    }),
  };
}

export type AppOperations = ReturnType<typeof createOperations>;
