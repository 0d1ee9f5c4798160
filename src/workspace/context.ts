/**
 * What a workspace operation needs from its caller: who is acting (for history, read tracking,
 * guards and events), how to ask for approval, and how to report to the run ledger. Tools build
 * it from their ToolContext; the workspace never imports the tool layer.
 * @module
 */
import { SvcError } from '../errors';

export interface ApprovalRequest {
  /** What is being done, for the prompt: `edit src/a.ts`, `bash: npm test`. */
  title: string;
  /** Keys a session-wide grant (same tool + scope skips the prompt next time). */
  scope?: string;
  /** Analysis says the operation only reads: policy may skip the prompt. */
  safe?: boolean;
  /** What the operator must see: the diff of an edit, the command of a bash call. */
  details?: Record<string, unknown>;
  /**
   * Set when the operation cannot be verified before it runs (a bash write whose target is only
   * known at run time, with no OS sandbox to contain it): why. It is asked even where an allow
   * rule would skip the prompt, and refused under --yolo.
   */
  unverified?: string;
}

export interface OpContext {
  /** Native tool name doing the operation (history, guards, events). */
  tool: string;
  sessionId?: string;
  runId?: string;
  signal?: AbortSignal;
  /** Ask the operator; throws a `forbidden` SvcError on deny. Absent = approved (operator's own call). */
  approve?(request: ApprovalRequest): Promise<void>;
  /** Append an event to the current run's ledger (no-op outside a run). */
  event?(type: string, payload: Record<string, unknown>): void;
  /**
   * The call runs ahead of its step's first statement (this promise, `ToolContext.ahead`): a store
   * write of the operation (a read mark) waits for it, and fails with it.
   */
  ahead?: Promise<void>;
}

/** The shape of `app.mutationGuards` entries, restated so workspace/ does not import app.ts. */
export type MutationGuard = (request: {
  tool: string;
  sessionId?: string;
  paths: string[];
}) => void | Promise<void>;

export async function approve(ctx: OpContext, request: ApprovalRequest): Promise<void> {
  throwIfCancelled(ctx.signal);
  if (ctx.approve) await ctx.approve(request);
  throwIfCancelled(ctx.signal);
}

/** A cancelled operation is a `cancelled` SvcError, never an internal error. */
export function throwIfCancelled(signal: AbortSignal | undefined, what = 'the operation'): void {
  if (signal?.aborted) throw new SvcError('cancelled', `${what} was cancelled`, { cause: signal.reason });
}
