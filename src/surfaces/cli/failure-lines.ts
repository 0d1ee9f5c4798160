/**
 * The stderr lines of `svc run` when a run did not complete or a tool call was refused: what
 * failed (provider and model included), then the next step and where the details are. The same
 * classified failure (src/agent/failure.ts) every other surface shows.
 * @module
 */
import type { RunResult } from '../../agent/types';
import type { FailureReport } from '../../errors';

/** `svc run`'s exit codes (docs/cli.md, "Exit codes"). */
export const RUN_EXIT = { completed: 0, failed: 1, usage: 2, refused: 3 } as const;

/** 0 completed, 1 failed or cancelled (a limit included), 3 completed with a refused change. */
export function runExitCode(result: Pick<RunResult, 'status' | 'refused'>): number {
  if (result.status !== 'completed') return RUN_EXIT.failed;
  return result.refused ? RUN_EXIT.refused : RUN_EXIT.completed;
}

/** The lines for a run that did not simply complete; '' when it did. */
export function runEndLines(
  result: Pick<RunResult, 'status' | 'error' | 'reason' | 'failure' | 'run_id' | 'refused'>,
): string {
  if (result.status === 'completed') {
    if (!result.refused) return '';
    return (
      `svc: run refused: ${result.refused.summary}; the change was not made\n` +
      `svc: next: ${result.refused.next} (details: svc runs get ${result.run_id})\n`
    );
  }
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
