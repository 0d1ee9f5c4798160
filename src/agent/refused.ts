/**
 * A run that ended with a refused mutating call (issue 16 item 6): the model finished, but a
 * change it tried was not made (the operator denied it, nobody was there to answer, or the
 * command rules refused it). Surfaces report it instead of a plain success: `svc run` exits 3
 * and its JSON result carries `refused`; schedules record `refused` as the firing's status.
 * @module
 */
import type { RunEvent } from '../runs/types';

/** The refused call a finished run ended with: the tool and why. */
export interface RefusedCall {
  tool: string;
  /** `denied` (the operator said no), `unattended` (nobody to ask), or the rule that refused it. */
  reason: string;
  /** The classified failure: `tool_refused` or `sandbox_denied`. */
  code: string;
  summary: string;
  next: string;
}

/** Failure codes of a mutating call that was not made. */
export const REFUSAL_CODES: ReadonlySet<string> = new Set(['tool_refused', 'sandbox_denied']);
/** The most tool results of one run that are read for it (runs are bounded by max_steps). */
const SCAN_LIMIT = 10_000;

/**
 * The last refused call of the run that no later successful call of the same tool made good, or
 * null. Read from the run ledger's `tool.finished` events, so every reader of a run sees the same.
 * `ended`: the run just ended in this process: its events as this process appended them (all of
 * them, `takeAppended`) when the ledger has them, not read again.
 */
export async function refusedCall(
  runs: {
    events(runId: string, options?: { limit?: number; types?: string[] }): Promise<RunEvent[]>;
    takeAppended?(runId: string, type: string): RunEvent[] | undefined;
  },
  runId: string,
  ended = false,
): Promise<RefusedCall | null> {
  const appended = ended ? runs.takeAppended?.(runId, 'tool.finished') : undefined;
  const events =
    appended && appended.length <= SCAN_LIMIT
      ? appended
      : await runs.events(runId, { types: ['tool.finished'], limit: SCAN_LIMIT });
  let refused: RefusedCall | null = null;
  for (const event of events) {
    const p = event.payload as {
      tool?: string;
      is_error?: boolean;
      failure?: { code?: string; summary?: string; next?: string; details?: Record<string, unknown> };
    };
    const tool = String(p.tool ?? '');
    if (p.is_error && p.failure?.code && REFUSAL_CODES.has(p.failure.code)) {
      const reason = p.failure.details?.reason ?? p.failure.details?.message ?? p.failure.code;
      refused = {
        tool,
        reason: String(reason),
        code: p.failure.code,
        summary: String(p.failure.summary ?? ''),
        next: String(p.failure.next ?? ''),
      };
    } else if (!p.is_error && refused?.tool === tool) {
      refused = null;
    }
  }
  return refused;
}
