/**
 * A tool is defined once and served everywhere: the agent gets it through the funnel, the HTTP
 * adapter mounts its `http` binding, the MCP server lists its `mcp` binding, the CLI adds its
 * `cli` command. Route-specific rules live in the binding options, never in a second handler.
 * The types are in `types.ts` (one file, so they may refer to each other without a cycle).
 * @module
 */
import type { z } from 'zod';
import type { ToolDef } from './types';

export type {
  AnyTool,
  CliBinding,
  GateEnv,
  HttpBinding,
  PermissionRequest,
  Surface,
  ToolContext,
  ToolDef,
  ToolHost,
  ToolSurfaces,
  ToolTag,
} from './types';

export function defineTool<I extends z.ZodType, O>(def: ToolDef<I, O>): ToolDef<I, O> {
  return def;
}
