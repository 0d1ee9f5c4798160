/**
 * A run's step calls (`model_calls` rows) held for its step end's statement (PostgreSQL, issue 18
 * item 6, p-pgfirst; src/telemetry/cost-ledger.ts `HeldCalls`). The row was an INSERT of its own
 * at the model's `finish`, a round trip right before the step end (or a tool's `tool.started`).
 * The run holds it from that `finish` and writes it:
 * - in its first tool's `tool.started` statement (`RunLedger.appendAnnounced`'s `riding`,
 *   ./tool-bridge.ts `takeCall`; p-pgride: the step's assistant message INSERT that carries that
 *   start, ./step-recorder.ts `startCall`), alone right after it when that did not write it: written before
 *   the tool runs, never held across a tool's run, so a crash can lose a billed call only in the
 *   moment it could before (between the part and its INSERT), and `[budget]` and `svc stats` see
 *   it before the tool runs, as before;
 * - else in the step end's statement (`RunLedger.updateAndAppendAfter`'s `riding`, ./end-step.ts),
 *   the whole step end one statement as before; alone after it when that statement failed;
 * - alone at the run's end when it is still held (a step that failed before its end).
 * SQLite, or a step end not in one statement: nothing is held (`hold` answers undefined).
 * @module
 */
import type { TrailingInsert } from '../store/preceding-write';
import type { HeldCalls } from '../telemetry/cost-ledger';
import type { AgentHost } from './deps';
import { stepEndJoined } from './step-close';

/** The run's held calls, where the step end is one statement that can carry them. */
export function holdCalls(app: AgentHost, runId: string): HeldCalls | undefined {
  return stepEndJoined(app) ? app.telemetry.ledger.hold(runId) : undefined;
}

/** Writes the held call alone; a failure is logged (as the call's sink logs its own), never thrown. */
export async function flushCalls(app: AgentHost, calls: HeldCalls | undefined): Promise<void> {
  const flushing = calls?.flush();
  if (flushing) await flushing.catch((error: unknown) => app.log.warn('cost ledger write failed', { error }));
}

/** The held call for another statement; `after()` writes it alone when that did not, logging a failure. */
export function takeCall(
  app: AgentHost,
  calls: HeldCalls | undefined,
): { insert: TrailingInsert; after(): Promise<void> } | undefined {
  const taken = calls?.take();
  if (!taken) return undefined;
  return {
    insert: taken.insert,
    after: () => taken.after().catch((error: unknown) => app.log.warn('cost ledger write failed', { error })),
  };
}

/** At the run's end: what is still held written alone, and nothing more held. */
export async function releaseCalls(app: AgentHost, calls: HeldCalls | undefined): Promise<void> {
  await calls?.release().catch((error: unknown) => app.log.warn('cost ledger write failed', { error }));
}
