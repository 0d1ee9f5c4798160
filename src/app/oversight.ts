/**
 * The fifth phase of createApp: what watches and shapes the work: the recommendation ledger and
 * the health follow-ons, operating packs and the adaptive layer (each optional), the tool
 * registry (its gates are evaluated on first use, once the App is whole) and the MCP clients.
 * @module
 */
import { join } from 'node:path';
import { createPostgresAdaptiveStore } from '../adaptive/pg-adaptive-store';
import { createAdaptiveService } from '../adaptive/service';
import { createAdaptiveStore } from '../adaptive/store';
import { globalConfigDir } from '../config/load';
import { createActivationStore } from '../health/activation-store';
import { createHealthFollowons } from '../health/followons';
import { createPostgresActivationStore } from '../health/pg-activation-store';
import { createFileAuthStore } from '../mcp-client/auth-store';
import { createMcpClientManager } from '../mcp-client/manager';
import { createPackController } from '../packs/controller';
import { createPostgresPackStore } from '../packs/pg-store';
import { createPackStore } from '../packs/store';
import type { SessionStart, ToolPolicy } from '../permissions/tool-policy';
import { createPostgresRecommendationRepository } from '../readouts/cognition/pg-recommendation-store';
import {
  createRecommendationLedger,
  createRecommendationRepository,
} from '../readouts/cognition/recommendation-store';
import { startRecommendationRecorder } from '../readouts/cognition/recorder';
import { canonicalToolName, isConfigAlias } from '../tools/core/aliases';
import { createToolRegistry } from '../tools/core/registry';
import { allTools } from '../tools/index';
import type { AppBase } from './base';
import type { AppCore } from './core';
import type { AppOperations, Late } from './operations';
import type { AppOptions } from './types';
import type { AppWork } from './work';

export function createOversight(
  base: AppBase,
  core: AppCore,
  ops: AppOperations,
  work: AppWork,
  options: AppOptions,
  late: Late,
) {
  const { clock, ids, log, redactor } = base;
  const { bus, sessions, runs } = core;
  const recommendations = createRecommendationLedger({
    store: base.repository(
      (db) => createRecommendationRepository({ db, clock, ids }),
      (sql) => createPostgresRecommendationRepository({ sql, clock, ids }),
    ),
    clock,
  });
  base.closers.push(startRecommendationRecorder({ bus, clock, config: base.config, log }, recommendations));
  // After the recorder: a signal's recommendation is recorded once (followons.ts checks).
  const health = createHealthFollowons({
    activations: base.repository(createActivationStore, (sql) => createPostgresActivationStore({ sql })),
    bus,
    clock,
    ids,
    log,
    config: base.config,
    agent: work.agent,
    recommendations,
    sessionPublisher: () => base.runtime.sessionPublisher,
  });
  base.closers.push(() => health.close());
  // The cached codebase summary (describe_context) joins the prompt when there is one: one
  // indexed read, never a workspace walk.
  work.agent.addPromptSection(() => work.observe.promptSection());
  /** Tool policies of the session's operating pack (the funnel reads them). */
  const policyProviders: ((
    sessionId: string | undefined,
    start?: SessionStart,
  ) => ToolPolicy[] | Promise<ToolPolicy[]>)[] = [];
  const packs =
    options.packs === false
      ? undefined
      : createPackController({
          workspace: base.workspace,
          env: base.env,
          config: base.config,
          store: base.repository(createPackStore, (sql) => createPostgresPackStore({ sql })),
          dbPresent: base.dbPresent,
          sessions,
          bus,
          clock,
          log,
          redactor,
          pluginPackDirs: () => ops.plugins.packDirs(),
          spawner: work.spawner,
          toolNames: () => ({
            known: registry.gates().map((g) => g.tool.name),
            canonical: canonicalToolName,
            rejectedInAllowlist: isConfigAlias,
          }),
        });
  if (packs) {
    work.agent.addPromptSection((sessionId, start) => packs.promptSection(sessionId, start));
    policyProviders.push((sessionId, start) => packs.policies(sessionId, start));
    base.closers.push(() => packs.close());
  }
  const adaptive =
    options.adaptive === false
      ? undefined
      : createAdaptiveService({
          store: base.repository(createAdaptiveStore, (sql) => createPostgresAdaptiveStore({ sql })),
          // The PostgreSQL database always exists (migrated at start); svc.db may not yet.
          dbPresent: base.store.kind === 'postgres' ? () => true : base.dbPresent,
          bus,
          clock,
          ids,
          log,
          redactor,
          config: base.config,
          sessions,
          runs,
          agent: work.agent,
          packs,
          // Read when a reshape is checked, once the App is whole.
          toolFunnel: async (sessionId) => late.app().funnel(await late.app().funnelContext(sessionId)),
        });
  if (adaptive) {
    work.agent.addPromptSection((sessionId) => adaptive.promptSection(sessionId));
    base.closers.push(() => adaptive.close());
  }
  const registry = createToolRegistry(options.tools ?? allTools, () => ({ app: late.app() }));
  const mcpClients = createMcpClientManager({
    config: base.config,
    workspace: base.workspace,
    env: base.env,
    log,
    clock,
    fetch: base.fetch,
    tools: registry,
    authStore: options.mcpAuthStore ?? createFileAuthStore(join(globalConfigDir(base.env), 'mcp-auth.json')),
    onSecret: (value) => redactor.add(value),
  });
  base.closers.push(() => mcpClients.close());
  // MCP servers connect lazily: the first prompt assembly of a turn starts them (never blocking).
  work.agent.addPromptSection(() => {
    mcpClients.start();
    return undefined;
  });
  return { recommendations, health, packs, adaptive, registry, mcpClients, policyProviders };
}

export type AppOversight = ReturnType<typeof createOversight>;
