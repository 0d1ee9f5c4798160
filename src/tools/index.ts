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
import {
  config,
  configStatusTool,
  getConfig,
  getConfigFieldProvenance,
  getConfigStatusTool,
} from './config-tools';
import type { AnyTool } from './define-tool';
import {
  capabilities,
  getPrimitiveToolsStatus,
  getWorkflowToolsStatus,
  listToolCapabilities,
  runtimeFeaturesTool,
} from './inspect-tools';

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
  // providers
  getProviderStatus,
  getModelSelection,
  getProviderAuthWizard,
  listModelsTool,
] as AnyTool[];
