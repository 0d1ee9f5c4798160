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

/**
 * A tool definition as its module writes it: the input schema itself, or a function that builds
 * it. Built-in tools give the function (issue 17): building ~150 zod schemas was ~15 ms of every
 * `svc run` and nothing at start-up reads them (the JSON Schemas the model sees are generated
 * ahead of time, `input-schema.ts`), so a tool's schema is built on the first read of its `input`
 * (a call to validate, a CLI command's options, a test), once.
 */
export type ToolDefInit<I extends z.ZodType, O> = Omit<ToolDef<I, O>, 'input'> & { input: I | (() => I) };

export function defineTool<I extends z.ZodType, O>(def: ToolDefInit<I, O>): ToolDef<I, O> {
  const { input, ...rest } = def;
  if (typeof input !== 'function') return { ...rest, input };
  let schema: I | undefined;
  return {
    ...rest,
    get input(): I {
      schema ??= input();
      return schema;
    },
  };
}
