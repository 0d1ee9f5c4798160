/**
 * What the workflows domain needs from the tool world, declared here so the domain never imports
 * `src/tools/`: the catalog of tools (to check and narrow the tools a task asks for) and the tool
 * funnel (to compute a run's effective tools, the ceiling of its sub-agents). `createApp` passes
 * the registry and the funnel; a tool handler passes `ctx.app`, which has both.
 * @module
 */
import type { FunnelContext, FunnelEntry, ToolFacts } from '../permissions/tool-policy';

/** The tools svc defines (every gate result) and the ones registered. */
export interface ToolCatalog {
  gates(): readonly { tool: ToolFacts }[];
  registered(): readonly { name: string }[];
}

/** The tool funnel of a session. */
export interface ToolFunnel {
  funnel(context?: FunnelContext): FunnelEntry[];
  /** The funnel context of a session: its mode, phase, agent and policy layers. */
  funnelContext(sessionId?: string, overrides?: FunnelContext): Promise<FunnelContext>;
}
