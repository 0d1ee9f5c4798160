/**
 * Every tool definition, one list. Each family file adds its tools here.
 * @module
 */

import {
  getModelSelection,
  getProviderAuthWizard,
  getProviderStatus,
  listModelsTool,
} from '../providers/tools';
import { mcpStatus } from '../surfaces/mcp/client/status-tool';
import {
  config,
  configStatusTool,
  getConfig,
  getConfigFieldProvenance,
  getConfigStatusTool,
} from './config-tools';
import { leaveMarker, workspaceClaim } from './coordination';
import type { AnyTool } from './define-tool';
import {
  capabilities,
  getPrimitiveToolsStatus,
  getWorkflowToolsStatus,
  listToolCapabilities,
  runtimeFeaturesTool,
} from './inspect-tools';
import { packTools } from './packs';
import { getMultiplayerCoordinationDashboard, operatorCognitionReadout, recommendations } from './readouts';
import { listSessionEvents } from './session-events';

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
  // coordination
  workspaceClaim,
  leaveMarker,
  // readouts
  getMultiplayerCoordinationDashboard,
  operatorCognitionReadout,
  recommendations,
  // sessions (event buffer)
  listSessionEvents,
  // operating packs
  ...packTools,
  // providers
  getProviderStatus,
  getModelSelection,
  getProviderAuthWizard,
  listModelsTool,
  // mcp client
  mcpStatus,
] as AnyTool[];
