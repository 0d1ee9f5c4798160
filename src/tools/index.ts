/**
 * Every tool definition, one list. Each family file adds its tools here.
 * @module
 */

import { adaptiveTools } from './adaptive';
import { agentStatusTools } from './agent-status';
import { agentTools } from './agents';
import {
  checkpointCreate,
  checkpointDelete,
  checkpointGet,
  checkpointList,
  checkpointRestore,
  checkpointUndo,
  checkpointUpdate,
} from './checkpoints';
import {
  config,
  configStatusTool,
  getConfig,
  getConfigFieldProvenance,
  getConfigStatusTool,
} from './config-tools';
import { contractTools } from './contracts';
import { leaveMarker, workspaceClaim } from './coordination';
import type { AnyTool } from './core/define-tool';
import { registerGeneratedSchemas } from './core/input-schema';
import generatedSchemas from './core/input-schemas.generated.json';
import { diagnostics, lspStatus } from './diagnostics';
import { edit } from './edit';
import { glob, grep, ls, multiedit, view, write } from './files';
import { healthTools } from './health';
import {
  capabilities,
  getPrimitiveToolsStatus,
  getWorkflowToolsStatus,
  listToolCapabilities,
  runtimeFeaturesTool,
} from './inspect-tools';
import { lifecycleTools } from './lifecycle';
import { mcpStatus } from './mcp-status';
import { observeTools } from './observe';
import { packTools } from './packs';
import { permissionTools } from './permissions';
import { planningTools } from './planning';
import { pluginTools } from './plugins';
import { getModelSelection, getProviderAuthWizard, getProviderStatus, listModelsTool } from './providers';
import { qualityTools } from './quality';
import {
  getMultiplayerCoordinationDashboard,
  getMultiplayerTraceExport,
  operatorCognitionReadout,
  recommendations,
} from './readouts';
import { recipeTools } from './recipes';
import { remoteTools } from './remote';
import { runTools } from './runs';
import { schedulerTools } from './scheduler';
import { search } from './search';
import { listSessionEvents } from './session-events';
import { sessionTools } from './sessions';
import { bash, jobKill, jobOutput } from './shell';
import { todos } from './todos';
import { download, fetchTool } from './web';
import { workflowTools } from './workflow';

export const allTools: readonly AnyTool[] = [
  // config
  config,
  getConfig,
  getConfigFieldProvenance,
  configStatusTool,
  getConfigStatusTool,
  // inspect / status
  listToolCapabilities,
  capabilities,
  runtimeFeaturesTool,
  getWorkflowToolsStatus,
  getPrimitiveToolsStatus,
  // core coding tools
  view,
  write,
  edit,
  multiedit,
  ls,
  glob,
  grep,
  bash,
  jobOutput,
  jobKill,
  fetchTool,
  download,
  todos,
  diagnostics,
  lspStatus,
  // semantic
  search,
  // checkpoints
  checkpointCreate,
  checkpointList,
  checkpointGet,
  checkpointUpdate,
  checkpointRestore,
  checkpointDelete,
  checkpointUndo,
  // agent core: sessions, runs, planning, agent kinds and sub-agents, status readouts
  ...sessionTools,
  ...permissionTools,
  ...runTools,
  ...planningTools,
  ...agentTools,
  ...agentStatusTools,
  // coordination
  workspaceClaim,
  leaveMarker,
  // readouts
  getMultiplayerCoordinationDashboard,
  getMultiplayerTraceExport,
  operatorCognitionReadout,
  recommendations,
  // sessions (event buffer)
  listSessionEvents,
  // operating packs
  ...packTools,
  // adaptive orchestration
  ...adaptiveTools,
  // providers
  getProviderStatus,
  getModelSelection,
  getProviderAuthWizard,
  listModelsTool,
  // mcp client
  mcpStatus,
  // scheduler and process lifecycle
  ...schedulerTools,
  ...lifecycleTools,
  // observability and context readouts
  ...observeTools,
  // recipes and workflows
  ...recipeTools,
  ...workflowTools,
  // remote agents (A2A) and deployments
  ...remoteTools,
  // plugins
  ...pluginTools,
  // contracts and quality gates
  ...contractTools,
  // runtime health: incidents, loops, length recovery, compactions, alerts, enforcement, flow, sandbox
  ...healthTools,
  // quality: apply_patch status, edit capsules, finding lifecycle
  ...qualityTools,
] as AnyTool[];

// The built-in tools' JSON Schemas, generated ahead of time (core/input-schema.ts, `npm run docs`).
registerGeneratedSchemas(allTools, generatedSchemas);
