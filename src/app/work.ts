/**
 * The fourth phase of createApp: where the work happens: the codebase summary, workflows and
 * recipes, the agent, the OS sandbox and the command spawner, the workspace (files, processes,
 * git) with its mutation guards, and the quality services over it.
 * @module
 */
import { createAgentService } from '../agent/agent-service';
import { createAgentStateStore } from '../agent/agent-state-store';
import { createPostgresAgentStateStore } from '../agent/pg-agent-state-store';
import { createRunLeases } from '../agent/run-leases';
import { createRunEngine } from '../engine/create-engine';
import { createDurableSlot } from '../engine/durable-slot';
import { createObserveService } from '../observe/service';
import { createPostgresObserveStores, createSqliteObserveStores } from '../observe/stores';
import { createQuality } from '../quality/quality';
import { createPostgresQualityStores, createSqliteQualityStores, sqliteQualityDb } from '../quality/stores';
import { createRecipeService } from '../recipes/recipe-service';
import { createSandbox } from '../sandbox/sandbox';
import { createCommandSpawner } from '../sandbox/spawn';
import { createAgentToolbox, withWorkspace } from '../tools/core/agent-toolbox';
import type { MutationRequest } from '../tools/core/types';
import { createPostgresWorkflowStores, createSqliteWorkflowStores } from '../workflows/stores';
import { createWorkflowService } from '../workflows/workflow-service';
import { createWorkspaceLeases } from '../workspace/leases';
import { createPostgresLeaseRepository } from '../workspace/pg-lease-repository';
import { createPostgresWorkspaceStores, createSqliteWorkspaceStores } from '../workspace/stores';
import { createWorkspace } from '../workspace/workspace';
import type { AppBase } from './base';
import type { AppCore } from './core';
import type { Late } from './operations';
import { createWorkspaceAt, programTrustOf } from './workspace-at';

export function createWork(base: AppBase, core: AppCore, late: Late) {
  const { clock, ids, log, redactor, workspace, dataDir, env } = base;
  const { bus, sessions, runs, providers } = core;
  const observe = createObserveService({
    stores: base.repository(createSqliteObserveStores, (sql) => createPostgresObserveStores({ sql })),
    clock,
    ids,
    config: base.config,
    workspace,
    // Read only when describe_context computes a summary, after the workspace is built.
    ws: () => ws,
  });
  const workflows = createWorkflowService({
    stores: base.repository(
      (db) => createSqliteWorkflowStores({ db, clock, ids }),
      (sql) => createPostgresWorkflowStores({ sql, clock, ids }),
    ),
    clock,
    ids,
    log,
    bus,
    redactor,
    config: base.config,
    sessions,
    runs,
    agent: () => agent,
    tools: () => late.app().tools,
  });
  const recipes = createRecipeService({
    workspace,
    env,
    config: base.config,
    tools: () => late.app().tools,
    ws: () => ws,
    redactor,
    workflows: () => workflows,
  });
  /** Checks every mutating tool runs first (hard workspace claims); later phases add theirs. */
  const mutationGuards: ((request: MutationRequest) => void | Promise<void>)[] = [];
  // Cluster mode: one writer per workspace across nodes (a run's first change takes the lease).
  const runLeases =
    base.store.kind === 'postgres'
      ? createRunLeases({
          leases: createWorkspaceLeases({
            repo: createPostgresLeaseRepository({ sql: base.store.sql }),
            clock,
            node: core.runner,
            onError: (error) => log.warn('workspace lease renewal failed', { error }),
          }),
          log,
        })
      : undefined;
  if (runLeases) mutationGuards.push((request) => runLeases.guard(request));
  // issue 19: with [engine] kind = "dbos" a serving node's root runs run as DBOS workflows.
  const durable = createDurableSlot();
  const agent = createAgentService({
    workspace,
    dataDir,
    env,
    clock,
    ids,
    log,
    redactor,
    config: base.config,
    transactions: base.store.transactions,
    agentState: base.repository(createAgentStateStore, (sql) => createPostgresAgentStateStore({ sql })),
    bus,
    sessions,
    runs,
    permissions: core.permissions,
    models: providers.models,
    providers,
    telemetry: core.telemetry,
    observe,
    adaptive: () => late.app().adaptive,
    mcpClients: () => late.app().mcpClients,
    funnelContext: (sessionId, overrides, start) => late.app().funnelContext(sessionId, overrides, start),
    onClose: (fn) => base.closers.push(fn),
    toolbox: (root) => createAgentToolbox(root ? withWorkspace(late.app(), root) : late.app()),
    runLeases,
    durable: durable.durable,
    workspaceAt: createWorkspaceAt(base, bus, durable, () => ({ sandbox, spawner, mutationGuards })),
  });
  // issue 19: the run engine seam; the in-process engine over the agent and the ledger.
  const engine = createRunEngine(
    { kind: base.config().engine.kind, store: base.store.kind },
    { agent, runs, sessions, pending: (sessionId) => core.permissions.listPending(sessionId) },
  );
  const sandbox = createSandbox({
    config: base.config,
    workspace,
    dataDir,
    env,
    credentialEnv: () => providers.entries().flatMap((e) => e.api_key_env),
  });
  // Every command svc starts goes through it: the OS sandbox when active, a scrubbed environment.
  const spawner = createCommandSpawner({
    sandbox,
    env,
    isSecretValue: (value) => redactor.string(value) !== value,
    record: (runId, type, payload) => runs.append(runId, type, payload),
  });
  const ws = createWorkspace({
    root: workspace,
    dataDir,
    env,
    config: base.config,
    stores: base.repository(createSqliteWorkspaceStores, (sql) => createPostgresWorkspaceStores({ sql })),
    bus,
    clock,
    ids,
    redactor,
    fetch: base.fetch,
    guards: () => mutationGuards,
    spawner,
    sandbox,
    programTrust: programTrustOf(base, workspace),
  });
  base.closers.push(() => ws.close());
  base.closers.push(() => workflows.close());
  const quality = createQuality({
    stores: base.repository(
      (db) => createSqliteQualityStores(sqliteQualityDb({ dataDir, db, hasDb: base.hasDb })),
      (sql) => createPostgresQualityStores({ sql }),
    ),
    config: base.config,
    clock,
    ids,
    bus,
    log,
    redactor,
    runs,
    ws,
  });
  base.closers.push(() => quality.close());
  const attachDurable = durable.attach;
  return {
    observe,
    workflows,
    recipes,
    agent,
    engine,
    sandbox,
    spawner,
    mutationGuards,
    ws,
    quality,
    attachDurable,
  };
}

export type AppWork = ReturnType<typeof createWork>;
