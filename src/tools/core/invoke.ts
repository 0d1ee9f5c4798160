/**
 * Calling a tool: resolve aliases, validate the input with the tool's own schema, run it.
 * Every surface goes through here, so validation and alias handling happen once.
 * @module
 */
import type { z } from 'zod';
import { SvcError } from '../../errors';
import { CONFIG_TOOL_ALIASES } from './aliases';
import type { AnyTool, ToolContext } from './define-tool';
import type { ToolHost } from './types';

export type ToolCallContext = Partial<Omit<ToolContext, 'app'>> & Pick<ToolContext, 'surface'>;

export async function invokeTool(
  app: ToolHost,
  name: string,
  rawInput: unknown,
  context: ToolCallContext,
): Promise<unknown> {
  const tool = app.tools.require(name);
  const input = parseToolInput(tool, withAlias(name, rawInput));
  return tool.run(app.toolContext(context), input);
}

/** Old config tool names call `config` with their action filled in. */
export function withAlias(name: string, rawInput: unknown): unknown {
  const action = CONFIG_TOOL_ALIASES[name];
  if (!action) return rawInput;
  return { ...(typeof rawInput === 'object' && rawInput !== null ? rawInput : {}), action };
}

export function parseToolInput(tool: AnyTool, rawInput: unknown): unknown {
  const result = tool.input.safeParse(rawInput ?? {});
  if (!result.success) {
    throw new SvcError('invalid_input', `${tool.name}: ${formatIssues(result.error)}`, {
      details: { issues: result.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) },
    });
  }
  return result.data;
}

export function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.join('.');
      if (issue.code === 'unrecognized_keys') {
        return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`;
      }
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join('; ');
}
