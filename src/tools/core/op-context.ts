/**
 * The bridge from a tool call to a workspace operation: who acts, how to ask, where events go.
 * @module
 */
import type { OpContext } from '../../workspace/context';
import type { ToolContext } from './define-tool';

export function opContext(ctx: ToolContext, tool: string): OpContext {
  return {
    tool,
    sessionId: ctx.sessionId,
    runId: ctx.runId,
    signal: ctx.signal,
    approve: (request) => ctx.ask({ tool, ...request }),
    event: ctx.event ? (type, payload) => ctx.event?.(type, payload) : undefined,
    ...(ctx.ahead ? { ahead: ctx.ahead } : {}),
  };
}
