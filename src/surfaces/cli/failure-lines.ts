/**
 * The stderr lines of `svc run` when a run did not complete or a tool call was refused: what
 * failed (provider and model included), then the next step and where the details are. The same
 * classified failure (src/agent/failure.ts) every other surface shows.
 * @module
 */
import type { RunResult } from '../../agent/types';
import type { FailureReport } from '../../errors';

/** The lines for a run that ended other than completed; '' when it completed. */
export function runEndLines(
  result: Pick<RunResult, 'status' | 'error' | 'reason' | 'failure' | 'run_id'>,
): string {
  if (result.status === 'completed') return '';
  if (result.status === 'failed' && result.failure) {
    return (
      `svc: run failed: ${result.failure.summary}\n` +
      `svc: next: ${result.failure.next} (details: svc runs get ${result.run_id})\n`
    );
  }
  return `svc: run ${result.status}: ${result.error ?? result.reason ?? 'no reason recorded'}\n`;
}

/** The line for a refused tool call (tool.finished with a failure). */
export function toolRefusedLine(failure: FailureReport): string {
  return `svc: ${failure.summary}; next: ${failure.next}\n`;
}
