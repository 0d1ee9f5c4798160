/**
 * Every migration, in one list. Ids are numbered by area so branches do not collide:
 * 1–99 foundation, 100–199 providers, 200–299 agent core, 300–399 http/scheduler, 400–499 mcp,
 * 500–599 readouts I, 600–699 readouts II, 700–749 remote agents, deploy, plugins and contracts,
 * 750–799 quality (apply_patch log, edit capsules, finding lifecycle), 800–819 telemetry (the
 * model call cost ledger), 820–839 cluster (workspace leases, node heartbeats). Applied ids are tracked one
 * by one, so a migration merged late still runs. Forward-only: never edit a migration that has
 * shipped.
 * @module
 */
import { adaptiveMigrations } from './adaptive';
import { agentMigrations } from './agent';
import { clusterMigrations } from './cluster';
import { codingToolsMigrations } from './coding-tools';
import { foundationMigrations } from './foundation';
import { healthMigrations } from './health';
import { httpMigrations } from './http';
import { observeMigrations } from './observe';
import { packsMigrations } from './packs';
import { qualityMigrations } from './quality';
import { readoutMigrations } from './readouts';
import { remoteMigrations } from './remote';
import { sessionSearchMigrations } from './session-search';
import { telemetryMigrations } from './telemetry';
import type { Migration } from './types';
import { workflowMigrations } from './workflow';

export type { Migration } from './types';

export const migrations: readonly Migration[] = [
  ...foundationMigrations,
  ...sessionSearchMigrations,
  ...codingToolsMigrations,
  ...readoutMigrations,
  ...packsMigrations,
  ...adaptiveMigrations,
  ...agentMigrations,
  ...httpMigrations,
  ...observeMigrations,
  ...workflowMigrations,
  ...remoteMigrations,
  ...healthMigrations,
  ...qualityMigrations,
  ...telemetryMigrations,
  ...clusterMigrations,
];
