/**
 * The monitor's signals: what the runs of an evaluation window did, read from the durable run
 * ledger (so another process, or this one after a restart, reads the same window). Counts and
 * ratios only: never a prompt, a tool body or a model response.
 *
 * | signal                | evidence                                                         |
 * |-----------------------|------------------------------------------------------------------|
 * | `failed`              | runs that ended `failed` (provider errors, loop stops, step limit) |
 * | `loop_stops`          | `loop.detected` ledger events                                    |
 * | `tool_errors`         | `tool.finished` ledger events with `is_error`                    |
 * | `provider_errors`     | `error` ledger events from the provider                          |
 * | `provider_recoveries` | `provider_recovery.changed` (rate-limit recovery across providers) |
 * | `retries`             | runs that re-send the prompt of an earlier failed window run      |
 * | `peak_context_ratio`  | highest step usage / context window (the `context.usage` ratio)  |
 * | `review_rejections`   | reviewer passes that requested changes                           |
 * @module
 */
import { createHash } from 'node:crypto';
import type { AgentRun, RunLedger } from '../runs/run-ledger';

export interface WindowSignals {
  /** Ended runs in the window. */
  runs: number;
  /** Runs whose outcome says something about the genome (completed or failed). */
  attributable: number;
  failed: number;
  /** failed / attributable (0 when nothing is attributable). */
  failure_rate: number;
  loop_stops: number;
  tool_errors: number;
  provider_errors: number;
  provider_recoveries: number;
  retries: number;
  peak_context_ratio: number;
  review_rejections: number;
}

export const EMPTY_SIGNALS: WindowSignals = {
  runs: 0,
  attributable: 0,
  failed: 0,
  failure_rate: 0,
  loop_stops: 0,
  tool_errors: 0,
  provider_errors: 0,
  provider_recoveries: 0,
  retries: 0,
  peak_context_ratio: 0,
  review_rejections: 0,
};

const LEDGER_TYPES = [
  'loop.detected',
  'tool.finished',
  'error',
  'provider_recovery.changed',
  'model.resolved',
  'step.finished',
];

export async function windowSignals(
  runs: Pick<RunLedger, 'get' | 'events'>,
  runIds: readonly string[],
  reviewRejections: number,
): Promise<WindowSignals> {
  const signals: WindowSignals = { ...EMPTY_SIGNALS, review_rejections: reviewRejections };
  const failedPrompts = new Set<string>();
  const rows = (await Promise.all(runIds.map((id) => runs.get(id)))).filter(
    (r): r is AgentRun => r !== undefined && r.status !== 'queued' && r.status !== 'running',
  );
  for (const run of rows) {
    signals.runs++;
    const digest = createHash('sha256').update(run.prompt.trim()).digest('hex');
    if (failedPrompts.has(digest)) signals.retries++;
    if (run.status === 'completed' || run.status === 'failed') signals.attributable++;
    if (run.status === 'failed') {
      signals.failed++;
      failedPrompts.add(digest);
    }
    let window = 0;
    for (const event of await runs.events(run.id, { types: LEDGER_TYPES, limit: 10_000 })) {
      const p = event.payload;
      switch (event.type) {
        case 'loop.detected':
          signals.loop_stops++;
          break;
        case 'tool.finished':
          if (p.is_error === true) signals.tool_errors++;
          break;
        case 'error':
          if (p.source === 'provider') signals.provider_errors++;
          break;
        case 'provider_recovery.changed':
          signals.provider_recoveries++;
          break;
        case 'model.resolved':
          window = typeof p.context_window === 'number' ? p.context_window : 0;
          break;
        case 'step.finished': {
          const usage = p.usage as { input_tokens?: number; output_tokens?: number } | null;
          if (usage && window > 0) {
            const ratio = ((usage.input_tokens ?? 0) + (usage.output_tokens ?? 0)) / window;
            signals.peak_context_ratio = Math.max(signals.peak_context_ratio, round(ratio));
          }
          break;
        }
      }
    }
  }
  signals.failure_rate = signals.attributable ? round(signals.failed / signals.attributable) : 0;
  return signals;
}

const round = (n: number) => Math.round(n * 10_000) / 10_000;
